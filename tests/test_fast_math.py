"""fast-math's x / sqrtf(y) -> x * rsqrtf(y) (issue 15: the zoo's nbody_soa ran an IEEE square root and division per
pair): the rewrite keeps every expression's parse, the refusals hold, the rewritten zoo kernels compile for sm_90 in
both orders with smem-allpairs, the rsqrtf error stays inside the MEP's tolerance, and the cost model ranks the rewrite
among the first candidates of the built-in search."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT, needs_nvcc
from session_builds import nvcc_checks

from s2s.lang.edits import Refused
from s2s.lang.parsing import parse
from s2s.optimize import cost
from s2s.optimize.registry import Applied, make_pass, run_pass


def _fast(src: str, dialect: str = "cuda", kernel: str = "k") -> Applied | Refused:
    return run_pass(make_pass("fast-math", {}), src.encode(), dialect, kernel)


def _body(expr: str, decls: str = "") -> str:
    return (f"__global__ void k(const float* a, const float* b, float* o, int n) {{ int i = threadIdx.x; float s = 0.0f;"
            f" {decls} s += {expr}; o[i] = s; }}")


@pytest.mark.parametrize(("expr", "want"), [
    ("a[i] / sqrtf(b[i])", "a[i] * rsqrtf(b[i])"),
    ("2.0f - a[i] / sqrtf(b[i]) * 3.0f", "2.0f - a[i] * rsqrtf(b[i]) * 3.0f"),
    ("(a[i] + 1.0f) / sqrtf(b[i] + a[i])", "(a[i] + 1.0f) * rsqrtf(b[i] + a[i])"),
    ("a[i] / b[i] / sqrtf(b[i])", "a[i] / b[i] * rsqrtf(b[i])"),
    ("a[i] / (sqrtf(b[i]))", "a[i] * (rsqrtf(b[i]))"),
    ("1.0f / sqrtf(b[i]) + 1.f / sqrtf(a[i] / sqrtf(b[i]))", "rsqrtf(b[i]) + rsqrtf(a[i] * rsqrtf(b[i]))"),
    ("1 / sqrtf(b[i])", "1 * rsqrtf(b[i])"),
    ("a[i] / sqrt(r2)", "a[i] * rsqrtf(r2)"),
])
def test_division_by_a_square_root_keeps_the_parse(expr: str, want: str) -> None:
    """Only `/` and the function's name change: `*` binds as `/` does, so the tree around is the same; nested and
    parenthesized divisors, integer numerators and C++'s float `sqrt` overload included."""
    out = _fast(_body(expr, "float r2 = b[i] + 1.0f;"))
    assert isinstance(out, Applied), out
    assert f"s += {want};" in out.text.decode()
    assert parse(out.text, "cuda").root_node.has_error is False


def test_compound_division_and_the_divisor_local() -> None:
    src = ("__global__ void k(const float* a, float* o, float* w, int n) { int i = threadIdx.x;"
           " float r = sqrtf(a[i] * a[i] + 1.0f); float u = sqrtf(a[i] + 2.0f);"
           " o[i] = a[i] / r + 2.0f / (r); o[i] /= r; w[i] /= sqrtf(a[i] + 3.0f); w[i] += u * u / u; }")
    out = _fast(src)
    assert isinstance(out, Applied)
    text = out.text.decode()
    assert "float r = rsqrtf(a[i] * a[i] + 1.0f);" in text and "o[i] = a[i] * r + 2.0f * (r); o[i] *= r;" in text
    assert "w[i] *= rsqrtf(a[i] + 3.0f);" in text
    assert "float u = sqrtf(a[i] + 2.0f);" in text and "u * u / u" in text  # u is also a factor: left as it is


@pytest.mark.parametrize(("src", "why"), [
    ("__global__ void k(const double* a, double* o) { int i = threadIdx.x; double d = a[i]; o[i] = a[i] / sqrt(d); }",
     "no x / sqrtf(y)"),
    ("__global__ void k(const float* a, float* o) { int i = threadIdx.x; o[i] = a[i] / sqrtf(a[i]) + a[i] / sqrtf(a[i] + 1.0f); }", ""),
])
def test_double_precision_stays(src: str, why: str) -> None:
    """The double `sqrt` is never touched (a double argument); a float one is."""
    out = _fast(src)
    if why:
        assert isinstance(out, Refused) and why in out.reason
    else:
        assert isinstance(out, Applied) and out.text.decode().count("rsqrtf") == 2


