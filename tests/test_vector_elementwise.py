"""vector-elementwise: the zoo's streaming kernels rewritten (text), compiled (nvcc), and run against the original on PoCL
at sizes that are not a multiple of four, through the MEP's own checks (poison, guard regions, every output)."""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import ROOT
from mep_util import ParamSpec, make_mep, manifest
from session_builds import nvcc_checks

from s2s.lang.edits import Refused
from s2s.lang.kernel_facts import kernel_facts
from s2s.optimize.candidate import Candidate
from s2s.optimize.registry import Applied, make_pass, run_pass, search_space

ZOO = ROOT / "bench" / "zoo"

AXPBY_CL = """\
#define INC 1
#define Y(i) y[(i) * INC]
__kernel void axpby(__global const float* x, __global float* y, const float a, const float b, const int n)
{
    for (int i = get_global_id(0); i < n; i += get_global_size(0))
        Y(i) = a * x[i] + b * Y(i);
}
"""
SPLIT_CL = """\
__kernel void split(const int n, __global const int* a, __global int* b, __global const float* w, __global float* out)
{
    int i = get_global_id(0);
    if (i >= n)
        return;
    int k = a[i] + i;
    b[i] = k;
    out[i] = w[i] * (float)k;
}
"""


def _zoo(name: str) -> bytes:
    return (ZOO / name / f"{name}.cu").read_bytes()


def test_zoo_streams_take_four_elements_per_thread() -> None:
    """axpy (one thread per element) shrinks its grid by 4; axpby_strided (grid-stride loop, y written only through the
    macro Y(i), which the role analysis reads as an input) stores y as float4, keeps its launch or fills the device."""
    axpy = run_pass(make_pass("vector-elementwise"), _zoo("axpy"), "cuda", "axpy")
    assert isinstance(axpy, Applied), axpy
    assert axpy.launch is not None and (axpy.launch.grid_from, axpy.launch.per_item) == ("coarsen-x", 4)
    assert b"s2s_y[s2s_c] = a * s2s_x[s2s_c] + s2s_y[s2s_c];" in axpy.text
    src = _zoo("axpby_strided")
    plain = run_pass(make_pass("vector-elementwise"), src, "cuda", "axpby_strided")
    filled = run_pass(make_pass("vector-elementwise", {"fill": "1"}), src, "cuda", "axpby_strided")
    assert isinstance(plain, Applied) and isinstance(filled, Applied), (plain, filled)
    assert plain.launch is None and filled.launch is not None and filled.launch.grid_from == "extent:270336"
    assert b"reinterpret_cast<float4*>(y)[s2s_q] = make_float4(" in plain.text
    assert b"s2s_y[s2s_c] = alpha * s2s_x[s2s_c] + beta * s2s_y[s2s_c];" in plain.text
    assert plain.text.count(b"Y(i) = alpha * X(i) + beta * Y(i);") == 2  # the tail, and the misaligned fallback
    assert "vector-elementwise" in search_space() and "vector-elementwise{fill=1}" in search_space()


@pytest.mark.parametrize("name", ["dot_atomic", "histo_global", "ger", "transpose_gather", "jacobi2d_macro"])
def test_zoo_kernels_that_are_not_elementwise_are_refused(name: str) -> None:
    out = run_pass(make_pass("vector-elementwise"), _zoo(name), "cuda", name)
    assert isinstance(out, Refused) and out.reason, out


@pytest.mark.slow
def test_zoo_streams_compile(tmp_path: Path) -> None:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("no nvcc")
    files = []
    for name, opts in (("axpy", {}), ("axpby_strided", {}), ("axpby_strided", {"fill": "1"})):
        out = run_pass(make_pass("vector-elementwise", opts), _zoo(name), "cuda", name)
        assert isinstance(out, Applied), out
        files.append(tmp_path / f"{name}_{len(files)}.cu")
        files[-1].write_bytes(out.text.replace(b'"../zoo.h"', f'"{ZOO / "zoo.h"}"'.encode()))
    proc = nvcc_checks(nvcc, ["-c", "-arch=sm_90", "-Werror", "all-warnings"], files, tmp_path, 300)
    assert proc.returncode == 0, proc.stderr[-3000:]


