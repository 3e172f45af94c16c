"""The kernel zoo (bench/zoo): every app is in the catalog with its sizes, extracts with no FILL-IN, and its MEP is
runnable after the catalog's fixes; bench/gpu_zoo.py's dry mode builds with nvcc; its summary counts every kernel."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
sys.path.insert(0, str(BENCH))

from geomean import LABELS, geomean, summary  # noqa: E402
from zoo_catalog import BY_NAME, ZOO, parts, work_of  # noqa: E402

FAMILIES = {"blas1", "blas2", "blas3", "batched", "stencil", "reduction", "scan", "histogram", "transpose", "nbody", "spmv"}


def _defines(name: str) -> dict[str, int]:
    text = (BENCH / "zoo" / name / f"{name}.cu").read_text()
    out = {}
    for m in re.finditer(r"^#define (\w+) (\(1 << \d+\)|\d+)\s*$", text, re.M):
        out[m.group(1)] = int(eval(m.group(2)))  # noqa: S307 - only "(1 << n)" or digits, matched above
    return out


def test_catalog_matches_the_zoo_folders_and_their_sizes() -> None:
    folders = sorted(p.name for p in (BENCH / "zoo").iterdir() if p.is_dir())
    assert folders == sorted(BY_NAME) and len(folders) >= 30
    assert {k.family for k in ZOO} == FAMILIES
    for k in ZOO:
        src = (BENCH / "zoo" / k.name / f"{k.name}.cu").read_text()
        assert re.search(rf"__global__ void {k.name}\(", src), k.name
        assert "main(" in src and "<<<" in src and re.search(r'"(ok|FAILED)"|\? "FAILED" : "ok"|zoo_report', src), k.name
        defs = _defines(k.name)
        for size, value in k.sizes.items():
            assert defs.get(size) == value, f"{k.name}: catalog {size}={value}, app #define {defs.get(size)}"
        b, f = work_of(k)
        assert b > 0 and f >= 0


def test_apps_whose_data_is_captured_are_self_contained() -> None:
    # `s2s capture` copies only the app's folder: an app captured by the benchmark includes nothing from outside it
    captured = [k for k in ZOO if k.capture]
    assert {k.name for k in captured} >= {"spmv_csr", "trsm_cols"}
    for k in captured:
        assert '"../' not in (BENCH / "zoo" / k.name / f"{k.name}.cu").read_text(), k.name


def test_every_algorithm_comes_in_two_styles_and_the_underfilled_shapes_are_there() -> None:
    by_family: dict[str, list[str]] = {}
    for k in ZOO:
        by_family.setdefault(k.family, []).append(k.style)
    assert all(len(set(v)) >= 2 for v in by_family.values()), by_family
    styles = " ".join(k.style for k in ZOO)
    for must in ("macro", "alpha/beta", "global memory", "1-D grid", "2-D grid", "column-major", "one thread per row",
                 "one thread per column"):
        assert must in styles, must
    assert "j2 >= j1" in BY_NAME["covar_cols"].style and BY_NAME["gemv_rows"].sizes["N"] == 4096


def test_parts_cover_the_zoo_once_and_balance_the_cost() -> None:
    for n in (1, 3, 5):
        ps = parts(n)
        names = [k.name for p in ps for k in p]
        assert sorted(names) == sorted(BY_NAME) and len(ps) == n
        costs = [sum(k.cost for k in p) for p in ps]
        assert max(costs) - min(costs) <= max(k.cost for k in ZOO)


def test_geomean_counts_every_kernel_attempted() -> None:
    assert geomean([4.0, 1.0, None, float("nan")]) == pytest.approx(4.0 ** 0.25)
    assert geomean([2.0, 8.0]) == pytest.approx(4.0) and geomean([]) == 1.0 and geomean([0.5, 2.0]) == pytest.approx(1.0)


def test_summary_records_one_of_the_three_labels() -> None:
    assert summary([4.0, 1.0, None], "development corpus") == {"geomean": round(4.0 ** (1 / 3), 3), "kernels": 3,
                                                                "label": "development corpus"}
    assert [summary([2.0], lab)["label"] for lab in LABELS] == ["in-sample", "development corpus", "held-out split"]
    for wrong in ("out-of-sample", "dev", "held-out", "In-sample", ""):
        with pytest.raises(ValueError, match="is not one of in-sample, development corpus, held-out split"):
            summary([2.0], wrong)


def test_summary_counts_kernels_in_no_part_as_1x(tmp_path: Path) -> None:
    rows = [{"kernel": "gemm_naive", "family": "blas3", "status": "ok", "speedup": 9.0, "speedup_counted": 8.0, "best_us": 100.0,
             "vendor_over_best": 0.6, "bound": "compute", "floor_fraction_best": 0.3},
            {"kernel": "axpy", "family": "blas1", "status": "no-win", "speedup_counted": 1.0, "bound": "memory",
             "floor_fraction_best": 0.8}]
    part = {"date": "d", "commit": "c", "device": "NVIDIA H200", "part": "1/5", "max_evals": 30, "copy": {"gbs": 4000.0},
            "kernels": rows}
    (tmp_path / "gpu_zoo_part1.json").write_text(json.dumps(part))
    proc = subprocess.run([sys.executable, str(BENCH / "gpu_zoo.py"), "--summarize", str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    s = json.loads((tmp_path / "gpu_zoo_summary.json").read_text())
    assert s["kernels_attempted"] == len(ZOO) and s["kernels_run"] == 2
    assert s["geomean"] == pytest.approx(round(8.0 ** (1 / len(ZOO)), 3))  # 8x on one kernel, 1.00x on every other
    assert s["summary"] == {"geomean": s["geomean"], "kernels": len(ZOO), "label": "in-sample"}
    assert s["gemm_within_2x_of_vendor"] == "1 of 1" and s["memory_bound_at_70pct_of_copy"] == "1 of 1"
    md = (tmp_path / "gpu_zoo_summary.md").read_text()
    assert "in-sample" in md and "not-run: in no part's results" in md and "| gemm_naive | blas3 |" in md


@pytest.mark.slow
def test_every_zoo_app_extracts_runnable(tmp_path: Path) -> None:
    from gpu_zoo import extract

    from s2s.mep.backends import get_backend
    from s2s.mep.manifest import load

    for k in ZOO:
        mep, unfilled, fixes = extract(k, tmp_path)
        assert unfilled == [], f"{k.name}: {unfilled}"
        assert len(fixes) == len(k.fixes)
        m = load(mep)
        get_backend(m.backend).check_manifest(m, mep / "mep.toml")  # the checks `s2s run` makes before building
        sizes = {n: int(v["value"]) for n, v in m.sizes.items() if str(v["value"]).isdigit()}
        for size, value in sizes.items():
            assert k.sizes.get(size, value) == value, f"{k.name}: {size}"
        assert any(p.role in {"out", "inout"} for p in m.params), f"{k.name}: no output"
        threads = m.launch.block[0] * m.launch.block[1] * m.launch.block[2]
        assert all(g >= 1 for g in m.launch.grid) and 64 <= threads <= 1024, k.name
        shutil.rmtree(mep)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_dry_mode_builds_an_app_and_its_mep(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(BENCH / "gpu_zoo.py"), "--dry", "--only", "gemv_rows", "--work", str(tmp_path / "w"),
                           "--out", str(tmp_path / "out"), "--jobs", "1"], capture_output=True, text=True, timeout=900)
    doc = json.loads((tmp_path / "out" / "gpu_zoo_dry.json").read_text())
    row = doc["kernels"][0]
    assert proc.returncode == 0, (row, proc.stderr[-2000:])
    assert row["app_build"]["ok"] and row["mep_build"]["ok"] and doc["failed"] == []
    assert (tmp_path / "w" / "apps" / "gemv_rows").is_file()


def test_every_vendor_entry_builds_from_its_kernels_sizes() -> None:
    # the CuPy calls themselves run on the GPU machine; here: every key exists and reads only sizes the kernel has
    from unittest.mock import MagicMock

    from zoo_vendor import _table

    table = _table(MagicMock(), MagicMock(), MagicMock(), MagicMock())
    used = {k.vendor for k in ZOO if k.vendor}
    assert used <= set(table) and len(used) >= 20
    for k in ZOO:
        if k.vendor:
            label, call = table[k.vendor](dict(k.sizes))
            assert label and callable(call)
            call()
