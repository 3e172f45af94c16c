"""The build products tests share within a session (tests/session_builds.py): the precompiled header of the threaded
emulators gives the same program."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from session_builds import ENV, THREADED_FLAGS, compile_threaded


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_the_precompiled_headers_give_the_same_program(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = "#include <cstdio>\n#include <vector>\nint main() { std::vector<int> v(3, 2); printf(\"%d\\n\", v[0] + v[2]); }\n"
    gxx = shutil.which("g++")
    assert gxx is not None
    outputs = []
    for shared in (tmp_path / "shared", None):
        if shared is not None:
            shared.mkdir()
            monkeypatch.setenv(ENV, str(shared))
        else:
            monkeypatch.delenv(ENV)
        src, exe = tmp_path / f"p{len(outputs)}.cpp", tmp_path / f"p{len(outputs)}"
        assert compile_threaded(gxx, src, text, exe).returncode == 0
        outputs.append(subprocess.run([str(exe)], capture_output=True, text=True).stdout)
        if shared is not None:
            assert src.read_text().startswith('#include "') and list(shared.glob("pch-*/headers.h.gch"))
    assert outputs == ["4\n", "4\n"] and THREADED_FLAGS[0] == "-O1"