def test_local_used_otherwise_assigned_or_a_parameter_is_left() -> None:
    for body in ("float r = sqrtf(a[i]); o[i] = a[i] / r + r;",  # a term, not only a divisor
                 "float r = sqrtf(a[i]); r = r + 1.0f; o[i] = a[i] / r;",  # assigned again
                 "float r = sqrtf(a[i]); o[i] = a[i] / r; { float r = 2.0f; o[i] += r; }"):  # declared twice
        src = f"__global__ void k(const float* a, float* o) {{ int i = threadIdx.x; {body} }}"
        out = _fast(src)
        assert isinstance(out, Refused), body
    out = _fast("__global__ void k(const float* a, float* o, float r) { int i = threadIdx.x; o[i] = a[i] / r; }")
    assert isinstance(out, Refused)


def test_opencl_and_a_helper_copy() -> None:
    cl = "__kernel void k(__global const float* a, __global float* o) { int i = get_global_id(0); o[i] = a[i] / sqrt(a[i]); }"
    out = _fast(cl, "opencl")
    assert isinstance(out, Refused) and "OpenCL" in out.reason
    src = ("__device__ float pot(float m, float r2) { return m / sqrtf(r2); }\n"
           "__global__ void k(const float* a, float* o) { int i = threadIdx.x; o[i] = pot(a[i], a[i] + 1.0f); }\n")
    out = _fast(src)
    assert isinstance(out, Applied)
    text = out.text.decode()
    assert "__device__ float pot(float m, float r2) { return m / sqrtf(r2); }" in text  # the application's helper unchanged
    assert "__device__ float pot_fast(float m, float r2) { return m * rsqrtf(r2); }" in text and "o[i] = pot_fast(a[i]" in text


# -- helpers through helpers, overloads, tanhf (a Monte-Carlo step's and an activation's spellings) ----------------------
HELPERS = """\
__device__ __forceinline__ float root_of(float v) { return sqrtf(v); }
__device__ __forceinline__ double root_of(double v) { return sqrt(v); }
__device__ __forceinline__ float decay(float v) { return expf(v); }
__device__ __forceinline__ double decay(double v) { return exp(v); }
__device__ float span(float a, float b) { return root_of(a * a + b * b); }
__device__ float score(float a, float b) { return (1.0f + span(a, b)) * decay(-2.0f * span(a, b)); }

__global__ void k(const float* a, const float* b, float* w, double* d, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    w[i] = score(a[i], b[i]) + tanhf(a[i] - b[i]);
    d[i] = decay((double)a[i]) + root_of((double)b[i]);
}
"""


def test_math_behind_two_helpers_and_overloads() -> None:
    """expf two calls deep (score -> decay), behind a name with a double overload, and tanhf in the kernel: the helpers
    on the way are copied (decay with both its overloads, the double one unchanged, so `decay((double)x)` still runs
    `exp`), the ones with nothing to change (span, root_of) are not, and copies come callee first."""
    out = _fast(HELPERS)
    assert isinstance(out, Applied), out
    text = out.text.decode()
    assert "__device__ __forceinline__ float decay_fast(float v) { return __expf(v); }" in text
    assert "__device__ __forceinline__ double decay_fast(double v) { return exp(v); }" in text
    assert "__device__ float score_fast(float a, float b) { return (1.0f + span(a, b)) * decay_fast(-2.0f * span(a, b)); }" in text
    assert "w[i] = score_fast(a[i], b[i]) + s2s_tanhf(a[i] - b[i]);" in text
    assert "d[i] = decay_fast((double)a[i]) + root_of((double)b[i]);" in text
    assert "span_fast" not in text and "root_of_fast" not in text
    assert text.index("float s2s_tanhf(") < text.index("decay_fast(float") < text.index("score_fast(float") < text.index("__global__")
    assert HELPERS.split("\n__global__")[0] in text  # the application's helpers unchanged
    assert parse(out.text, "cuda").root_node.has_error is False


