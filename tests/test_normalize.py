"""normalize (s2s/lang/normal_form.py): the spellings of an accumulating matrix-vector product that split-reduction
refused as written (a C89 loop counter, a loop under an unbraced guard, `= x +`, a column walk, `-=`, an index macro,
a 2-D nest) are made one canonical text; the normalized kernel is bit-identical to the original on the CPU
(tests/emulate_cuda.py: every thread in turn, buffers compared byte for byte), and the built-in proposer's round 1 now
holds `normalize,split-reduction` candidates where it held none; those match on the CPU emulator and compile with nvcc."""
from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest
from conftest import needs_nvcc
from emulate_cuda import Launch, same_outputs
from mep_util import ParamSpec, make_mep, manifest
from session_builds import nvcc_checks

from s2s.lang.kernel_facts import kernel_facts
from s2s.lang.normal_form import normalize
from s2s.optimize.registry import Applied, build_pipeline, run_pass

N = 37  # not a multiple of any block, split or lane count

# name -> (kernel, source, output array, whether split-reduction refused it as written)
FIXTURES: dict[str, tuple[str, str, str, bool]] = {
    "rows_c89": ("mv_rows", """\
        #define N 37
        __global__ void mv_rows(const float* A, const float* x, float* tmp)
        {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < N) {
                int j;
                for (j = 0; j < N; j++) {
                    tmp[i] += A[i * N + j] * x[j];
                }
            }
        }
        """, "tmp", True),
    "rows_assign_unbraced": ("mv_rows", """\
        __global__ void mv_rows(const float* A, const float* x, float* tmp, int n)
        {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n)
                for (int j = 0; j < n; j++)
                    tmp[i] = tmp[i] + A[i * n + j] * x[j];
        }
        """, "tmp", True),
    "cols_c89": ("mv_cols", """\
        #define N 37
        __global__ void mv_cols(const float* A, const float* x, float* y)
        {
            int j = blockIdx.x * blockDim.x + threadIdx.x;
            if (j < N) {
                int i;
                for (i = 0; i < N; i++)
                    y[j] += A[i * N + j] * x[i];
            }
        }
        """, "y", True),
    "rows_minus_c89": ("mv_sub", """\
        __global__ void mv_sub(const float* A, const float* x, float* r, int n)
        {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            int j;
            if (i >= n) return;
            for (j = 0; j < n; ++j)
                r[i] -= A[i * n + j] * x[j];
        }
        """, "r", True),
    "macro_zeroed": ("mv_macro", """\
        #define N 37
        #define AT(r, c) ((r) * N + (c))
        __global__ void mv_macro(const float* A, const float* x, float* y)
        {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            int j;
            if (i < N) {
                y[i] = 0.0f;
                for (j = 0; j < N; j++)
                    y[i] += A[AT(i, j)] * x[j];
            }
        }
        """, "y", True),
    "nest_2d": ("mv_nest", """\
        __global__ void mv_nest(const float* A, const float* x, float* y, int n)
        {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            int b, j;
            if (i < n)
                for (b = 0; b < n; b += 8)
                    for (j = b; j < b + 8 && j < n; j++)
                        y[i] += A[i * n + j] * x[j];
        }
        """, "y", False),
    # `out[i] = e + out[i]`: the element on the right of the sum; the register takes `acc += e` (addition commutes exactly)
    "rows_commuted": ("mv_comm", """\
        __global__ void mv_comm(float* A, float* x, float* out, int n)
        {
            int row = blockIdx.x * blockDim.x + threadIdx.x;
            if (row < n) {
                for (int j = 0; j < n; j++) {
                    out[row] = A[row * n + j] * x[j] + out[row];
                }
            }
        }
        """, "out", True),
    "rows_minus_assign": ("mv_rsub", """\
        __global__ void mv_rsub(const float* A, const float* x, float* r, int n)
        {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i >= n) return;
            for (int j = 0; j < n; ++j)
                r[i] = r[i] - A[i * n + j] * x[j];
        }
        """, "r", True),
    # 2-D array parameters: the element `y[i][0]`, a row of A read as `A[i][j]`
    "rows_2d_arrays": ("mv_2d", """\
        #define N 37
        __global__ void mv_2d(float A[N][N], float x[N], float y[N][1])
        {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < N) {
                for (int j = 0; j < N; j++) {
                    y[i][0] += A[i][j] * x[j];
                }
            }
        }
        """, "y", False),
}