def _state(mep: Path, kernel: str, text: str, params: list[ParamSpec], grid: int, block: int):  # type: ignore[no-untyped-def]
    from s2s.mep.manifest import load
    from s2s.optimize.proposers.base import State

    make_mep(mep, text, manifest(kernel, "opencl", "kernel.cl", params, (grid, 1, 1), (block, 1, 1), repetitions=3,
                                 warmup=1, timeout_s=60.0))
    return State(manifest=load(mep), original=text.encode(), kernel=kernel, dialect="opencl",
                 facts=kernel_facts(text.encode(), "opencl", kernel))


def _evaluate(mep: Path, state, cand: Candidate):  # type: ignore[no-untyped-def]
    from s2s.mep.evaluate import evaluate
    from s2s.optimize.loop import write_variant

    write_variant(mep, state.manifest.kernel_file, cand)
    return evaluate(mep, cand.id)


@pytest.mark.slow
def test_grid_stride_axpby_on_pocl(tmp_path: Path) -> None:
    """n = 1003 over 48 work-items: whole quads, then the three left over; with fill the grid grows to 270336 work-items
    (each of the 250 quads still done once). Dropping the scalar tail leaves y's last three elements stale: caught."""
    pytest.importorskip("pyopencl")
    from s2s.optimize.proposers.builtin import apply_pipeline

    n = 1003
    params = [ParamSpec("x", "__global const float*", "in", "float", count=n, space="global"),
              ParamSpec("y", "__global float*", "inout", "float", count=n, space="global"),
              ParamSpec("a", "const float", "scalar", "float", value=1.5),
              ParamSpec("b", "const float", "scalar", "float", value=-0.5),
              ParamSpec("n", "const int", "scalar", "int", value=n)]
    state = _state(tmp_path / "mep", "axpby", AXPBY_CL, params, 48, 16)
    for pipeline in ("vector-elementwise", "vector-elementwise{fill=1}"):
        cand = apply_pipeline(pipeline, state)
        assert isinstance(cand, Candidate), cand
        assert (cand.launch is None) == (pipeline == "vector-elementwise")
        m = _evaluate(tmp_path / "mep", state, cand)
        assert m.verdict == "ok", (pipeline, m.verdict, m.messages)
    cand = apply_pipeline("vector-elementwise", state)
    assert isinstance(cand, Candidate)
    head, tail = cand.source.split(b"    for (int i = (n) / 4 * 4", 1)
    broken = head + b"    if (0) for (int i = (n) / 4 * 4" + tail
    assert _evaluate(tmp_path / "mep", state, replace(cand, source=broken)).verdict == "wrong-output"


@pytest.mark.slow
def test_one_element_per_thread_with_early_return_on_pocl(tmp_path: Path) -> None:
    """n = 1001 (the last quad partial), an int and a float array written, one of them write-only: the grid shrinks to
    a quarter and every element still matches; a vector branch that forgets the partial quad writes past n: caught."""
    pytest.importorskip("pyopencl")
    from s2s.optimize.proposers.builtin import apply_pipeline

    n = 1001
    params = [ParamSpec("n", "const int", "scalar", "int", value=n),
              ParamSpec("a", "__global const int*", "in", "int", count=n, space="global"),
              ParamSpec("b", "__global int*", "out", "int", count=n, space="global"),
              ParamSpec("w", "__global const float*", "in", "float", count=n, space="global"),
              ParamSpec("out", "__global float*", "out", "float", count=n, space="global")]
    state = _state(tmp_path / "mep", "split", SPLIT_CL, params, 1024, 64)
    cand = apply_pipeline("vector-elementwise", state)
    assert isinstance(cand, Candidate), cand
    assert cand.launch is not None and cand.launch.grid[0] == 256 and cand.launch_rules == ("coarsen-x",)
    m = _evaluate(tmp_path / "mep", state, cand)
    assert m.verdict == "ok", (m.verdict, m.messages)
    broken = cand.source.replace(b"s2s_q * 4 + 3 < (n)", b"s2s_q * 4 < (n)")
    assert broken != cand.source
    assert _evaluate(tmp_path / "mep", state, replace(cand, source=broken)).verdict != "ok"


