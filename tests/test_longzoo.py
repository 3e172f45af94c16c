"""bench/longzoo/matmul_chain, our own application whose hot kernel takes a second or more a launch on an H200 (issue
26's Done-when, bench/gpu_long_kernel.sh): it builds with nvcc through its Makefile (ARCH passed on), `s2s scan` finds
its four kernels and five launch sites (the product and the rescale inside the host loop), and the profile-instrumented
copy that capture-first `auto` builds first compiles too, and each kernel extracts into a file that compiles alone.
The runs themselves need the GPU."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, needs_nvcc, run_cli

from s2s.capture.profile import instrument_all
from s2s.scan.tree import scan_tree

APP = ROOT / "bench" / "longzoo" / "matmul_chain"


@pytest.fixture
def app(tmp_path: Path) -> Path:
    dest = tmp_path / "matmul_chain"
    shutil.copytree(APP, dest, ignore=shutil.ignore_patterns("matmul_chain"))
    return dest


def test_scan_finds_the_kernels_and_launch_sites() -> None:
    index = scan_tree(APP)
    assert sorted(k.name for k in index.kernels) == ["fill_uniform", "matmul", "rescale", "row_abs_sums"]
    sites = [(s.kernel, s.in_loop) for s in index.launches]
    assert sorted(sites) == [("fill_uniform", False), ("fill_uniform", False), ("matmul", True), ("rescale", True),
                             ("row_abs_sums", False)]
    assert all(s.kind == "chevron" and s.enclosing_function == "main" for s in index.launches)


def test_makefile_takes_arch() -> None:
    proc = subprocess.run(["make", "-n", "-C", str(APP), "ARCH=sm_80"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "-arch=sm_80" in proc.stdout, proc.stdout + proc.stderr
    default = subprocess.run(["make", "-n", "-C", str(APP)], capture_output=True, text=True, timeout=60)
    assert "-arch=sm_90" in default.stdout, default.stdout


@needs_nvcc
def test_builds_with_nvcc(app: Path) -> None:
    proc = subprocess.run(["make", "ARCH=sm_90"], cwd=app, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert (app / "matmul_chain").is_file()


@pytest.mark.slow
@needs_nvcc
def test_profile_instrumented_copy_builds(app: Path, tmp_path: Path) -> None:
    index = scan_tree(app)
    root, sites, _notes, backend = instrument_all(app, tmp_path / "work", list(index.launches),
                                                  {k.name for k in index.kernels})
    assert backend == "cuda" and len(sites) == 5
    assert 's2s_prof::begin("matmul", ' in (root / "matmul_chain.cu").read_text()
    proc = subprocess.run(["make", "ARCH=sm_90"], cwd=root, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert not (app / "matmul_chain").exists(), "instrumenting wrote into the application's tree"


@pytest.mark.slow
@needs_nvcc
def test_each_kernel_extracts_and_compiles_alone(tmp_path: Path) -> None:
    """What auto's capture builds on: every kernel's file, the fill's host-and-device hash function with it."""
    for name in ("matmul", "fill_uniform", "rescale", "row_abs_sums"):
        mep = tmp_path / name
        proc = run_cli("extract", str(APP), "--kernel", name, "-o", str(mep))
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
        if name == "fill_uniform":
            assert "hash_uniform" in (mep / "kernel.cu").read_text()
        cc = subprocess.run(["nvcc", "-arch=sm_90", "-c", str(mep / "kernel.cu"), "-o", str(tmp_path / f"{name}.o")],
                            capture_output=True, text=True, timeout=600)
        assert cc.returncode == 0, f"{name}: {cc.stderr[-2000:]}"