def _fixture(name: str) -> tuple[str, bytes, str, bool]:
    kernel, text, out, refused = FIXTURES[name]
    return kernel, textwrap.dedent(text).encode(), out, refused


def _counts(kernel: str, out: str) -> dict[str, int]:
    return {"A": N * N, "x": N, out: N}


def _params(kernel: str, source: bytes, out: str) -> list[ParamSpec]:
    facts = kernel_facts(source, "cuda", kernel)
    assert facts is not None
    specs = []
    for p in facts.params:
        if p.pointer:
            specs.append(ParamSpec(p.name, p.type, "inout" if p.name == out else "in", "float", count=_counts(kernel, out)[p.name], space="global"))
        else:
            specs.append(ParamSpec(p.name, "int", "scalar", "int", value=N))
    return specs


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_normalized_kernel_is_bit_identical(tmp_path: Path, name: str) -> None:
    """Every spelling normalizes to a register accumulator with counters declared by their loops, and computes the
    same bits as the original (rtol 0: memcmp of every buffer); a normalized kernel that starts its register from
    zero where the original did not is caught."""
    kernel, src, out, _ = _fixture(name)
    got = normalize(src, "cuda", kernel)
    assert not isinstance(got, str), got
    text = got.text.decode()
    assert "register_accumulators" in got.rules and f"{out}[" in text and "acc" in text
    assert "scoped_counters" in got.rules or "int j;" not in src.decode()
    launch = Launch((2, 1, 1), (32, 1, 1))
    scalars = {"n": str(N)}
    assert same_outputs(tmp_path, kernel, src, got.text, (launch, launch), _counts(kernel, out), scalars) == "SAME"
    if name != "macro_zeroed":  # the original adds to what the output held: starting from zero must show
        broken = got.text.replace(b"float acc = " + out.encode() + b"[", b"float acc = 0.0f; (void)" + out.encode() + b"[")
        assert broken != got.text
        assert same_outputs(tmp_path, kernel, src, broken, (launch, launch), _counts(kernel, out), scalars) != "SAME"


def test_nothing_to_normalize_says_why() -> None:
    src = b"__global__ void k(float* y) { int i = threadIdx.x; y[i] = 2.0f * y[i]; }"
    got = normalize(src, "cuda", "k")
    assert isinstance(got, str) and "no accumulation" in got
    out = run_pass(build_pipeline("normalize")[0], src, "cuda", "k")
    assert not isinstance(out, Applied) and "canonical form already" in out.reason


def test_a_counter_read_after_its_loop_stays() -> None:
    """`int j; for (j = 0; ...) ...; y[j] = ...` reads the counter after the loop: its declaration is not moved."""
    src = textwrap.dedent("""\
        __global__ void k(const float* a, float* y, int n)
        {
            int i = threadIdx.x;
            int j;
            for (j = 0; j < n; j++)
                y[i] += a[j];
            y[j] = 1.0f;
        }
        """).encode()
    got = normalize(src, "cuda", "k")
    assert not isinstance(got, str) and "scoped_counters" not in got.rules and b"int j;" in got.text


def _round1(tmp_path: Path, name: str) -> tuple[list[str], dict[str, str]]:
    from s2s.mep.manifest import load
    from s2s.optimize.proposers.base import State
    from s2s.optimize.proposers.builtin import BuiltinProposer

    kernel, src, out, _ = _fixture(name)
    mep = make_mep(tmp_path / name, src.decode(), manifest(kernel, "cuda", "kernel.cu", _params(kernel, src, out), (2, 1, 1), (32, 1, 1)))
    state = State(manifest=load(mep), original=src, kernel=kernel, dialect="cuda", facts=kernel_facts(src, "cuda", kernel), patterns=[])
    prop = BuiltinProposer()
    return [c.origin.removeprefix("pass:") for c in prop.propose(state)], prop.refusals


