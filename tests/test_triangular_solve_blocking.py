"""triangular-solve-blocking (issue 15: trsm_cols at 0.09 of cuBLAS): the zoo's forward substitution and a macro-indexed
twin with a separate right-hand side, rewritten to 32 columns x 8 rows a block; refusals; nvcc compiles the rewrites;
and the rewrites run on the CPU with real barriers (tests/emulate_cuda_block.py's threads) against the originals at
odd sizes (N = 45: a short last row block; NRHS = 70: a partial block of columns), on a well-conditioned L."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, needs_nvcc
from emulate_cuda import Launch, kernel_text
from emulate_cuda_block import SHIM
from session_builds import compile_threaded, nvcc_checks

from s2s.lang.edits import LaunchChange, Refused
from s2s.optimize.registry import Applied, make_pass, run_pass, search_space

ZOO = ROOT / "bench" / "zoo" / "trsm_cols" / "trsm_cols.cu"
PASS = "triangular-solve-blocking"


def _zoo_kernel(n: int = 512, nrhs: int = 8192) -> bytes:
    """The zoo app's sizes and kernel, verbatim (its host helpers left out), at the given sizes."""
    text = ZOO.read_text()
    kernel = text[text.index("__global__ void trsm_cols"):text.index("int main")]
    return f"#define N {n}\n#define NRHS {nrhs}\n\n{kernel}".encode()


# the same solve written another way: indexing macros, a block guard, ++ loops, a braced inner body, a separate
# right-hand side (read-only) and solution
MACRO = """\
#define N {n}
#define NRHS {nrhs}
#define LM(r, k) L[(r) * N + (k)]
#define XM(r, c) X[(r) * NRHS + (c)]

__global__ void trsm_macro(const float* __restrict__ L, const float* __restrict__ Bin, float* __restrict__ X)
{{
    const int col = threadIdx.x + blockIdx.x * blockDim.x;
    if (col < NRHS) {{
        for (int row = 0; row < N; ++row) {{
            float acc = Bin[row * NRHS + col];
            for (int j = 0; j < row; ++j) {{
                acc -= LM(row, j) * XM(j, col);
            }}
            XM(row, col) = acc / LM(row, row);
        }}
    }}
}}
"""

ZOO_AFTER = """\
__global__ void trsm_cols(const float* L, float* B)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = threadIdx.y;
    __shared__ float part[8][32];
    __shared__ float sol[8][32];
    for (int i0 = 0; i0 < N; i0 += 8) {
        int i_row = i0 + row;
        if ((!(c >= NRHS)) && (i_row < N)) {
            float s = B[i_row * NRHS + c];
            for (int k = 0; k < i0; k++)
                s -= L[i_row * N + k] * B[k * NRHS + c];
            part[row][threadIdx.x] = s;
        }
        __syncthreads();
        if (row == 0 && (!(c >= NRHS))) {
            for (int i = i0; i < i0 + 8; i++) {
                if (!(i < N))
                    break;
                float s = part[i - i0][threadIdx.x];
                for (int k = i0; k < i; k++)
                    s -= L[i * N + k] * sol[k - i0][threadIdx.x];
                B[i * NRHS + c] = sol[i - i0][threadIdx.x] = s / L[i * N + i];
            }
        }
        __syncthreads();
    }
}
"""

MACRO_AFTER = """\
__global__ void trsm_macro(const float* __restrict__ L, const float* __restrict__ Bin, float* __restrict__ X)
{
    const int col = threadIdx.x + blockIdx.x * blockDim.x;
    const int row1 = threadIdx.y;
    __shared__ float part[16][32];
    __shared__ float sol[16][32];
    for (int i0 = 0; i0 < N; i0 += 16) {
        int row_row = i0 + row1;
        if ((col < NRHS) && (row_row < N)) {
            float acc = Bin[row_row * NRHS + col];
            for (int j = 0; j < i0; ++j) {
                acc -= LM(row_row, j) * XM(j, col);
            }
            part[row1][threadIdx.x] = acc;
        }
        __syncthreads();
        if (row1 == 0 && (col < NRHS)) {
            for (int row = i0; row < i0 + 16; row++) {
                if (!(row < N))
                    break;
                float acc = part[row - i0][threadIdx.x];
                for (int j = i0; j < row; ++j) {
                    acc -= LM(row, j) * sol[j - i0][threadIdx.x];
                }
                XM(row, col) = sol[row - i0][threadIdx.x] = acc / LM(row, row);
            }
        }
        __syncthreads();
    }
}
"""


