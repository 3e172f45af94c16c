"""Issue 30: a garbage --compile-commands was silently ignored (scan) or ended in a traceback (a command that does
not split, arguments given as a string). Each is one line naming the file, exit 2."""
from __future__ import annotations

from pathlib import Path

import pytest
from safety_util import cli_inproc, copy_sample, fingerprint, one_line_exit_2

GARBAGE = {
    "not JSON": b"\x00\x01 garbage {",
    "an object": b'{"file": "a.cl"}',
    "an entry without a command": b'[{"file": "kernels/linalg.cl"}]',
    "a file that is a number": b'[{"file": 3, "command": "cc -c x.c"}]',
    "a command that does not split": b'[{"file": "kernels/linalg.cl", "command": "cc \'-DX=unbalanced"}]',
    "arguments as a string": b'[{"file": "kernels/linalg.cl", "arguments": "cc -c"}]',
    "a directory that is a list": b'[{"file": "kernels/linalg.cl", "directory": [], "command": "cc"}]',
}


@pytest.mark.parametrize("cmd", ["scan", "extract"])
@pytest.mark.parametrize("what", list(GARBAGE))
def test_a_garbage_compile_commands_is_refused_in_one_line(tmp_path: Path, cmd: str, what: str, capsys) -> None:  # type: ignore[no-untyped-def]
    tree = copy_sample(tmp_path / "app")
    db = tmp_path / "garbage.json"
    db.write_bytes(GARBAGE[what])
    before = fingerprint(tree)
    extra = ["--kernel", "matmul", "-o", str(tmp_path / "mep")] if cmd == "extract" else ["--no-cache"]
    rc, _o, err = cli_inproc([cmd, str(tree), "--compile-commands", str(db), *extra], capsys)
    one_line_exit_2(rc, err)
    assert "garbage.json" in err, err
    assert fingerprint(tree) == before