@pytest.mark.parametrize("name", [n for n, f in FIXTURES.items() if f[3]])
def test_split_reduction_applies_in_round_one_behind_normalize(tmp_path: Path, name: str) -> None:
    """As written every split-reduction step is refused; behind normalize at least the default applies, in round 1."""
    steps, refusals = _round1(tmp_path, name)
    assert not [s for s in steps if s.startswith("split-reduction")]
    assert refusals["split-reduction"].startswith("split-reduction:")
    assert "normalize,split-reduction" in steps and "normalize,split-reduction{splits=32 cols=16}" in steps


def test_a_kernel_split_reduction_reads_as_written_gets_no_normalized_copy(tmp_path: Path) -> None:
    """gemv_rows' spelling (`for (int j ...) y[i] += ...` in braces): the plain steps apply, their normalized copies are
    not proposed (the same computation twice would spend evaluations)."""
    FIXTURES["plain"] = ("mv_rows", FIXTURES["rows_c89"][1].replace("int j;\n", "").replace("for (j = 0", "for (int j = 0"), "tmp", False)
    try:
        steps, refusals = _round1(tmp_path, "plain")
    finally:
        del FIXTURES["plain"]
    assert "split-reduction" in steps and not [s for s in steps if s.startswith("normalize,split-reduction")]
    assert "applies to the kernel as written" in refusals["normalize,split-reduction"]


def _split(name: str, pipeline: str) -> tuple[str, bytes, bytes, tuple[Launch, Launch], str]:
    kernel, src, out, _ = _fixture(name)
    text, grid, block = src, (2, 1, 1), (32, 1, 1)
    g, b = grid, block
    for p in build_pipeline(pipeline):
        res = run_pass(p, text, "cuda", kernel)
        assert isinstance(res, Applied), (name, pipeline, res)
        text = res.text
        if res.launch is not None:
            g, b = res.launch.resolve(g, b, values={"n": N})
    return kernel, src, text, (Launch(grid, block), Launch(g, b)), out


@pytest.mark.slow
@pytest.mark.parametrize("name,pipeline", [("rows_c89", "normalize,split-reduction"), ("rows_assign_unbraced", "normalize,split-reduction{vec=1}"),
                                           ("cols_c89", "normalize,split-reduction{splits=32 cols=16}"),
                                           ("rows_minus_c89", "normalize,split-reduction"), ("macro_zeroed", "normalize,split-reduction")])
def test_split_reduction_behind_normalize_matches(tmp_path: Path, name: str, pipeline: str) -> None:
    """The split sums (shuffles, shared-memory partials) run threaded on the CPU against the originals at 37 x 37:
    every output within 1e-5 (the order of additions changes, as split-reduction says)."""
    from emulate_cuda_block import same_outputs as block_same

    kernel, src, text, launches, out = _split(name, pipeline)
    assert block_same(tmp_path, kernel, src, text, launches, _counts(kernel, out), {"n": str(N)}, 1e-5) == "SAME"


@pytest.mark.slow
@needs_nvcc
def test_normalized_and_split_kernels_compile(tmp_path: Path) -> None:
    files = []
    for name in FIXTURES:
        kernel, src, _, refused = _fixture(name)
        got = normalize(src, "cuda", kernel)
        assert not isinstance(got, str)
        files.append(tmp_path / f"{name}_normal.cu")
        files[-1].write_bytes(got.text)
        if refused:
            files.append(tmp_path / f"{name}_split.cu")
            files[-1].write_bytes(_split(name, "normalize,split-reduction")[2])
    for name in ("rows_commuted", "rows_2d_arrays", "rows_minus_assign"):  # warp-rows behind normalize, lane 0's first value
        files.append(tmp_path / f"{name}_warp.cu")
        files[-1].write_bytes(_split(name, "normalize,warp-rows")[2])
    nvcc = shutil.which("nvcc")
    assert nvcc is not None
    proc = nvcc_checks(nvcc, ["-c", "-arch=sm_90", "-Werror", "all-warnings"], files, tmp_path, 600)
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.parametrize("name", ["rows_c89", "rows_commuted", "rows_minus_assign", "rows_2d_arrays"])
def test_warp_rows_applies_in_round_one_behind_normalize(tmp_path: Path, name: str) -> None:
    """warp-rows reads a sum into a register (`acc += ...`): accumulation into the output as written is refused, its
    normalized form gets warp-rows candidates in round 1."""
    steps, refusals = _round1(tmp_path, name)
    assert not [s for s in steps if s.startswith("warp-rows")]
    assert "scalar accumulations" in refusals["warp-rows{lanes=32}"]
    assert "normalize,warp-rows{lanes=32}" in steps


