"""Issue 30, results lost: `extract --force -o M` while `s2s optimize M` runs deleted its history and lock, and four
concurrent `extract -o SAME` each reported success and left a mix of their files. Extract now takes the MEP's lock;
a read-only MEP is named as such."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from safety_util import cli_inproc, copy_sample, fingerprint, one_line_exit_2

from s2s.base.meplock import LOCK, mep_lock
from s2s.extract.mep_writer import make_mep


def _files(d: Path) -> dict[str, str]:
    return {p.relative_to(d).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(d.rglob("*")) if p.is_file() and p.name != LOCK}


def test_extract_force_onto_an_mep_being_optimized_is_refused(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    tree = copy_sample(tmp_path / "app")
    mep = tmp_path / "mep"
    make_mep(str(tree), "matmul", str(mep))
    (mep / "history.sqlite").write_bytes(b"the optimize run's history")
    with mep_lock(mep, what="s2s optimize"):
        before = fingerprint(mep)
        rc, _o, err = cli_inproc(["extract", str(tree), "--kernel", "jacobi2d", "-o", str(mep), "--force"], capsys)
        one_line_exit_2(rc, err)
        assert "another s2s optimize is running on this MEP" in err and f"pid {os.getpid()}" in err, err
        assert fingerprint(mep) == before


@pytest.mark.slow
def test_concurrent_extracts_to_one_directory_leave_one_whole_mep(tmp_path: Path) -> None:
    tree = copy_sample(tmp_path / "app")
    kernels = ["matmul", "matvec", "jacobi2d", "residual_norm"]
    refs = {}
    for k in kernels:  # each kernel's MEP, made alone
        make_mep(str(tree), k, str(tmp_path / f"ref-{k}"))
        refs[k] = _files(tmp_path / f"ref-{k}")
    out = tmp_path / "same"
    procs = [subprocess.Popen([sys.executable, "-m", "s2s", "extract", str(tree), "--kernel", k, "-o", str(out), "--force"],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for k in kernels]
    results = [(k, *p.communicate(timeout=300), p.returncode) for k, p in zip(kernels, procs)]
    ok = [k for k, _o, _e, rc in results if rc == 0]
    assert ok, results
    for _k, _o, err, rc in results:
        assert rc in (0, 2) and "Traceback" not in err, err
        if rc == 2:
            one_line_exit_2(rc, err)
            assert "running on this MEP" in err
    have = _files(out)
    assert any(have == refs[k] for k in ok), "a mixed MEP"


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("make") is None, reason="make and a C compiler are needed")
@pytest.mark.parametrize("how", ["--into", "-o"])
def test_capture_into_an_mep_being_optimized_is_refused(tmp_path: Path, how: str, capsys) -> None:  # type: ignore[no-untyped-def]
    """capture -o M removed M/capture and copied over it, --into M swapped M's data and manifest, while optimize M ran
    on them; two captures into one MEP removed each other's staging. Capture writes holding the MEP's lock."""
    pytest.importorskip("pyopencl")
    tree = copy_sample(tmp_path / "app")
    mep = tmp_path / "mep"
    make_mep(str(tree), "matvec", str(mep))
    (mep / "history.sqlite").write_bytes(b"the optimize run's history")
    with mep_lock(mep, what="s2s optimize"):
        before = fingerprint(mep)
        rc, _o, err = cli_inproc(["capture", str(tree), "--kernel", "matvec", "--build-cmd", "make", "--run-cmd",
                                  "./ocl_solver -k kernels", how, str(mep)], capsys)
        assert rc == 2 and "Traceback" not in err, err
        assert "another s2s optimize is running on this MEP" in err, err
        assert fingerprint(mep) == before
