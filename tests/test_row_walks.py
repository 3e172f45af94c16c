"""warp-rows on thread-per-row kernels that walk their row in several loops or in one loop that is not sums alone
(softmax, layer norm, row minima and maxima: passes/reductions/_row_loops.py, passes/reductions/_row_walks.py). Each spelling of our fixture
(tests/fixtures/row_walks/, one kernel a file) is rewritten, run threaded on the CPU against the original (tests/emulate_cuda_block.py)
with odd sizes, rows shorter than a warp and sub-warp rows, compiled by nvcc, and the walks that must stay refused are."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import ROOT
from emulate_cuda import Launch
from emulate_cuda_block import same_outputs
from session_builds import nvcc_checks

from s2s.optimize.registry import Applied, build_pipeline, run_pass

FIXTURES = ROOT / "tests" / "fixtures" / "row_walks"
KERNELS = ("row_softmax", "row_softmax_stored", "row_norm", "row_range", "row_scale", "row_logsoftmax_pointers", "row_scaled_moved",
           "row_bisect", "row_repeat_sum", "row_repeat_bare")


def _source(kernel: str) -> bytes:
    return (FIXTURES / f"{kernel}.cu").read_bytes()


def _apply(spec: str, source: bytes, kernel: str) -> Applied:
    out = run_pass(build_pipeline(spec)[0], source, "cuda", kernel)
    assert isinstance(out, Applied), (spec, kernel, out)
    return out


def _counts(kernel: str, rows: int, n: int) -> dict[str, int]:
    full, row = rows * n, rows
    if kernel == "row_norm":
        return {"x": full, "w": n, "b": n, "y": full, "stats": row}
    if kernel == "row_range":
        return {"v": full, "offset": row, "lo_out": row, "hi_out": row, "count": row}
    if kernel == "row_bisect":
        return {"d": full, "wts": full, "betas": row}
    if kernel == "row_repeat_sum":
        return {"x": full, "acc": row, "peak": row}
    if kernel == "row_repeat_bare":
        return {"x": full, "acc": row}
    if kernel == "row_scaled_moved":
        return {"x": full, "norms": row}
    return {"x": full, "y": full}


def _check(tmp: Path, kernel: str, before: bytes, after: Applied | bytes, launch: object, rows: int, n: int) -> str:
    text = after.text if isinstance(after, Applied) else after
    grid, block = ((rows + 63) // 64, 1, 1), (64, 1, 1)
    g, b = launch.resolve(grid, block)  # type: ignore[attr-defined]
    scalars = {"rows": str(rows), "n": str(n), "target": "40.0f", "iters": "12", "reps": "3"}
    return same_outputs(tmp, kernel, before, text, (Launch(grid, block), Launch(g, b)), _counts(kernel, rows, n), scalars, 1e-5)


def test_every_spelling_is_rewritten_into_lanes_per_row() -> None:
    for kernel in KERNELS:
        out = _apply("warp-rows", _source(kernel), kernel)
        body = out.text.decode().split(f"void {kernel}(")[1].split("__global__")[0]
        assert out.launch is not None and out.launch.grid_from == "rows-per-warp" and out.launch.per_item == 32
        assert "/ 32;" in body and body.count("+= 32)") == body.count("for (int c ="), kernel
        assert "__shfl_xor_sync" in body, kernel
    stored = _apply("warp-rows", _source("row_softmax_stored"), "row_softmax_stored").text.decode()
    assert "top = (top < other) ? other : top;" in stored and "total += __shfl_xor_sync(mask, total, off, 32);" in stored
    ranged = _apply("warp-rows", _source("row_range"), "row_range").text.decode()
    assert "if (lane != 0) { pos = 0; }" in ranged and "if (other < lo) lo = other;" in ranged
    assert ranged.index("if (lane != 0) return;") < ranged.index("lo_out[r] = lo;")


@pytest.mark.parametrize("spec", ["warp-rows{lanes=32}", "warp-rows{lanes=8}"])
@pytest.mark.parametrize("kernel", KERNELS)
def test_row_walks_match_on_odd_sizes(tmp_path: Path, spec: str, kernel: str) -> None:
    """37 rows (a partial block), rows of 5 elements (shorter than the lanes), 1 and 70 (several trips, a partial one)."""
    src = _source(kernel)
    out = _apply(spec, src, kernel)
    assert out.launch is not None
    for rows, n in ((37, 5), (37, 70), (9, 1)):
        assert _check(tmp_path, kernel, src, out, out.launch, rows, n) == "SAME", (kernel, rows, n)


@pytest.mark.parametrize("kernel", ["row_softmax", "row_norm", "row_range", "row_scaled_moved", "row_repeat_sum"])
def test_broken_butterflies_are_caught(tmp_path: Path, kernel: str) -> None:
    """The checks above can fail: a butterfly stopping one step short, lanes that all start at the row's first element, and
    (a sum carried across an outer loop's trips) lanes other than 0 that keep the total instead of restarting at zero."""
    src = _source(kernel)
    out = _apply("warp-rows", src, kernel)
    assert out.launch is not None
    short = out.text.replace(b"off > 0; off /= 2", b"off > 1; off /= 2")
    same_start = out.text.replace(b"= 0 + lane;", b"= 0;").replace(b"= 1 + lane;", b"= 1;")
    mutants = [short, same_start]
    if kernel == "row_repeat_sum":  # a sum carried across the outer loop's trips: lanes other than 0 restart at zero each trip
        mutants.append(out.text.replace(b"if (lane != 0) { total = 0; }", b""))
    for broken in mutants:
        assert broken != out.text
        assert _check(tmp_path, kernel, src, broken, out.launch, 37, 70) != "SAME"


def test_walks_that_lanes_cannot_split_stay_refused() -> None:
    """A store at a neighbour of the element, a reduction read inside its loop, a scalar carried from one iteration to
    the next, a compound store between the loops, a walk every thread reads alike (nothing to coalesce: an all-pairs
    sum), a walk already adjacent across threads (column-major: splitting it would scatter the lanes), a loop nested in another, and a row loop whose stretch moves with the loop around it (a window, the neighbour
    cells of a particle: the start computed from the outer loop's variable), and a loop that stops on its running sum."""
    head = "__global__ void k(const float* x, float* y, int rows, int n)\n{\n    int r = blockIdx.x * blockDim.x + threadIdx.x;\n"
    cases = {
        "neighbour": "    float s = 0.0f;\n    for (int c = 0; c < n; ++c) s += x[r * n + c];\n"
                     "    for (int c = 1; c < n; ++c) y[r * n + c] = y[r * n + c - 1] + s;\n",
        "read inside": "    float m = x[r * n];\n    for (int c = 0; c < n; ++c) { m = fmaxf(m, x[r * n + c]); y[r * n + c] = m; }\n",
        "carried": "    float p = 0.0f, s = 0.0f;\n    for (int c = 0; c < n; ++c) { s += x[r * n + c] * p; p = x[r * n + c]; }\n"
                   "    for (int c = 0; c < n; ++c) y[r * n + c] = s;\n",
        "compound between": "    float s = 0.0f;\n    for (int c = 0; c < n; ++c) s += x[r * n + c];\n    y[r] += s;\n"
                            "    for (int c = 0; c < n; ++c) y[r * n + c] *= s;\n",
        "broadcast": "    float s = 0.0f;\n    for (int c = 0; c < n; ++c) { float e = x[c] * x[r]; s += e; }\n    y[r] = s;\n",
        "window": "    float s = 0.0f;\n    for (int d = 0; d < 3; ++d) for (int c = 0; c < n; ++c) s += x[(r + d) * n + c];\n    y[r] = s;\n",
        "cells": "    float s = 0.0f;\n    for (int o = -1; o <= 1; ++o) {\n        int cell = (int)x[r] + o;\n        int first = (int)x[cell];\n"
                 "        for (int j = first; j < first + 4; ++j) if (j != r) s = fmaxf(s, x[j]);\n    }\n    y[r] = s;\n",
        "column-major": "    float s = 0.0f;\n    for (int c = 0; c < n; ++c) { float v = x[c * rows + r]; s = fmaxf(s, v); }\n    y[r] = s;\n",
        "early exit": "    float s = 0.0f;\n    for (int c = 0; c < n && s < 8.0f; ++c) s += x[r * n + c];\n"
                      "    for (int c = 0; c < n; ++c) y[r * n + c] = s;\n",
        "nested": "    float s = 0.0f;\n    for (int c = 0; c < n; ++c) for (int d = 0; d < n; ++d) s += x[c * n + d];\n"
                  "    for (int c = 0; c < n; ++c) y[r * n + c] = s;\n",
    }
    for why, body in cases.items():
        out = run_pass(build_pipeline("warp-rows")[0], (head + body + "}\n").encode(), "cuda", "k")
        assert not isinstance(out, Applied), why


@pytest.mark.slow
def test_row_walks_compile(tmp_path: Path) -> None:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("no nvcc")
    files = []
    for lanes in (32, 8):
        for kernel in KERNELS:
            files.append(tmp_path / f"{kernel}_{lanes}.cu")
            files[-1].write_bytes(_apply(f"warp-rows{{lanes={lanes}}}", _source(kernel), kernel).text)
    proc = nvcc_checks(nvcc, ["-c", "-arch=sm_90", "-Werror", "all-warnings"], files, tmp_path, 300)
    assert proc.returncode == 0, proc.stderr[-3000:]