@pytest.mark.slow
@pytest.mark.parametrize("name,pipeline", [("rows_commuted", "normalize,warp-rows{vec=1}"), ("rows_2d_arrays", "normalize,warp-rows{vec=1}"),
                                           ("rows_c89", "normalize,warp-rows"), ("rows_minus_assign", "normalize,warp-rows{lanes=16 vec=1}")])
def test_warp_rows_behind_normalize_matches(tmp_path: Path, name: str, pipeline: str) -> None:
    """The warp's shuffled sums run threaded on the CPU against the original (1e-5: the order of additions changes);
    the register starts from the output's value, which only lane 0 brings into the sum (every lane did before: the
    output's old value counted 32 times)."""
    from emulate_cuda_block import same_outputs as block_same

    kernel, src, text, launches, out = _split(name, pipeline)
    assert b"if (lane != 0) { acc = 0; }" in text
    assert block_same(tmp_path, kernel, src, text, launches, _counts(kernel, out), {"n": str(N)}, 1e-5) == "SAME"


ALIASING = {
    # another buffer of the same element type written in the loop: it may be `out` itself
    "a float buffer written in the loop": ("""\
        __global__ void k(const float* A, float* out, float* trace, int n)
        {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            for (int j = 0; j < n; j++) {
                out[i] += A[i * n + j];
                trace[j] = A[i * n + j];
            }
        }
        """, "trace is written in the loop and may alias out"),
    # a 2-D store through another row pointer parameter
    "a 2-D store": ("""\
        __global__ void k(float (*A)[8], float (*out)[8], int n)
        {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            for (int j = 0; j < 8; j++) {
                out[i][0] += A[i][j];
                A[j][i] = 0.0f;
            }
        }
        """, "A is written in the loop and may alias out"),
    # a pointer the kernel makes (it points into out here)
    "a local pointer": ("""\
        __global__ void k(const float* A, float* out, int n)
        {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            float* row = out + i;
            for (int j = 0; j < n; j++) {
                out[i] += A[i * n + j];
                row[0] = 1.0f;
            }
        }
        """, "stores through pointer row"),
    "a dereference": ("""\
        __global__ void k(const float* A, float* out, float* p, int n)
        {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            for (int j = 0; j < n; j++) {
                out[i] += A[i * n + j];
                *p = A[j];
            }
        }
        """, "stores through *p"),
}


@pytest.mark.parametrize("case", sorted(ALIASING))
def test_a_store_that_may_alias_the_output_keeps_memory(case: str) -> None:
    src, why = ALIASING[case]
    got = normalize(textwrap.dedent(src).encode(), "cuda", "k")
    assert isinstance(got, str) and why in got, got


def test_stores_that_cannot_alias_the_output_move_it() -> None:
    """Stores to a local array, to a buffer of another element type, and to restrict buffers leave the output's
    element to the register."""
    src = textwrap.dedent("""\
        __global__ void k(const float* __restrict__ A, float* __restrict__ out, float* __restrict__ copy, int* hits, int n)
        {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            float last[2];
            for (int j = 0; j < n; j++) {
                out[i] += A[i * n + j];
                copy[i * n + j] = A[i * n + j];
                hits[j] = j;
                last[j % 2] = A[j];
            }
        }
        """).encode()
    got = normalize(src, "cuda", "k")
    assert not isinstance(got, str) and "register_accumulators" in got.rules and b"acc += A[i * n + j];" in got.text