def _apply(src: bytes, kernel: str, options: dict[str, str] | None = None) -> Applied:
    out = run_pass(make_pass(PASS, options), src, "cuda", kernel)
    assert isinstance(out, Applied), out
    return out


def test_the_zoo_kernel_golden() -> None:
    src = _zoo_kernel()
    out = _apply(src, "trsm_cols")
    text = out.text.decode()
    assert text[text.index("__global__"):].rstrip() + "\n" == ZOO_AFTER
    assert out.launch == LaunchChange((32, 8, 1), "same-coverage")
    assert out.launch.resolve((8192 // 128, 1, 1), (128, 1, 1)) == ((256, 1, 1), (32, 8, 1))  # ceil(NRHS / 32) blocks of 256
    whole = _apply(ZOO.read_bytes(), "trsm_cols").text.decode()  # the whole app: only the kernel changes
    assert ZOO_AFTER in whole and whole.count("trsm_cols<<<NRHS / 128, 128>>>(dL, dB);") == 1


def test_several_rows_a_thread_share_one_loop() -> None:
    """per=2: each thread sums two rows 8 apart in one loop over k (the solved element loaded once for both); a row past
    the end is clamped to the block's first row, whose partial sum is never read."""
    text = _apply(_zoo_kernel(), "trsm_cols", {"per": "2"}).text.decode()
    assert "for (int i0 = 0; i0 < N; i0 += 16) {" in text and "__shared__ float part[16][32];" in text
    assert """            for (int k = 0; k < i0; k++) {
                s0 -= L[i_row0 * N + k] * B[k * NRHS + c];
                s1 -= L[i_row1 * N + k] * B[k * NRHS + c];
            }
            part[row + 8 * 0][threadIdx.x] = s0;
            part[row + 8 * 1][threadIdx.x] = s1;""" in text
    assert "int i_row1 = i0 + row + 8;\n        if (!(i_row1 < N))\n            i_row1 = i0;" in text


def test_the_macro_twin_golden() -> None:
    src = MACRO.format(n=512, nrhs=8192).encode()
    out = _apply(src, "trsm_macro", {"rows": "16"})
    text = out.text.decode()
    assert text[text.index("__global__"):] == MACRO_AFTER  # `row` is taken: the thread's row is row1
    assert out.launch is not None and out.launch.resolve((70, 1, 1), (128, 1, 1)) == ((280, 1, 1), (32, 16, 1))


REFUSALS = {
    "another column written": ("B[i * NRHS + c] = s / L[i * N + i];", "B[i * NRHS + c + 1] = s / L[i * N + i];", "two different layouts"),
    "L written": ("B[i * NRHS + c] = s / L[i * N + i];", "B[i * NRHS + c] = s / L[i * N + i];\n        L[i * N + i] = 1.0f;",
                  "exactly one array written"),
    "a strided column": ("B[k * NRHS + c]", "B[c * N + k]", "stride one"),
    "a square inner loop": ("k < i;", "k < N;", "up to i"),
    "a second thread axis": ("if (c >= NRHS)", "int r = blockIdx.y * blockDim.y + threadIdx.y;\n    if (c >= NRHS || r > 0)",
                             "a second thread dimension"),
    "rows that depend on the column": ("i < N;", "i < N - c;", "the same for every thread"),
    "a column read through L": ("L[i * N + k] * B", "L[c * N + k] * B", "only the solved B"),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_refusals(case: str) -> None:
    old, new, why = REFUSALS[case]
    src = _zoo_kernel().decode()
    assert old in src
    out = run_pass(make_pass(PASS), src.replace(old, new, 1).encode(), "cuda", "trsm_cols")
    assert isinstance(out, Refused) and why in out.reason, out


def test_a_plain_column_sum_is_not_this_shape() -> None:
    src = b"""__global__ void colsum(const float* a, float* out, int m, int n)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < n) {
        float s = 0.0f;
        for (int i = 0; i < m; i++)
            s += a[i * n + c];
        out[c] = s;
    }
}
"""
    out = run_pass(make_pass(PASS), src, "cuda", "colsum")
    assert isinstance(out, Refused) and "one loop over the rows" in out.reason


def test_the_search_tries_it_first() -> None:
    """In the space before the tilings and launch-config; on the zoo kernel's MEP (8192 columns, 64 blocks of 128) the
    search tries its five steps first in round one: the strip forms (cost.FIRST_PASSES), then the row blocks the cost model
    ranks first (it reads them: 32 x 8 threads a block, 8x the threads)."""
    from mep_util import ParamSpec, manifest

    from s2s.lang.kernel_facts import kernel_facts
    from s2s.optimize.proposers.base import State
    from s2s.optimize.proposers.builtin import BuiltinProposer

    space = search_space()
    assert {f"{PASS}{{rows=16}}", f"{PASS}{{rows=32}}"} <= set(space)
    assert space.index(PASS) < min(space.index("contraction-blocking"), space.index("launch-config{block=32}"))
    src = _zoo_kernel()
    m = manifest("trsm_cols", "cuda", "kernel.cu", [ParamSpec("L", "const float*", "in", "float", count=512 * 512),
                                                    ParamSpec("B", "float*", "inout", "float", count=512 * 8192)],
                 (64, 1, 1), (128, 1, 1))
    state = State(manifest=m, original=src, kernel="trsm_cols", dialect="cuda", facts=kernel_facts(src, "cuda", "trsm_cols"))
    got = [c.origin.removeprefix("pass:") for c in BuiltinProposer().propose(state)]
    assert all(x.startswith(PASS) for x in got[:5]) and not any(x.startswith(PASS) for x in got[5:]), got  # the strips, then rows


@needs_nvcc
def test_nvcc_compiles_the_rewrites(tmp_path: Path) -> None:
    nvcc = shutil.which("nvcc")
    assert nvcc is not None
    files = []
    for stem, src, kernel, opts in (("zoo", ZOO.read_bytes(), "trsm_cols", {}), ("zoo2", ZOO.read_bytes(), "trsm_cols", {"per": "2"}),
                                    ("macro", MACRO.format(n=45, nrhs=70).encode(), "trsm_macro", {"rows": "16"})):
        files.append(tmp_path / f"{stem}.cu")
        files[-1].write_bytes(_apply(src, kernel, opts).text)
    proc = nvcc_checks(nvcc, ["-c", "-arch=sm_90"], files, tmp_path, 300)
    assert proc.returncode == 0, proc.stderr[-3000:]


def _emulate(tmp: Path, name: str, before: bytes, after: bytes, launches: tuple[Launch, Launch], n: int, nrhs: int,
             rhs_apart: bool) -> str:
    """Both kernels threaded (barriers real) on one L (unit lower-triangular-ish: |L[i][k]| < 0.01 off the diagonal,
    1..3 on it) and one B; "SAME" when the solutions agree within 1e-5 relative, else the worst element."""
    gxx = shutil.which("g++")
    assert gxx is not None
    fill = [f"static float L_[{n * n}], B_[{n * nrhs}], Xa[{n * nrhs}], Xb[{n * nrhs}];",
            "int main() {", "unsigned s = 12345u;",
            f"for (int i = 0; i < {n * n}; ++i) {{ s = s * 1664525u + 1013904223u; L_[i] = ((float)(s >> 8) / 16777216.0f - 0.5f) * 0.02f; }}",
            f"for (int i = 0; i < {n}; ++i) L_[i * {n} + i] = 1.0f + (float)(i % 3);",
            f"for (int i = 0; i < {n * nrhs}; ++i) {{ s = s * 1664525u + 1013904223u; B_[i] = (float)(s >> 8) / 16777216.0f * 2.0f - 1.0f; }}",
            f"for (int i = 0; i < {n * nrhs}; ++i) {{ Xa[i] = {'-7.0f' if rhs_apart else 'B_[i]'}; Xb[i] = Xa[i]; }}"]
    args = ("L_, B_, Xa", "L_, B_, Xb") if rhs_apart else ("L_, Xa", "L_, Xb")
    for (suffix, launch), a in zip((("before", launches[0]), ("after", launches[1])), args):
        g, b = ", ".join(f"{v}u" for v in launch.grid), ", ".join(f"{v}u" for v in launch.block)
        fill.append(f"s2s_launch([&] {{ {name}_{suffix}({a}); }}, s2s_dim3{{{g}}}, s2s_dim3{{{b}}});")
    fill += ["double worst = 0; int at = -1;",
             f"for (int i = 0; i < {n * nrhs}; ++i) {{ double d = std::fabs((double)Xa[i] - Xb[i]) / (1e-30 + std::fabs((double)Xa[i]));"
             " if (!(d <= worst)) { worst = d; at = i; } }",
             'if (worst > 1e-5 || Xa[0] == -7.0f) { printf("DIFF %g at %d\\n", worst, at); return 1; }',
             'printf("SAME\\n"); return 0; }']
    program = tmp / f"{name}.cpp"
    exe = tmp / name
    text = SHIM + kernel_text(before, name, "before") + "\n" + kernel_text(after, name, "after") + "\n" + "\n".join(fill)
    build = compile_threaded(gxx, program, text, exe)
    assert build.returncode == 0, build.stderr[-3000:]
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    return run.stdout.strip() or run.stderr.strip() or f"exit {run.returncode}"


ODD = (45, 70)  # N: 5 full row blocks of 8 and one of 5; NRHS: 2 full blocks of 32 columns and one of 6


@pytest.mark.slow
@pytest.mark.parametrize("kind,rows,per", [("zoo", 8, 1), ("zoo", 4, 1), ("zoo", 32, 1), ("macro", 16, 1), ("macro", 8, 1),
                                          ("zoo", 8, 2), ("macro", 4, 4)])
def test_matches_the_original_by_emulation(tmp_path: Path, kind: str, rows: int, per: int) -> None:
    """Every column solved as the original does, at N = 45 and NRHS = 70 (the original launched as the app does, 128
    threads a block; the rewrite as its launch rule says); a mutant that skips the last row block's partial sums must
    differ."""
    n, nrhs = ODD
    name = "trsm_cols" if kind == "zoo" else "trsm_macro"
    before = _zoo_kernel(n, nrhs) if kind == "zoo" else MACRO.format(n=n, nrhs=nrhs).encode()
    out = _apply(before, name, {"rows": str(rows), "per": str(per)})
    grid, block = (-(-nrhs // 128), 1, 1), (128, 1, 1)
    assert out.launch is not None
    launches = (Launch(grid, block), Launch(*out.launch.resolve(grid, block)))
    assert launches[1] == Launch((4, 1, 1), (32, rows, 1))
    assert _emulate(tmp_path, name, before, out.text, launches, n, nrhs, kind == "macro") == "SAME"
    mutant = re.sub(rb"for \(int (k|j) = 0; \1 < i0;", rb"for (int \1 = 0; \1 < i0 - 1;", out.text, count=1)
    stale = re.sub(rb"= sol\[\w+ - i0\]\[threadIdx.x\] = ", b"= ", out.text)  # the solved rows never reach shared memory
    assert stale != out.text and _emulate(tmp_path, name, before, stale, launches, n, nrhs, kind == "macro").startswith("DIFF")
    assert mutant != out.text
    assert _emulate(tmp_path, name, before, mutant, launches, n, nrhs, kind == "macro").startswith("DIFF")


CL = """\
#define N 45
#define NRHS 70
__kernel void trsm_cl(__global const float* L, __global float* B)
{
    int c = get_global_id(0);
    if (c >= NRHS)
        return;
    for (int i = 0; i < N; i++) {
        float s = B[i * NRHS + c];
        for (int k = 0; k < i; k++)
            s -= L[i * N + k] * B[k * NRHS + c];
        B[i * NRHS + c] = s / L[i * N + i];
    }
}
"""


@pytest.mark.slow
def test_opencl_on_pocl_matches_the_original() -> None:
    """The OpenCL form (`__local` arrays, barriers that fence global memory too) on PoCL at N = 45, NRHS = 70: the
    original with 128 work-items, the rewrite with 128 x 8 in groups of 32 x 8 (the launch rule in work-items)."""
    cl = pytest.importorskip("pyopencl")
    import numpy as np

    out = run_pass(make_pass(PASS), CL.encode(), "opencl", "trsm_cl")
    assert isinstance(out, Applied) and out.launch is not None, out
    grid, block = out.launch.resolve((1, 1, 1), (128, 1, 1))
    assert (grid, block) == ((4, 1, 1), (32, 8, 1))
    n, nrhs = 45, 70
    rng = np.random.default_rng(7)
    lo = (rng.random((n, n), dtype=np.float32) - 0.5) * 0.02
    lo[np.diag_indices(n)] = 1.0 + np.arange(n) % 3
    b = rng.random((n, nrhs), dtype=np.float32) * 2 - 1
    ctx = cl.Context(devices=[cl.get_platforms()[0].get_devices()[0]])
    queue = cl.CommandQueue(ctx)
    results = []
    for text, name, glob, loc in ((CL, "trsm_cl", (128,), (128,)),
                                  (out.text.decode(), "trsm_cl", (grid[0] * block[0], block[1]), block[:2])):
        prog = cl.Program(ctx, text).build()
        mf = cl.mem_flags
        dl = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=lo)
        db = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=b)
        getattr(prog, name)(queue, glob, loc, dl, db)
        got = np.empty_like(b)
        cl.enqueue_copy(queue, got, db)
        queue.finish()
        results.append(got)
    assert not np.array_equal(results[0], b)  # the original solved something
    assert np.allclose(results[1], results[0], rtol=1e-5, atol=0), np.abs(results[1] - results[0]).max()
    assert np.allclose(np.tril(lo).astype(np.float64) @ results[0], b, atol=1e-4)  # L X = B: a real solve