@needs_nvcc
def test_math_behind_helpers_compiles_and_computes_the_same(tmp_path: Path) -> None:
    """The rewrite builds for sm_90 (the tanh.approx.f32 path); with the intrinsics mapped back to the exact functions
    (what the rewrite changes is then only which copy runs) every thread's outputs match the original's bit for bit."""
    from emulate_cuda import Launch, same_outputs

    out = _fast(HELPERS)
    assert isinstance(out, Applied)
    nvcc = shutil.which("nvcc")
    assert nvcc is not None
    (tmp_path / "v.cu").write_bytes(out.text)
    r = subprocess.run([nvcc, "-arch=sm_90", "-c", str(tmp_path / "v.cu"), "-o", str(tmp_path / "v.o")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    helpers = HELPERS.split("\n__global__")[0].encode()  # defined once in the program that runs both kernels
    exact = b"#define __expf expf\n#define __logf logf\n#define __sinf sinf\n#define __cosf cosf\n" + out.text.replace(helpers, b"", 1)
    n = 1000
    launch = Launch((8, 1, 1), (128, 1, 1))
    assert same_outputs(tmp_path, "k", HELPERS.encode(), exact, (launch, launch), {"a": n, "b": n, "w": n, "d": n},
                        {"n": str(n)}) == "SAME"


# -- the zoo's n-body kernels ----------------------------------------------------------------------
def _zoo_state(name: str, work: Path):  # type: ignore[no-untyped-def]
    from s2s.extract.mep_writer import make_mep
    from s2s.lang.kernel_facts import kernel_facts
    from s2s.mep.manifest import load
    from s2s.optimize.proposers.base import State

    dest = work / name
    make_mep(str(ROOT / "bench" / "zoo" / name), name, str(dest))
    m = load(dest)
    src = (dest / m.kernel_file).read_bytes()
    return State(manifest=m, original=src, kernel=m.kernel, dialect="cuda", facts=kernel_facts(src, "cuda", m.kernel))


@pytest.mark.slow
@needs_nvcc
def test_zoo_nbody_rewrites_compile_for_sm90_in_both_orders(tmp_path: Path) -> None:
    """nbody_soa: fast-math alone and with smem-allpairs in either order (the same text), built with nvcc -arch=sm_90;
    nbody_aos already calls rsqrtf and is refused."""
    from s2s.optimize.candidate import Candidate
    from s2s.optimize.proposers.builtin import apply_pipeline

    soa = _zoo_state("nbody_soa", tmp_path)
    made = {p: apply_pipeline(p, soa) for p in ("fast-math", "smem-allpairs{tile=256},fast-math", "fast-math,smem-allpairs{tile=256}",
                                               "smem-allpairs{tile=128},fast-math")}
    assert all(isinstance(c, Candidate) for c in made.values()), made
    texts = {p: c.source.decode() for p, c in made.items() if isinstance(c, Candidate)}
    assert "p -= m[j] * rsqrtf(dx * dx + dy * dy + dz * dz + 1e-4f);" in texts["fast-math"]
    assert "p -= m_s[j - t] * rsqrtf(" in texts["smem-allpairs{tile=256},fast-math"]
    assert texts["smem-allpairs{tile=256},fast-math"] == texts["fast-math,smem-allpairs{tile=256}"]
    assert "sqrtf(" not in texts["fast-math"].replace("rsqrtf(", "")
    aos = apply_pipeline("fast-math", _zoo_state("nbody_aos", tmp_path))
    assert isinstance(aos, str) and "no x / sqrtf(y)" in aos
    nvcc = shutil.which("nvcc")
    assert nvcc is not None
    files = []
    for n, text in enumerate(texts.values()):
        files.append(tmp_path / f"v{n}.cu")
        files[-1].write_text(text)
    # the kernel files include "../zoo.h" as their source does; the two orders' equal texts are compiled once
    r = nvcc_checks(nvcc, ["-arch=sm_90", "-c", "-I", str(ROOT / "bench" / "zoo" / "nbody_soa")], files, tmp_path, 900)
    assert r.returncode == 0, f"{dict(zip((f.name for f in files), texts))}: {r.stderr[-2000:]}"


def _potential(x: np.ndarray, y: np.ndarray, z: np.ndarray, m: np.ndarray, rows: np.ndarray, rng: np.random.Generator | None,
               bias: float = 0.0) -> np.ndarray:
    """nbody_soa's p for `rows`, accumulated in float32 in j order: the reference `m / sqrtf(r2)` (rng None), or
    `m * rsqrtf(r2)` with rsqrtf the exact value off by a relative error of up to 2 ulp (random per pair, or `bias` ulp)."""
    f32, ulp = np.float32, 2.0 ** -23
    p = np.zeros(rows.size, dtype=f32)
    xi, yi, zi = x[rows], y[rows], z[rows]
    for j in range(x.size):
        dx, dy, dz = x[j] - xi, y[j] - yi, z[j] - zi
        r2 = (dx * dx + dy * dy + dz * dz + f32(1e-4)).astype(f32)
        if rng is None:
            term = (m[j] / np.sqrt(r2)).astype(f32)
        else:
            err = bias * ulp if bias else rng.uniform(-2, 2, size=rows.size) * ulp
            rs = (1.0 / np.sqrt(r2.astype(np.float64)) * (1.0 + err)).astype(f32)
            term = (m[j] * rs).astype(f32)
        p = np.where(rows == j, p, (p - term).astype(f32))  # the self term is skipped
    return p


@pytest.mark.slow
def test_rsqrtf_error_stays_inside_the_nbody_mep_tolerance() -> None:
    """The zoo's nbody_soa MEP (32768 bodies; x, y, z and m uniform in [-1, 1] as the harness fills them; rtol 1e-3,
    atol 1e-4 of the largest reference value): rsqrtf's documented 2 ulp, random or all one way, keeps every sampled
    output inside the harness's bound err <= rtol |ref| + atol max|ref| with a margin of at least 20x (measured: 1.3% of it at worst)."""
    n = 32768
    for seed in (1234, 1235):
        rng = np.random.default_rng(seed)
        x, y, z, m = (rng.uniform(-1, 1, n).astype(np.float32) for _ in range(4))
        rows = np.sort(rng.choice(n, 192, replace=False))
        ref = _potential(x, y, z, m, rows, None)
        bound = 1e-3 * np.abs(ref) + 1e-4 * float(np.abs(ref).max())  # the sample's max: no larger than the whole output's
        for bias in (0.0, 2.0, -2.0):
            fast = _potential(x, y, z, m, rows, rng, bias)
            worst = float((np.abs(fast.astype(np.float64) - ref) / bound).max())
            assert worst < 0.05, (seed, bias, worst)


def test_cost_model_counts_the_division_and_the_square_root() -> None:
    """`m / sqrtf(r2)` costs two rounded operations in the model's arithmetic, `m * rsqrtf(r2)` one MUFU: the compute
    bound drops, and at an equal (memory) bound the rewrite ranks before a candidate with the same arithmetic."""
    slow = (b"__global__ void k(const float* x, const float* m, float* o, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x;"
            b" if (i >= n) return; float p = 0.0f; for (int j = 0; j < n; j++) { float d = x[j] - x[i];"
            b" p -= m[j] / sqrtf(d * d + 1e-4f); } o[i] = p; }")
    fast = slow.replace(b"m[j] / sqrtf(", b"m[j] * rsqrtf(")
    grid, block, scalars = (256, 1, 1), (128, 1, 1), {"n": 32768.0}
    ps, pf = (cost.predict(s, "cuda", "k", grid, block, scalars) for s in (slow, fast))
    assert ps is not None and pf is not None
    per_pair = 32768.0 * 32768
    # 5 flops as written (the division one of them), plus a square root and the rest of the division; or an rsqrtf
    assert ps.flops / per_pair == pytest.approx(5 + 2 * cost.SLOW_FLOPS - 1) and pf.flops / per_pair == pytest.approx(5 + cost.MUFU_FLOPS)
    same_time = cost.Prediction(1e-3, "dram", ps.flops, 1e9, 1e9, 0.5)
    rewritten = cost.Prediction(1e-3, "dram", pf.flops, 1e9, 1e9, 0.5)
    assert cost.rank({"restrict-const": same_time, "fast-math": rewritten, "loop-unroll": same_time}) == \
        ["fast-math", "restrict-const", "loop-unroll"]
    integer = b"__global__ void k(const int* a, int* o, int n) { int i = threadIdx.x; for (int j = 0; j < n; j++) o[i] += a[j] / 3; }"
    pi = cost.predict(integer, "cuda", "k", (1, 1, 1), (128, 1, 1), {"n": 64.0})
    assert pi is not None and pi.flops == 0  # an integer division is not floating-point work


@pytest.mark.slow
def test_builtin_search_tries_fast_math_early_on_nbody_soa(tmp_path: Path) -> None:
    """Round 1 of the built-in proposer on the zoo's nbody_soa: fast-math's space starts with its tiled form
    `fast-math,smem-allpairs{tile=256}` (the H200 plan run: 3.07x, fast-math alone 2.26x, the tiling alone 1.30x), second
    by the model alone (beside the tiling it ties with); fast-math alone before restrict-const and loop-unroll, which
    predict the same time with more arithmetic; first with the H200 profile of the original (latency-limited at 12%
    occupancy: less arithmetic shortens its chains)."""
    from s2s.mep.profile_ncu import Profile
    from s2s.optimize.proposers.builtin import BuiltinProposer

    state = _zoo_state("nbody_soa", tmp_path)
    state.round = 1
    order = [c.origin for c in BuiltinProposer().propose(state)]
    assert order.index("pass:fast-math,smem-allpairs{tile=256}") < 5, order
    assert order.index("pass:fast-math") < min(order.index("pass:restrict-const"), order.index("pass:loop-unroll{factor=4}"))
    state.feedback["original"] = Profile("nbody_soa", 5441.28, 0.1, 5130.5, 12.12, 25.23, 16.53, "latency")
    assert [c.origin for c in BuiltinProposer().propose(state)][0].startswith("pass:fast-math")