# -- spellings of real elementwise kernels: a table read at another index, 64-bit indices, any element type ----------
GATHER_CU = """\
__global__ void drift(float* pos, float* vel, const float* home, const float* pull, float dt, int period, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    vel[i] = 0.5f * vel[i] + dt * (home[i % period] - pos[i]) * pull[0];
    pos[i] += vel[i];
}
"""
WIDE_CU = """\
__global__ void damp(const double* src, double* dst, double k, long long n)
{
    int64_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n) {
        dst[t] = k * src[t] - dst[t];
    }
}
"""
TEMPLATE_CU = """\
#include <cuda_fp16.h>
template <typename T>
__global__ void ramp(T* out, const T* in, float step, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = (T)((float)in[i] + step * (float)i);
}
template __global__ void ramp<__half>(__half*, const __half*, float, int);
template __global__ void ramp<float>(float*, const float*, float, int);
template __global__ void ramp<double>(double*, const double*, float, int);
"""


def test_a_read_only_table_read_at_another_index_stays_a_gather() -> None:
    """`home[i % period]` and the broadcast `pull[0]` are reads of arrays the kernel never writes: each element keeps
    them as they are, the arrays read and written at i move in float4 words. A table the kernel also writes is refused."""
    out = run_pass(make_pass("vector-elementwise"), GATHER_CU.encode(), "cuda", "drift")
    assert isinstance(out, Applied), out
    text = out.text.decode()
    assert "reinterpret_cast<const float4*>(pos)[s2s_q]" in text and "reinterpret_cast<const float4*>(vel)[s2s_q]" in text
    assert "home[i % period]" in text and "pull[0]" in text and "float4*>(home)" not in text
    assert "int i = s2s_q * 4 + s2s_c;" in text
    written = GATHER_CU.replace("pos[i] += vel[i];", "pos[i] += vel[i]; vel[i % period] = 0.0f;")
    refused = run_pass(make_pass("vector-elementwise"), written.encode(), "cuda", "drift")
    assert isinstance(refused, Refused) and "vel[i % period]" in refused.reason


