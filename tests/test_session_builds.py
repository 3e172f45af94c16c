"""The build products tests share within a session (tests/session_builds.py): a compile check is skipped only for the
same bytes, headers and flags as one that passed; a failure is reported and checked again; the precompiled header of
the threaded emulators gives the same program."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from session_builds import ENV, THREADED_FLAGS, check_key, compile_threaded, nvcc_checks

KERNEL = '#include "k.h"\n__global__ void k(float* a) { a[0] = K; }\n'


def _tree(root: Path, header: str) -> Path:
    root.mkdir(parents=True)
    (root / "k.h").write_text(header)
    (root / "k.cu").write_text(KERNEL)
    return root / "k.cu"


def test_the_key_is_the_bytes_headers_and_flags_not_the_place(tmp_path: Path) -> None:
    a, b = _tree(tmp_path / "a", "#define K 1\n"), _tree(tmp_path / "b", "#define K 1\n")
    flags = ["-c", "-arch=sm_90"]
    assert check_key(flags, a) == check_key(flags, b)  # the same file and header in another test's directory
    assert check_key(flags, _tree(tmp_path / "c", "#define K 2\n")) != check_key(flags, a)  # its header differs
    assert check_key([*flags, "-O3"], a) != check_key(flags, a)
    unused = tmp_path / "unused"
    unused.mkdir()
    (unused / "other.h").write_text("")
    assert check_key([*flags, "-I", str(unused)], a) == check_key(flags, a)  # holds nothing the file includes
    used = tmp_path / "used"
    used.mkdir()
    (used / "k.h").write_text("#define K 3\n")
    assert check_key([*flags, f"-I{used}"], a) != check_key(flags, a)  # could change what `k.h` is
    for d in (a, b):
        d.write_text("#include HEADER\n" + KERNEL)
    assert check_key([*flags, "-DHEADER=<k.h>"], a) != check_key([*flags, "-DHEADER=<k.h>"], b)  # not followed: kept apart


def test_a_passed_check_is_not_repeated_and_a_failed_one_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    monkeypatch.setenv(ENV, str(shared))
    calls = tmp_path / "calls"
    fake = tmp_path / "fake-nvcc"  # records the files it was given; fails on a file that says BAD
    fake.write_text(f"#!/bin/sh\nfor a in \"$@\"; do case $a in *.cu) echo $a >> {calls}; grep -q BAD $a && exit 1;; esac; done\n"
                    "exit 0\n")
    fake.chmod(0o755)
    one, same = _tree(tmp_path / "one", "#define K 1\n"), _tree(tmp_path / "same", "#define K 1\n")
    other = _tree(tmp_path / "other", "#define K 2\n")
    assert nvcc_checks(str(fake), ["-c"], [one, same, other], tmp_path, 60).returncode == 0
    assert calls.read_text().split() == [str(one), str(other)]  # the copy with the same bytes once
    calls.unlink()
    assert nvcc_checks(str(fake), ["-c"], [same], tmp_path, 60).returncode == 0
    assert not calls.exists()  # checked earlier in the session
    bad = _tree(tmp_path / "bad", "#define K 1\n")
    bad.write_text(KERNEL + "BAD\n")
    for _ in range(2):
        assert nvcc_checks(str(fake), ["-c"], [bad], tmp_path, 60).returncode == 1
    assert calls.read_text().split() == [str(bad), str(bad)]  # a failure is never taken as checked
    monkeypatch.delenv(ENV)
    calls.unlink()
    assert nvcc_checks(str(fake), ["-c"], [same], tmp_path, 60).returncode == 0
    assert calls.read_text().split() == [str(same)]  # no session: every check runs


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
