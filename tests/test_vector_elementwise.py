"""vector-elementwise: the zoo's streaming kernels rewritten (text), compiled (nvcc), and run against the original on PoCL
at sizes that are not a multiple of four, through the MEP's own checks (poison, guard regions, every output)."""
from __future__ import annotations

import shutil
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
