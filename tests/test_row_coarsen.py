"""row-coarsen: a thread per output row of a batched small product; emulated against the original at odd batch sizes
(float4 path and the misaligned scalar path), mutants that must differ, refusals, nvcc of the rewritten zoo kernel."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from conftest import ROOT, needs_nvcc
from emulate_cuda import Launch, same_outputs
from session_builds import nvcc_checks

from s2s.lang.edits import Refused
from s2s.optimize.registry import Applied, make_pass, run_pass, search_space

ZOO = ROOT / "bench" / "zoo"
BATCH = 37  # odd: the last block of the original launch is partly idle, the coarsened one too


def _zoo(batch: int = BATCH) -> bytes:
    text = (ZOO / "batched_gemm8" / "batched_gemm8.cu").read_text()
    return re.sub(r"#define BATCH \d+", f"#define BATCH {batch}", text).encode()


def _apply(data: bytes, opts: dict[str, str] | None = None, batch: int = BATCH) -> tuple[bytes, Launch, Launch]:
    res = run_pass(make_pass("row-coarsen", opts or {}), data, "cuda", "batched_gemm8")
    assert isinstance(res, Applied), res
    assert res.launch is not None
    grid, block = (-(-batch * 64 // 256), 1, 1), (256, 1, 1)
    new_grid, new_block = res.launch.resolve(grid, block, values={})
    return res.text, Launch(grid, block), Launch(new_grid, new_block)


def test_zoo_batched_gemm8_becomes_a_thread_per_row_with_float4_words() -> None:
    out, old, new = _apply(_zoo(262144), batch=262144)
    text = out.decode()
    assert "int b = row / 8;" in text and "int r = (row) % DIM;" in text
    assert "float4 v0 = *(const float4*)&bb[k * DIM + col];" in text  # B's row: one word per 4 columns
    assert "*(float4*)&C[b * DIM * DIM + r * DIM + col] = make_float4(" in text
    assert "a[r * DIM + k] * v0.x" in text  # A's element, shared by the row, not a word (it steps with k, not col)
    assert "((unsigned long long)bb & 15) == 0 && ((unsigned long long)C & 15) == 0" in text
    assert new.grid[0] * new.block[0] * 8 >= 262144 * 64 and new.grid[0] == -(-old.grid[0] // 8)


@pytest.mark.slow
@pytest.mark.parametrize("opts,offset", [({}, 0), ({}, 1), ({"vec": "1"}, 0), ({"kvec": "1"}, 0), ({"kvec": "1"}, 1)])
def test_zoo_batched_gemm8_computes_what_the_original_does(tmp_path: Path, opts: dict[str, str], offset: int) -> None:
    """offset 1: every buffer starts one float past a 16-byte boundary, so the run-time check takes the scalar form."""
    before = _zoo()
    after, old, new = _apply(before, opts)
    counts = {"A": BATCH * 64, "B": BATCH * 64, "C": BATCH * 64}
    assert same_outputs(tmp_path, "batched_gemm8", before, after, (old, new), counts, {}, offset=offset) == "SAME"
    vector = "vec" not in opts and offset == 0
    lane = b"s[col + 3] += a[r * DIM + k] * v0.w;" if vector else b"s[col] += a[r * DIM + k] * bb[k * DIM + col];"
    if vector and "kvec" in opts:
        lane = b"s[col + 3] += a0.z * v0.w;"  # k + 2's element of A's word, B's row k + 2
    assert lane in after
    wrong = after.replace(lane, lane.replace(b"a[r * DIM + k]", b"a[r * DIM + (k + 1) % DIM]").replace(b"a0.z", b"a0.y"))
    assert same_outputs(tmp_path, "batched_gemm8", before, wrong, (old, new), counts, {}, offset=offset) != "SAME"


@pytest.mark.slow
def test_a_guard_with_exits_and_a_param_batch_matches(tmp_path: Path) -> None:
    """`if (...) return;` exits, the batch a parameter, a 4-wide row, the output not at the accumulator's row."""
    before = b"""#define N 4
__global__ void bmm4(const float* x, const float* w, float* y, int batch)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int j = t % N;
    int m = t / N;
    if (m >= batch * N) return;
    float acc = 1.0f;
    for (int k = 0; k < N; ++k) {
        acc += x[m * N + k] * w[(m / N) * N * N + k * N + j] + w[j];
    }
    y[m * N + j] = acc;
}
"""
    res = run_pass(make_pass("row-coarsen"), before, "cuda", "bmm4")
    assert isinstance(res, Applied), res
    assert b"float4 v0 = *(const float4*)&w[(m / N) * N * N + k * N + j];" in res.text
    assert b"float4 v1 = *(const float4*)&w[j];" in res.text
    assert b"if (m >= batch * N) return;" in res.text
    assert res.launch is not None
    batch = 13
    grid, block = (-(-batch * 16 // 64), 1, 1), (64, 1, 1)
    ng, nb = res.launch.resolve(grid, block, values={})
    counts = {"x": batch * 16, "w": batch * 16, "y": batch * 16}
    for offset in (0, 1):
        out = same_outputs(tmp_path, "bmm4", before, res.text, (Launch(grid, block), Launch(ng, nb)), counts,
                           {"batch": str(batch)}, offset=offset)
        assert out == "SAME", (offset, out)


@pytest.mark.parametrize("change,why", [
    ("int c = t % DIM;|int c = t % n;", "row length"),
    ("int b = t / (DIM * DIM);|int b = t / 12;", "not a compile-time multiple"),
    ("if (b < BATCH) {|if (b < BATCH && c < 7) {", "column `c` is read before the sum"),
    ("s += a[r * DIM + k] * bb[k * DIM + c];|s += s * a[r * DIM + k] * bb[k * DIM + c];", "does not read `s`"),
    ("C[b * DIM * DIM + r * DIM + c] = s;|C[b * DIM * DIM + r * DIM + c] = s; C[0] = 1.0f;", "accumulator is not declared"),
    ("int t = blockIdx.x * blockDim.x + threadIdx.x;|int t = blockIdx.x * blockDim.x + threadIdx.x; __syncthreads();",
     "barriers"),
    ("#define DIM 8|#define DIM 48", "row length"),
])
def test_refusals(change: str, why: str) -> None:
    text = (ZOO / "batched_gemm8" / "batched_gemm8.cu").read_text().replace("int col = t % DIM;", "int c = t % DIM;")
    text = text.replace("bb[k * DIM + col]", "bb[k * DIM + c]").replace("r * DIM + col]", "r * DIM + c]")
    old, new = change.split("|")
    assert old in text, old
    text = text.replace(old, new).replace("(const float* A, const float* B, float* C)", "(const float* A, const float* B, float* C, int n)")
    res = run_pass(make_pass("row-coarsen"), text.encode(), "cuda", "batched_gemm8")
    assert isinstance(res, Refused), res
    assert why in res.reason, res.reason


def test_kvec_loads_the_shared_row_in_words() -> None:
    out, _, _ = _apply(_zoo(262144), {"kvec": "1"}, batch=262144)
    text = out.decode()
    assert "for (int k = 0; k < DIM; k += 4) {" in text and "float4 a0 = *(const float4*)&a[r * DIM + k];" in text
    assert "float4 v0 = *(const float4*)&bb[(k + 3) * DIM + col];" in text and "((unsigned long long)a & 15) == 0" in text
    shifted = _zoo().decode().replace("for (int k = 0; k < DIM; k++)", "for (int k = 1; k < DIM; k++)")
    res = run_pass(make_pass("row-coarsen", {"kvec": "1"}), shifted.encode(), "cuda", "batched_gemm8")
    assert isinstance(res, Refused) and "compile-time multiple of 4" in res.reason, res
    strided = _zoo().decode().replace("a[r * DIM + k]", "a[k * DIM + r]")
    res = run_pass(make_pass("row-coarsen", {"kvec": "1"}), strided.encode(), "cuda", "batched_gemm8")
    assert isinstance(res, Refused) and "steps by one element along k" in res.reason, res


def test_a_double_sum_keeps_scalars_and_opencl_is_refused() -> None:
    text = _zoo().decode().replace("float s = 0.0f;", "double s = 0.0;")
    res = run_pass(make_pass("row-coarsen"), text.encode(), "cuda", "batched_gemm8")
    assert isinstance(res, Refused) and "float sum" in res.reason
    res1 = run_pass(make_pass("row-coarsen", {"vec": "1"}), text.encode(), "cuda", "batched_gemm8")
    assert isinstance(res1, Applied) and b"double s[8];" in res1.text and b"float4" not in res1.text
    cl = b"__kernel void k(__global float* y) { int t = get_global_id(0); y[t] = 0; }"
    assert isinstance(run_pass(make_pass("row-coarsen"), cl, "opencl", "k"), Refused)


def test_the_search_offers_it_early() -> None:
    space = search_space()
    assert space.index("row-coarsen") < space.index("delinearize-2d")


@pytest.mark.slow
def test_round_one_evaluates_it_first_on_the_zoo_kernel() -> None:
    """The model reads the row's float4 words as strided and predicts the original faster; cost.order puts it first, in
    the pass's order of its measured forms (H200: 1.54x with 128-thread blocks, 1.48x; vec=1 0.76x is not searched)."""
    from mep_util import ParamSpec
    from mep_util import manifest as make_manifest

    from s2s.lang.kernel_facts import kernel_facts
    from s2s.optimize.proposers.base import State
    from s2s.optimize.proposers.builtin import BuiltinProposer

    n = 262144 * 64
    data = _zoo(262144)
    params = [ParamSpec("A", "const float*", "in", "float", count=n), ParamSpec("B", "const float*", "in", "float", count=n),
              ParamSpec("C", "float*", "out", "float", count=n)]
    m = make_manifest("batched_gemm8", "cuda", "kernel.cu", params, (n // 256, 1, 1), (256, 1, 1))
    state = State(manifest=m, original=data, kernel="batched_gemm8", dialect="cuda",
                  facts=kernel_facts(data, "cuda", "batched_gemm8"))
    first = [c.origin.removeprefix("pass:") for c in BuiltinProposer().propose(state)]
    assert first[:3] == ["row-coarsen,launch-config{block=128}", "row-coarsen", "row-coarsen{kvec=1}"], first


@pytest.mark.slow
@needs_nvcc
def test_nvcc_compiles_the_rewrite(tmp_path: Path) -> None:
    nvcc = shutil.which("nvcc")
    assert nvcc is not None
    shutil.copy(ZOO / "zoo.h", tmp_path / "zoo.h")
    files = []
    for i, opts in enumerate(({}, {"vec": "1"})):
        out, _, _ = _apply(_zoo(262144), opts, batch=262144)
        files.append(tmp_path / "batched_gemm8" / f"k{i}.cu")  # k0: the default form, k1: vec=1
        files[-1].parent.mkdir(exist_ok=True)
        files[-1].write_bytes(out)
    r = nvcc_checks(nvcc, ["-arch=sm_90", "-c"], files, tmp_path, 600)
    assert r.returncode == 0, r.stderr[-2000:]
