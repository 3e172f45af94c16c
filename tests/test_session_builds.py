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


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_files_share_a_unit_only_where_alone_they_give_the_same_outcome(tmp_path: Path) -> None:
    """Compile checks put files in one unit, each in a namespace of its own, only where nothing a namespace changes
    could turn an error alone into a pass: a name or macro a header declares (fmaxf, float4, a macro of the
    headers), braces or #if that another file could balance, a pragma that could reach the next file, extern "C",
    main, #undef. A failing unit proves nothing: its files are compiled alone and the failure is the file's own."""
    from session_builds import _batch_form, _batches

    nvcc = shutil.which("nvcc")
    assert nvcc is not None
    flags = ["-c", "-arch=sm_90"]
    body = "__global__ void k{i}(float* a) {{ a[0] = 1.0f; }}\n"
    plain = {f"ok{i}": body.format(i=i) for i in range(3)}
    plain["ok2"] = "#define ROWS 4\n" + body.format(i=2).replace("{ a[0]", "{\n#pragma unroll\n for (int r = 0; r < ROWS; ++r) a[r]")
    unsure = {
        "shadows_fmaxf": "__device__ float fmaxf(float a, float b) { return a; }\n" + body.format(i=9),
        "own_float4": "struct float4 { float x; };\n" + body.format(i=9),
        "header_macro": "#define CUDART_VERSION 1\n" + body.format(i=9),
        "opens_a_brace": body.format(i=9) + "void f() {\n",
        "closes_a_brace": "}\n" + body.format(i=9),
        "opens_an_if": "#if 1\n" + body.format(i=9),
        "c_linkage": 'extern "C" ' + body.format(i=9),
        "a_main": body.format(i=9) + "int main() { return 0; }\n",
        "undef": "#undef X\n" + body.format(i=9),
        "include_late": body.format(i=9) + "#include <cstdio>\n",
        "a_pragma": "#pragma nv_diag_suppress 177\n" + body.format(i=9),
    }
    files = {}
    for name, text in {**plain, **unsure}.items():
        files[name] = tmp_path / f"{name}.cu"
        files[name].write_text(text)
    groups, alone = _batches(nvcc, flags, list(files.values()), 300)
    assert [sorted(f.name for f, _, _ in g) for _, g in groups] == [sorted(f"{n}.cu" for n in plain)]
    assert sorted(f.name for f in alone) == sorted(f"{n}.cu" for n in unsure)
    assert _batch_form(files["ok0"], flags) is not None and _batch_form(files["undef"], flags) is None
    # a broken file among good ones: the unit fails, the file alone gives nvcc's own error, named by its file
    out = tmp_path / "out"
    out.mkdir()
    broken = tmp_path / "broken.cu"
    broken.write_text(body.format(i=7).replace("1.0f", "undeclared_name"))
    proc = nvcc_checks(nvcc, flags, [files["ok0"], broken, files["ok1"]], out, 300)
    assert proc.returncode != 0 and "broken.cu" in proc.stderr and "undeclared_name" in proc.stderr, proc.stderr
    assert nvcc_checks(nvcc, flags, [files["ok0"], files["ok1"], files["ok2"]], out, 300).returncode == 0