@pytest.mark.parametrize("offset", [0, 1])
def test_gather_and_wide_elements_compute_the_same_emulated(tmp_path: Path, offset: int) -> None:
    """Both rewrites against their originals, every thread run on the CPU (n = 1001 and 998: the last quad partial), the
    buffers aligned or one element off (the scalar path): every output byte for byte the same."""
    from emulate_cuda import Launch, same_outputs

    n, period = 1001, 7
    drift = run_pass(make_pass("vector-elementwise"), GATHER_CU.encode(), "cuda", "drift")
    assert isinstance(drift, Applied)
    before, after = Launch((8, 1, 1), (128, 1, 1)), Launch((2, 1, 1), (128, 1, 1))  # coarsen-x: a quarter of the blocks
    counts = {"pos": n, "vel": n, "home": period, "pull": 1}
    assert same_outputs(tmp_path, "drift", GATHER_CU.encode(), drift.text, (before, after), counts,
                        {"dt": "0.25f", "period": str(period), "n": str(n)}, offset=offset) == "SAME"
    n = 998
    damp = run_pass(make_pass("vector-elementwise"), WIDE_CU.encode(), "cuda", "damp")
    assert isinstance(damp, Applied), damp
    assert "s2s_quad<double>" in damp.text.decode() and "int64_t s2s_q = " in damp.text.decode()
    assert same_outputs(tmp_path, "damp", WIDE_CU.encode(), damp.text, (before, after), {"src": n, "dst": n},
                        {"k": "1.5", "n": str(n)}, offset=offset) == "SAME"
    swapped = damp.text.replace(b"s2s_quad<double>{{s2s_dst[0], s2s_dst[1]", b"s2s_quad<double>{{s2s_dst[1], s2s_dst[0]")
    assert swapped != damp.text  # the word path runs where the buffers are aligned: a wrong word there is caught
    assert (same_outputs(tmp_path, "damp", WIDE_CU.encode(), swapped, (before, after), {"src": n, "dst": n},
                         {"k": "1.5", "n": str(n)}, offset=offset) == "SAME") == (offset == 1)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_any_element_type_moves_in_one_aligned_word(tmp_path: Path) -> None:
    """A template kernel (instantiated for __half, float, double) takes s2s_quad<T>: the build for sm_90 stores four
    halves as one 8-byte word, four floats as one 16-byte word; float3 (12 bytes) makes no word and is refused."""
    out = run_pass(make_pass("vector-elementwise"), TEMPLATE_CU.encode(), "cuda", "ramp")
    assert isinstance(out, Applied), out
    text = out.text.decode()
    assert text.index("struct alignas(") < text.index("template <typename T>\n__global__")
    assert "reinterpret_cast<s2s_quad<T>*>(out)[s2s_q] = s2s_quad<T>{{" in text
    (tmp_path / "v.cu").write_bytes(out.text)
    nvcc = shutil.which("nvcc")
    assert nvcc is not None
    r = subprocess.run([nvcc, "-arch=sm_90", "-ptx", str(tmp_path / "v.cu"), "-o", str(tmp_path / "v.ptx")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    ptx = (tmp_path / "v.ptx").read_text()
    assert "st.global.v4.u16" in ptx and "st.global.v4.f32" in ptx and "st.global.v2.f64" in ptx  # 8, 16, 2 x 16 bytes
    f3 = TEMPLATE_CU.replace("template <typename T>\n", "").replace("T*", "float3*").replace("(T)", "").split("template __global__")[0]
    f3 = f3.replace("(float)in[i] + step * (float)i", "make_float3(in[i].x + step, in[i].y, in[i].z)").replace("out[i] = (", "out[i] = (")
    refused = run_pass(make_pass("vector-elementwise"), f3.encode(), "cuda", "ramp")
    assert isinstance(refused, Refused) and "float3" in refused.reason


ROWS_CU = """\
__global__ void shift_rows(float* rows, const float* bias, float scale, int width)
{
    int r = blockIdx.x;
    int base = r * width;
    for (int c = threadIdx.x; c < width; c = c + blockDim.x)
        rows[base + c] = scale * rows[base + c] + bias[c];
}
"""


def test_a_block_walking_its_row_moves_it_in_words() -> None:
    """A block-stride loop over the block's own row (`rows[base + c]`, base from blockIdx after declarations): words
    start at `rows + base`, checked for alignment per row (every thread of the row takes the same path), the launch is
    kept. An offset from the thread's own index, or one the loop changes, is refused."""
    out = run_pass(make_pass("vector-elementwise"), ROWS_CU.encode(), "cuda", "shift_rows")
    assert isinstance(out, Applied), out
    text = out.text.decode()
    assert out.launch is None and "int s2s_q = threadIdx.x;" in text and "s2s_q += blockDim.x" in text
    assert "reinterpret_cast<const float4*>((rows + (base + 0)))[s2s_q]" in text
    assert "reinterpret_cast<const float4*>(bias)[s2s_q]" in text
    for bad in (ROWS_CU.replace("int base = r * width;", "int base = r * width + threadIdx.y;"),
                ROWS_CU.replace("+ bias[c];", "+ bias[c], base += 0;")):
        refused = run_pass(make_pass("vector-elementwise"), bad.encode(), "cuda", "shift_rows")
        assert isinstance(refused, Refused), bad


@pytest.mark.parametrize("width", [1004, 1003])
def test_rows_in_words_compute_the_same_emulated(tmp_path: Path, width: int) -> None:
    """9 rows of 1004 (every row's start aligned: the word path) or 1003 floats (rows start off the 16-byte boundary
    in turn: each row takes its own path): every element byte for byte the original's; a swapped word is caught where
    the word path runs."""
    from emulate_cuda import Launch, same_outputs

    out = run_pass(make_pass("vector-elementwise"), ROWS_CU.encode(), "cuda", "shift_rows")
    assert isinstance(out, Applied)
    launch = Launch((9, 1, 1), (64, 1, 1))
    counts, scalars = {"rows": 9 * width, "bias": width}, {"scale": "1.5f", "width": str(width)}
    assert same_outputs(tmp_path, "shift_rows", ROWS_CU.encode(), out.text, (launch, launch), counts, scalars) == "SAME"
    swapped = out.text.replace(b"make_float4(s2s_rows[0], s2s_rows[1]", b"make_float4(s2s_rows[1], s2s_rows[0]")
    assert swapped != out.text
    assert same_outputs(tmp_path, "shift_rows", ROWS_CU.encode(), swapped, (launch, launch), counts, scalars) != "SAME"


SELECT_CU = """\
__global__ void mark(const int n, const unsigned char* __restrict__ cur, const unsigned char* __restrict__ ref,
                     unsigned char* __restrict__ flag, float* __restrict__ level, float* __restrict__ seen)
{
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i >= n) return;
    int d = cur[i] > ref[i] ? cur[i] - ref[i] : ref[i] - cur[i];
    if (d > 40)
        flag[i] = 255;
    if (flag[i] == 0) {
        float v = 0.75f * level[i] + 0.25f * (float)cur[i];
        level[i] = v < 8.0f ? 8.0f : v;
    } else {
        seen[i] = (float)d;
    }
}
"""


def test_an_element_that_selects_with_if_and_else_takes_four_a_thread() -> None:
    """`if` / `else` and `c ? a : b` choose what an element computes: the element's code runs four times on registers
    as written; an array some elements do not store (`flag`, `seen`) is loaded first, so the word writes back what
    those elements held. A return, loop or break inside a branch still refuses."""
    out = run_pass(make_pass("vector-elementwise"), SELECT_CU.encode(), "cuda", "mark")
    assert isinstance(out, Applied), out
    text = out.text.decode()
    for arr in ("flag", "seen", "level", "cur", "ref"):
        assert f"*>({arr})[s2s_q];" in text, arr  # each array loaded as one word
    assert "if (s2s_flag[s2s_c] == 0) {" in text
    for body in ("if (d > 40) return;", "for (int k = 0; k < 2; k++) flag[i] = 1;", "while (d > 4) d /= 2;"):
        bad = SELECT_CU.replace("flag[i] = 255;", body)
        refused = run_pass(make_pass("vector-elementwise"), bad.encode(), "cuda", "mark")
        assert isinstance(refused, Refused) and "element" in refused.reason, (body, refused)


@pytest.mark.parametrize("offset", [0, 1])
def test_selecting_elements_compute_the_same_emulated(tmp_path: Path, offset: int) -> None:
    """Every thread run on the CPU against the original (n = 1001: the last quad partial; buffers aligned, or one
    element off: the scalar path): every output byte for byte; a word path that does not load what it stores
    conditionally (the store-only form) is caught."""
    from emulate_cuda import Launch, same_outputs

    n = 1001
    out = run_pass(make_pass("vector-elementwise"), SELECT_CU.encode(), "cuda", "mark")
    assert isinstance(out, Applied)
    before, after = Launch((8, 1, 1), (128, 1, 1)), Launch((2, 1, 1), (128, 1, 1))
    counts = {"cur": n, "ref": n, "flag": n, "level": n, "seen": n}
    assert same_outputs(tmp_path, "mark", SELECT_CU.encode(), out.text, (before, after), counts, {"n": str(n)}, offset=offset) == "SAME"
    unloaded = out.text.replace(b"float s2s_seen[4] = {s2s_seen4.x, s2s_seen4.y, s2s_seen4.z, s2s_seen4.w};",
                                b"float s2s_seen[4] = {0.0f, 0.0f, 0.0f, 0.0f}; (void)s2s_seen4;")
    assert unloaded != out.text
    assert (same_outputs(tmp_path, "mark", SELECT_CU.encode(), unloaded, (before, after), counts, {"n": str(n)},
                         offset=offset) == "SAME") == (offset == 1)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_selecting_elements_compile(tmp_path: Path) -> None:
    out = run_pass(make_pass("vector-elementwise"), SELECT_CU.encode(), "cuda", "mark")
    assert isinstance(out, Applied)
    (tmp_path / "mark.cu").write_bytes(out.text)
    nvcc = shutil.which("nvcc")
    assert nvcc is not None
    proc = nvcc_checks(nvcc, ["-c", "-arch=sm_90", "-Werror", "all-warnings"], [tmp_path / "mark.cu"], tmp_path, 600)
    assert proc.returncode == 0, proc.stderr[-3000:]
