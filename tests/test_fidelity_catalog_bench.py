"""bench/fidelity_catalog.py, the differential test on the development catalogue (issue 29), on a two-kernel application
of our own laid out as the catalogue lays applications out: the CPU part's counts (kernels launched from built files
only, extracted, compiled alone, runnable, compile-time sized), the summary's keys and totals, a held-out name never
examined, and the capture mode recording a failed run per kernel as "not captured: <reason>" (no GPU here)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import needs_nvcc

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench" / "apps"))
import split  # noqa: E402

APP, HELD = "twokernels-cuda", "duo-cuda"  # the first is development corpus by the split rule, the second held out

KERNELS = """#pragma once
__global__ void fill(float* a, float v, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] = v; }
__global__ void axpy(float* y, const float* x, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += s * x[i];
}
"""
MAIN = """#include <cstdio>
#include <cuda_runtime.h>
#include "kernels.cuh"
#define N 4096
#define BS 128
__global__ void never_launched(float* a) { a[0] = 1.0f; }
int main() {
  float *x, *y;
  if (cudaMalloc((void**)&x, N * sizeof(float)) != cudaSuccess) { std::printf("no device\\n"); return 1; }
  cudaMalloc((void**)&y, N * sizeof(float));
  cudaMemset(y, 0, N * sizeof(float));
  fill<<<N / BS, BS>>>(x, 2.0f, N);
  axpy<<<N / BS, BS>>>(y, x, 0.5f, N);
  float h = 0.0f;
  cudaMemcpy(&h, y, sizeof(float), cudaMemcpyDeviceToHost);
  std::printf("%f\\n", h);
  return 0;
}
"""
OLD = """__global__ void legacy(float* a, int n) { int i = threadIdx.x; if (i < n) a[i] = 0.0f; }
__global__ void fill(float* a, float v, int n) { if (threadIdx.x < n) a[threadIdx.x] = v; }  // a namesake, not built
int old_main() { float* a = 0; legacy<<<1, 32>>>(a, 32); fill<<<1, 32>>>(a, 1.0f, 32); return 0; }
"""
MAKEFILE = "main: main.o\n\tnvcc -arch=$(ARCH) -o main main.o\nmain.o: main.cu kernels.cuh\n\tnvcc -arch=$(ARCH) -c main.cu -o main.o\n"


def _lay_out(tmp: Path) -> tuple[Path, Path]:
    apps = tmp / "apps"
    for name in (APP, HELD):
        d = apps / name / "src" / name
        d.mkdir(parents=True)
        (d / "main.cu").write_text(MAIN)
        (d / "kernels.cuh").write_text(KERNELS)
        (d / "old.cu").write_text(OLD)  # never built: its launch does not count
        (d / "Makefile").write_text(MAKEFILE)
    catalog = tmp / "catalog.toml"
    catalog.write_text("".join(
        f'[[app]]\nname = "{n}"\nsuite = "ours"\nlabel = "development corpus"\nrepo = "x/y"\ncommit = "0"\n'
        f'dir = "src/{n}"\nextra = []\ndialect = "cuda"\nbuild = "make -C src/{n} ARCH=sm_90"\n'
        f'run = "cd src/{n} && ./main"\nrun_seconds = 0.5\n\n' for n in (APP, HELD)))
    return apps, catalog


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, str(ROOT / "bench" / "fidelity_catalog.py"), *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=300)


def _consistent(s: dict) -> None:  # type: ignore[type-arg]
    from fidelity_catalog import SUMMARY_KEYS

    assert set(SUMMARY_KEYS) <= set(s), set(SUMMARY_KEYS) - set(s)
    assert s["label"] == "development corpus"
    assert s["kernels_found"] >= s["kernels_examined"] >= s["extracted"] >= s["compile_alone"] >= s["runnable_no_edits"]
    assert s["compile_time_sized"] >= s["compile_time_sized_runnable"]


def test_split_names() -> None:
    assert split.label(APP) == "development corpus" and split.label(HELD) == "held-out split"


@needs_nvcc
@pytest.mark.slow
def test_cpu_part_counts_and_summary(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    apps, catalog = _lay_out(tmp_path)
    out = tmp_path / "out"
    res = _bench("--apps-dir", str(apps), "--catalog", str(catalog), "--out", str(out), "--apps", f"{APP},{HELD}")
    assert res.returncode == 0, res.stderr[-2000:]
    s = json.loads((out / "fidelity_summary.json").read_text())
    _consistent(s)
    assert s["applications"] == 1  # the held-out name is never examined, even when named and mislabelled
    assert (s["kernels_found"], s["extracted"], s["compile_alone"]) == (2, 2, 2), s
    assert s["runnable_no_edits"] == 2 and s["compile_time_sized"] == 2 and s["compile_time_sized_runnable"] == 2, s
    assert s["kernels_compared"] is None and s["values_wrong"] is None  # not measured without the capture
    doc = json.loads((out / "fidelity_catalog.json").read_text())
    assert sorted(doc["static"][0]["found"]) == [f"src/{APP}/kernels.cuh:axpy@3", f"src/{APP}/kernels.cuh:fill@2"]
    md = (out / "fidelity_summary.md").read_text()
    assert "development corpus" in md and s["commit"] in md


@needs_nvcc
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="checks the record of a run that fails without a GPU")
def test_capture_mode_records_a_failed_run_per_kernel(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    apps, catalog = _lay_out(tmp_path)
    out = tmp_path / "gpu"
    static = tmp_path / "none.json"
    static.write_text(json.dumps({"commit": "x", "static": []}))
    res = _bench("--capture", "--apps-dir", str(apps), "--catalog", str(catalog), "--out", str(out), "--apps", APP,
                 "--deadline", "200", "--static", str(static))
    assert res.returncode == 0, res.stderr[-2000:]
    doc = json.loads((out / "fidelity_catalog.json").read_text())
    (row,) = doc["captured"]
    assert [k["kernel"] for k in row["kernels"]] == [f"src/{APP}/kernels.cuh:fill@2", f"src/{APP}/kernels.cuh:axpy@3"]
    for k in row["kernels"]:
        assert k["captured"] is False and k["why"].startswith("not captured: ") and "no device" in k["why"], k
    s = json.loads((out / "fidelity_summary.json").read_text())
    assert s["kernels_compared"] == 0 and s["kernels_tried"] == 2 and s["values_wrong"] == 0
    assert "Traceback" not in (out / "apps" / f"{APP}.log").read_text()


@needs_nvcc
@pytest.mark.slow
def test_held_out_split_is_reported_apart(tmp_path: Path) -> None:
    apps, catalog = _lay_out(tmp_path)
    out = tmp_path / "held"
    res = _bench("--held-out", "--apps-dir", str(apps), "--catalog", str(catalog), "--out", str(out), "--no-build")
    assert res.returncode == 0, res.stderr[-2000:]
    s = json.loads((out / "fidelity_summary.json").read_text())
    assert s["label"] == "held-out split" and s["applications"] == 1 and s["kernels_found"] == 2, s
    doc = json.loads((out / "fidelity_catalog.json").read_text())
    assert [a["name"] for a in doc["static"]] == [HELD] and doc["static"][0]["label"] == "held-out split"
    md = (out / "fidelity_summary.md").read_text()
    assert "held-out split" in md and "development corpus" not in md and "Not extracted" not in md
    both = tmp_path / "both"  # --collect over a held-out run keeps the development rows out, and the other way round
    res = _bench("--collect", str(out), "--out", str(both))
    assert res.returncode == 0, res.stderr[-2000:]
    assert json.loads((both / "fidelity_summary.json").read_text())["applications"] == 0


def test_capture_timeout_leaves_time_to_collect() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    from fidelity_catalog import COLLECT_S, capture_timeout

    assert capture_timeout(300.0) == 300.0 - COLLECT_S  # the capture kills its run before the worker is stopped
    assert 0 < capture_timeout(20.0) < 20.0


def test_a_source_file_included_by_a_built_one_is_built(tmp_path: Path) -> None:
    """`#include "impl.cu"` in the one file the Makefile compiles: impl.cu's kernels are launched from a built unit
    (they were dropped as "not built"); a .cu file nobody builds or includes stays out."""
    sys.path.insert(0, str(ROOT / "bench"))
    from fidelity_catalog import launched_kernels

    d = tmp_path / "app"
    d.mkdir()
    (d / "impl.cu").write_text("__global__ void twice(float* a) { a[threadIdx.x] *= 2.0f; }\n")
    (d / "old.cu").write_text("__global__ void stale(float* a) { a[0] = 0.0f; }\nvoid f(float* a) { stale<<<1, 1>>>(a); }\n")
    (d / "main.cu").write_text('#include "impl.cu"\nint main() { float* a = 0; twice<<<1, 32>>>(a); return 0; }\n')
    (d / "Makefile").write_text("main: main.o\n\tnvcc -arch=$(ARCH) -o main main.o\n"
                                "main.o: main.cu impl.cu\n\tnvcc -arch=$(ARCH) -c main.cu -o main.o\n")
    found, _index = launched_kernels(d, "make ARCH=sm_90")
    assert [(k["name"], k["file"]) for k in found] == [("twice", "impl.cu")]
