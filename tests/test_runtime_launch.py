"""Launches through the CUDA runtime API (`cudaLaunchKernel((const void*)k, grid, block, args, shmem, stream)`,
cooperative and HIP spellings), `args` an array of pointers to the kernel's arguments: the scan found them, but the
profile and the capture instrumented chevrons and hipLaunchKernelGGL only, so such an application's hot kernels were
never timed or captured. Now both time and capture them, the capture reading the arguments behind the array as the
kernel's parameter types. tests/fixtures/runtime_launch is ours: one launch inside an error-checking macro in a loop,
one cooperative launch of a kernel template through reinterpret_cast. The copies build with nvcc here; the GPU test
profiles, captures and replays them."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, needs_gpu, needs_nvcc, run_cli

from s2s.capture.instrument import instrument_kernels
from s2s.capture.profile import instrument_all
from s2s.extract.mep_writer import make_mep
from s2s.scan.tree import scan_tree

APP = ROOT / "tests" / "fixtures" / "runtime_launch"


def _make(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["make"], cwd=root, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
@needs_nvcc
def test_profile_and_capture_instrument_runtime_api_launches_and_the_copies_build(tmp_path: Path) -> None:
    index = scan_tree(APP)
    root, sites, notes, backend = instrument_all(APP, tmp_path / "prof", list(index.launches), {k.name for k in index.kernels})
    assert backend == "cuda" and sites == ["app.cu:42", "app.cu:44"] and not any("not timed" in n for n in notes), notes
    text = (root / "app.cu").read_text()
    assert 's2s_prof::begin("saxpy", "app.cu:42", (cudaStream_t)(0));' in text
    assert 's2s_prof::begin("row_sums", "app.cu:44", (cudaStream_t)(nullptr));' in text
    proc = _make(root)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]

    kernels = []
    for name in ("saxpy", "row_sums"):
        _out, m, ex = make_mep(str(APP), name, str(tmp_path / f"mep-{name}"))
        kernels.append((m, list(ex.launches)))
    ins = instrument_kernels(APP, tmp_path / "cap", kernels)
    assert not ins.errors and ins.sites == ["app.cu:42", "app.cu:44"], ins.errors
    text = (ins.root / "app.cu").read_text()
    assert ('s2s_capture::before_array(&saxpy, "app.cu:42", dim3(dim3((n + 255) / 256)), dim3(dim3(256)), (size_t)(0), '
            "(cudaStream_t)(0), (void**)(args));") in text
    assert 's2s_capture::before_array<1>(&row_sums<128>, "app.cu:44"' in text and "(void**)(rargs));" in text
    proc = _make(ins.root)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]


@pytest.mark.gpu
@needs_gpu
@needs_nvcc
def test_runtime_api_launches_are_profiled_captured_and_replayed(tmp_path: Path) -> None:
    app = tmp_path / "app"
    shutil.copytree(APP, app)
    work = tmp_path / "work"
    proc = run_cli("auto", str(app), "--build-cmd", "make", "--run-cmd", "./app", "--top", "2", "--max-evals", "2",
                   "--runs", "2", "--work", str(work), "--diff", str(tmp_path / "d.diff"))
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads((work / "auto-report.json").read_text())
    assert {k["kernel"] for k in report["profile"]} >= {"saxpy", "row_sums"}, report["profile"]
    rows = {r["kernel"]: r for r in report["kernels"]}
    for name in ("saxpy", "row_sums"):
        assert rows[name].get("replays_capture") is True, rows[name]
        assert not str(rows[name].get("status", "")).startswith(("capture failed", "optimize failed")), rows[name]
