"""The stencil passes: footprints from the kernel model, real runs on PoCL against the original, nvcc builds of CUDA output.

Sizes divide by none of the blocks, the mapping may start past 0, and the guards are early exits, if blocks and a
zero-padding test inside the window loops: each tile must hold every point read and load no point the original
does not read.
"""
from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import ROOT, needs_nvcc
from mep_util import ParamSpec, make_mep, manifest
from session_builds import nvcc_checks

from s2s.lang.affine import Poly
from s2s.lang.kernel_facts import kernel_facts
from s2s.lang.kernel_model import kernel_model
from s2s.lang.stencil import analyse, divide, rectangles
from s2s.optimize.candidate import Candidate
from s2s.optimize.registry import Applied, make_pass, run_pass

pytestmark = pytest.mark.usefixtures("pocl_unoptimized")  # outputs compared, no timing asserted (conftest)

GOLDEN = ROOT / "tests" / "golden" / "passes"
NX, NY = 45, 37

JACOBI_CL = """\
__kernel void jacobi(__global const float* in, __global float* out, const int nx, const int ny)
{
    int x = get_global_id(0);
    int y = get_global_id(1);
    if (x > 0 && x < nx - 1 && y > 0 && y < ny - 1)
        out[y * nx + x] = 0.2f * (in[y * nx + x] + in[y * nx + x - 1] + in[y * nx + x + 1] + in[(y - 1) * nx + x] +
                                  in[(y + 1) * nx + x]);
}
"""
CONV_CL = (GOLDEN / "stencil_tiling_conv_window.cl").read_text().split("// ----- INPUT\n")[1].split("// -----")[0]
EDGE_CL = (GOLDEN / "stencil_tiling_edge_copy.cl").read_text().split("// ----- INPUT\n")[1].split("// -----")[0]
# an offset mapping (interior points from 1), a 3x5 window, and two fields of different pitch, one updated in place
FIELDS_CL = """\
__kernel void fields(__global const float* ex, __global const float* ey, __global float* hz, const int nx, const int ny)
{
    int j = get_global_id(0) + 1;
    int i = get_global_id(1) + 1;
    if (i >= nx - 1 || j >= ny - 2)
        return;
    float s = 0.0f;
    for (int a = -1; a <= 1; a++)
        for (int b = -2; b <= 2; b++)
            s += ex[(i + a) * (ny + 1) + j + b];
    hz[i * ny + j] = hz[i * ny + j] - 0.1f * s + 0.7f * (ey[(i + 1) * ny + j] - ey[i * ny + j]);
}
"""


def _params(kernel: str) -> list[ParamSpec]:
    g = "__global const float*"
    if kernel == "jacobi":
        return [ParamSpec("in", g, "in", "float", count=NX * NY, space="global"),
                ParamSpec("out", "__global float*", "out", "float", count=NX * NY, space="global"),
                ParamSpec("nx", "const int", "scalar", "int", value=NX), ParamSpec("ny", "const int", "scalar", "int", value=NY)]
    if kernel == "conv3":
        return [ParamSpec("img", g, "in", "float", count=NX * NY, space="global"),
                ParamSpec("filt", "__constant float*", "in", "float", count=9, space="constant"),
                ParamSpec("out", "__global float*", "out", "float", count=NX * NY, space="global"),
                ParamSpec("w", "const int", "scalar", "int", value=NX), ParamSpec("h", "const int", "scalar", "int", value=NY)]
    if kernel == "relax":
        return [ParamSpec("u", g, "in", "float", count=NY * NY, space="global"), ParamSpec("f", g, "in", "float", count=NY * NY, space="global"),
                ParamSpec("u_new", "__global float*", "out", "float", count=NY * NY, space="global"),
                ParamSpec("n", "const int", "scalar", "int", value=NY), ParamSpec("h2", "const float", "scalar", "float", value=0.5)]
    return [ParamSpec("ex", g, "in", "float", count=NX * (NY + 1), space="global"),
            ParamSpec("ey", g, "in", "float", count=(NX + 1) * NY, space="global"),
            ParamSpec("hz", "__global float*", "inout", "float", count=NX * NY, space="global"),
            ParamSpec("nx", "const int", "scalar", "int", value=NX), ParamSpec("ny", "const int", "scalar", "int", value=NY)]


def _state(src: str, kernel: str, mep: Path):  # type: ignore[no-untyped-def]
    from s2s.mep.manifest import load
    from s2s.optimize.proposers.base import State

    grid = (48, 40, 1)  # work-items: the original's 16 x 8 groups cover the 45 x 37 domain with spare threads
    make_mep(mep, src, manifest(kernel, "opencl", "kernel.cl", _params(kernel), grid, (16, 8, 1), repetitions=3, warmup=1,
                                timeout_s=60.0))
    return State(manifest=load(mep), original=src.encode(), kernel=kernel, dialect="opencl",
                 facts=kernel_facts(src.encode(), "opencl", kernel))


def _evaluate(mep: Path, state, cand: Candidate):  # type: ignore[no-untyped-def]
    from s2s.mep.evaluate import evaluate
    from s2s.optimize.loop import write_variant

    write_variant(mep, state.manifest.kernel_file, cand)
    return evaluate(mep, cand.id)


# -- the analysis ---------------------------------------------------------------------------------------------------
def test_divide_splits_an_index_by_its_pitch() -> None:
    nx, ny = Poly.name("NX"), Poly.name("NY")
    assert divide(nx * Poly.const(-1) + Poly.const(3), nx) == (Poly.const(-1), Poly.const(3))
    assert divide(nx * ny * Poly.const(2) - nx, nx * ny) == (Poly.const(2), -nx)
    assert divide((ny + Poly.const(1)) * Poly.name("dy") + Poly.const(1), ny + Poly.const(1)) == (Poly.name("dy"), Poly.const(1))
    assert divide(Poly.const(-4097), Poly.const(4096)) == (Poly.const(-1), Poly.const(-1))


def test_rectangles_cover_the_footprint_exactly() -> None:
    cross = frozenset({(0, 0), (0, 1), (0, -1), (1, 0), (-1, 0)})
    assert rectangles(cross) == [((-1, 1), (0, 0)), ((0, 0), (-1, 1))]
    box = frozenset((a, b) for a in range(-2, 3) for b in range(-1, 2))
    assert rectangles(box) == [((-2, 1 + 1), (-1, 1))]
    ell = frozenset({(0, 0), (0, 1), (1, 0)})
    rects = rectangles(ell)
    assert {(y, x) for (y0, y1), (x0, x1) in rects for y in range(y0, y1 + 1) for x in range(x0, x1 + 1)} == ell


def test_footprint_and_guards_of_a_window_stencil() -> None:
    src = FIELDS_CL.encode()
    facts = kernel_facts(src, "opencl", "fields")
    model = kernel_model(src, "opencl", "fields")
    assert facts is not None and model is not None
    st = analyse(src, "opencl", model, (facts.body_start, facts.body_end))
    assert not isinstance(st, str)
    assert st.vars == {"x": "j", "y": "i"} and st.offsets == {"x": Poly.const(1), "y": Poly.const(1)}
    ex, ey = st.arrays
    assert ex.name == "ex" and ex.pitch == Poly.name("ny") + Poly.const(1) and len(ex.points()) == 15
    assert (ex.extent("y"), ex.extent("x")) == ((-1, 1), (-2, 2))
    assert ey.name == "ey" and sorted(ey.points()) == [(0, 0, 0), (0, 1, 0)]
    assert st.skipped == ("hz is also written by the kernel (in place)",)
    bounds = {(b.axis, b.upper, b.value.text()) for b in ex.reads[0].bounds}
    assert bounds == {("y", True, "nx - 1"), ("x", True, "ny - 2")}


def test_a_moved_pointer_is_not_a_stencil() -> None:
    moved = JACOBI_CL.replace("    int x = get_global_id(0);\n", "    in += nx;\n    int x = get_global_id(0);\n")
    out = run_pass(make_pass("stencil-tiling"), moved.encode(), "opencl")
    assert not isinstance(out, Applied) and "moves the pointer in" in out.reason


# -- PoCL: the tiled kernels against the originals ------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("src,kernel,pipeline", [
    (JACOBI_CL, "jacobi", "stencil-tiling{block=16x8}"), (JACOBI_CL, "jacobi", "stencil-tiling{block=32x4}"),
    (CONV_CL, "conv3", "stencil-tiling{block=16x16}"), (FIELDS_CL, "fields", "stencil-tiling{block=16x4}"),
    (EDGE_CL, "relax", "stencil-tiling{block=16x8}")])
def test_stencil_tiling_matches_the_original_on_pocl(tmp_path: Path, src: str, kernel: str, pipeline: str) -> None:
    pytest.importorskip("pyopencl")
    from s2s.optimize.proposers.builtin import apply_pipeline

    state = _state(src, kernel, tmp_path / "mep")
    cand = apply_pipeline(pipeline, state)
    assert isinstance(cand, Candidate), cand
    assert b"barrier(CLK_LOCAL_MEM_FENCE)" in cand.source and b"_tile[" in cand.source
    launch = cand.launch or state.manifest.launch  # 16x8 is the original's own block: no launch change
    block = tuple(int(v) for v in pipeline.split("block=")[1].rstrip("}").split("x"))
    assert launch.block[:2] == block and launch.grid[0] % block[0] == 0 and launch.grid[0] >= NX and launch.grid[1] >= NY
    m = _evaluate(tmp_path / "mep", state, cand)
    assert m.verdict == "ok", (m.verdict, m.messages)
    assert m.outputs and all(o.ok for o in m.outputs)


@pytest.mark.slow
def test_a_missing_halo_row_is_caught_on_pocl(tmp_path: Path) -> None:
    """Not vacuous: the same tile without its last halo row gives wrong outputs."""
    pytest.importorskip("pyopencl")
    from s2s.optimize.proposers.builtin import apply_pipeline

    state = _state(JACOBI_CL, "jacobi", tmp_path / "mep")
    cand = apply_pipeline("stencil-tiling{block=16x8}", state)
    assert isinstance(cand, Candidate), cand
    broken = cand.source.replace(b"ly < 10;", b"ly < 9;")
    assert broken != cand.source
    assert _evaluate(tmp_path / "mep", state, replace(cand, source=broken)).verdict != "ok"


# -- stencil-streaming: 2.5-D blocking on PoCL -----------------------------------------------------------------------
SX, SY, SZ = 21, 13, 11
ZLOOP_CL = (GOLDEN / "stencil_streaming_zloop_block.cl").read_text().split("// ----- INPUT\n")[1].split("// -----")[0]
GRID3_CL = """\
#define AT(a, i, j, k) a[((k) * ny + (j)) * nx + (i)]
__kernel void laplace(__global const float* in, __global float* out, const float h2inv, const int nx, const int ny, const int nz)
{
    int i = get_global_id(0);
    int j = get_global_id(1);
    int k = get_global_id(2);
    if (i < 1 || i >= nx - 1 || j < 1 || j >= ny - 1 || k < 1 || k >= nz - 1)
        return;
    float lap = AT(in, i - 1, j, k) + AT(in, i + 1, j, k) + AT(in, i, j - 1, k) + AT(in, i, j + 1, k);
    AT(out, i, j, k) = h2inv * (lap + AT(in, i, j, k - 1) + AT(in, i, j, k + 1) - 6.0f * AT(in, i, j, k));
}
"""


EDGE3_CL = """\
__kernel void edge(__global const float* u, __global float* v, const int nx, const int ny, const int nz)
{
    int i = get_global_id(0);
    int j = get_global_id(1);
    int k = get_global_id(2);
    if (i >= nx || j >= ny || k >= nz) return;
    if (i == 0 || k == 0 || i == nx - 1 || k == nz - 1) {
        v[(k * ny + j) * nx + i] = u[(k * ny + j) * nx + i];
        return;
    }
    v[(k * ny + j) * nx + i] = 0.5f * u[(k * ny + j) * nx + i] + u[(k * ny + j) * nx + i - 1] + u[(k * ny + j) * nx + i + 1] +
                               u[((k - 1) * ny + j) * nx + i] + u[((k + 1) * ny + j) * nx + i];
}
"""


def _stream_state(src: str, kernel: str, mep: Path):  # type: ignore[no-untyped-def]
    from s2s.mep.manifest import load
    from s2s.optimize.proposers.base import State

    n = SX * SY * SZ
    g = "__global const float*"
    scal = [ParamSpec("nx", "const int", "scalar", "int", value=SX), ParamSpec("ny", "const int", "scalar", "int", value=SY),
            ParamSpec("nz", "const int", "scalar", "int", value=SZ)]
    if kernel == "heat":
        params = [ParamSpec("u", g, "in", "float", count=n, space="global"),
                  ParamSpec("unew", "__global float*", "out", "float", count=n, space="global"),
                  ParamSpec("c0", "const float", "scalar", "float", value=0.4), ParamSpec("c1", "const float", "scalar", "float", value=0.1)]
        grid, block = (32, 16, 1), (16, 8, 1)
    elif kernel == "edge":
        params = [ParamSpec("u", g, "in", "float", count=n, space="global"),
                  ParamSpec("v", "__global float*", "out", "float", count=n, space="global")]
        grid, block = (32, 16, 12), (16, 4, 2)
    else:
        params = [ParamSpec("in", g, "in", "float", count=n, space="global"),
                  ParamSpec("out", "__global float*", "out", "float", count=n, space="global"),
                  ParamSpec("h2inv", "const float", "scalar", "float", value=0.25)]
        grid, block = (32, 16, 12), (16, 4, 2)
    make_mep(mep, src, manifest(kernel, "opencl", "kernel.cl", params + scal, grid, block, repetitions=3, warmup=1, timeout_s=60.0))
    return State(manifest=load(mep), original=src.encode(), kernel=kernel, dialect="opencl",
                 facts=kernel_facts(src.encode(), "opencl", kernel))


def test_stream_z_launch_rule() -> None:
    from s2s.lang.edits import LaunchChange

    # laplace3d's 512^3 points in (32, 4, 2) blocks become (32, 8) blocks of threads marching 64 points of z each
    assert LaunchChange((32, 8, 1), "stream-z", 64).resolve((16, 128, 256), (32, 4, 2)) == ((16, 64, 8), (32, 8, 1))
    assert LaunchChange((32, 8, 1), "stream-z", 64).resolve((1, 1, 5), (16, 4, 2)) == ((1, 1, 1), (32, 8, 1))


@pytest.mark.slow
@pytest.mark.parametrize("src,kernel,pipeline", [
    (ZLOOP_CL, "heat", "stencil-streaming{block=16x8}"), (ZLOOP_CL, "heat", "stencil-streaming{block=32x4}"),
    (GRID3_CL, "laplace", "stencil-streaming{block=16x4 zchunk=4}"), (GRID3_CL, "laplace", "stencil-streaming{block=16x8 zchunk=16}"),
    (EDGE3_CL, "edge", "stencil-streaming{block=16x4 zchunk=4}")])
def test_stencil_streaming_matches_the_original_on_pocl(tmp_path: Path, src: str, kernel: str, pipeline: str) -> None:
    pytest.importorskip("pyopencl")
    from s2s.optimize.proposers.builtin import apply_pipeline

    state = _stream_state(src, kernel, tmp_path / "mep")
    cand = apply_pipeline(pipeline, state)
    assert isinstance(cand, Candidate), cand
    assert b"_zp1" in cand.source and b"barrier(CLK_LOCAL_MEM_FENCE)" in cand.source
    launch = cand.launch or state.manifest.launch
    if kernel != "heat":  # 12 points of z in threads became ceil(12 / zchunk) work-groups of one marching thread each
        chunk = int(pipeline.split("zchunk=")[1].rstrip("}"))
        assert cand.launch_rules == ("stream-z",) and launch.block[2] == 1 and launch.grid[2] == -(-12 // chunk)
    m = _evaluate(tmp_path / "mep", state, cand)
    assert m.verdict == "ok", (m.verdict, m.messages)
    assert m.outputs and all(o.ok for o in m.outputs)


@pytest.mark.slow
def test_a_stale_register_is_caught_on_pocl(tmp_path: Path) -> None:
    """Not vacuous: without the rotation of the column's registers the z-1 and z+1 terms are wrong."""
    pytest.importorskip("pyopencl")
    from s2s.optimize.proposers.builtin import apply_pipeline

    state = _stream_state(ZLOOP_CL, "heat", tmp_path / "mep")
    cand = apply_pipeline("stencil-streaming{block=16x8}", state)
    assert isinstance(cand, Candidate), cand
    broken = cand.source.replace(b"u_zm1 = u_z0;", b"")
    assert broken != cand.source
    assert _evaluate(tmp_path / "mep", state, replace(cand, source=broken)).verdict != "ok"


@pytest.mark.slow
@needs_nvcc
def test_zoo_stencils_compile(tmp_path: Path) -> None:
    """The zoo's stencil apps with their kernels rewritten (after delinearize-2d where the grid is 1-D) build with nvcc."""
    from s2s.optimize.registry import build_pipeline

    zoo = ROOT / "bench" / "zoo"
    expect = {"jacobi2d": "stencil-tiling", "conv2d_3x3": "stencil-tiling{block=32x16}", "fdtd_hz": "stencil-tiling",
              "heat3d_zloop": "stencil-streaming", "laplace3d": "stencil-streaming{zchunk=16}",
              "jacobi2d_macro": "delinearize-2d,stencil-tiling", "fdtd_e": "delinearize-2d,stencil-tiling"}
    files = []
    for name, pipeline in expect.items():
        text = (zoo / name / f"{name}.cu").read_bytes()
        for p in build_pipeline(pipeline):
            out = run_pass(p, text, "cuda", name)
            assert isinstance(out, Applied), (name, pipeline, out)
            text = out.text
        assert b"_tile[" in text
        files.append(tmp_path / "apps" / f"{name}.cu")  # the apps include "../zoo.h"
        files[-1].parent.mkdir(exist_ok=True)
        files[-1].write_bytes(text)
    shutil.copy(zoo / "zoo.h", tmp_path / "zoo.h")
    nvcc = shutil.which("nvcc")
    assert nvcc is not None
    proc = nvcc_checks(nvcc, ["-c", "-arch=sm_90"], files, tmp_path, 300)
    assert proc.returncode == 0, proc.stderr[-4000:]


# -- hoist-invariants --------------------------------------------------------------------------------------------------
BLEND_CL = (GOLDEN / "hoist_invariants_nested.cl").read_text().split("// ----- INPUT\n")[1].split("// -----")[0]


@pytest.mark.slow
@pytest.mark.parametrize("m", [7, 1])
def test_hoisted_loads_match_the_original_on_pocl(tmp_path: Path, m: int) -> None:
    """Seven columns, and one (a loop that never runs writes nothing: the harness refuses such a reference, so the
    guard `0 < m ? s[i] : 0` is checked in the text)."""
    pytest.importorskip("pyopencl")
    from s2s.mep.manifest import load
    from s2s.optimize.proposers.base import State
    from s2s.optimize.proposers.builtin import apply_pipeline

    n, g = 45, "__global const float*"
    params = [ParamSpec("a", g, "in", "float", count=n * m * 4, space="global"),
              ParamSpec("s", g, "in", "float", count=n, space="global"), ParamSpec("w", g, "in", "float", count=m, space="global"),
              ParamSpec("out", "__global float*", "out", "float", count=n * m, space="global"),
              ParamSpec("n", "const int", "scalar", "int", value=n), ParamSpec("m", "const int", "scalar", "int", value=m)]
    mep = tmp_path / "mep"
    make_mep(mep, BLEND_CL, manifest("blend", "opencl", "kernel.cl", params, (64, 1, 1), (32, 1, 1), repetitions=3, warmup=1,
                                     timeout_s=60.0))
    state = State(manifest=load(mep), original=BLEND_CL.encode(), kernel="blend", dialect="opencl",
                  facts=kernel_facts(BLEND_CL.encode(), "opencl", "blend"))
    cand = apply_pipeline("hoist-invariants", state)
    assert isinstance(cand, Candidate), cand
    assert b"s_h = 0 < m ? s[i]" in cand.source and cand.launch is None
    res = _evaluate(mep, state, cand)
    assert res.verdict == "ok", (res.verdict, res.messages)


# -- CUDA output compiles -------------------------------------------------------------------------------------------
def _cuda(src: str) -> str:
    out = src.replace("__kernel", "__global__").replace("__global const", "const").replace("__global ", "")
    out = out.replace("__constant float*", "const float*")
    for axis, d in (("x", "0"), ("y", "1")):
        out = out.replace(f"get_global_id({d})", f"blockIdx.{axis} * blockDim.{axis} + threadIdx.{axis}")
    return out


@pytest.mark.slow
@needs_nvcc
def test_cuda_outputs_compile(tmp_path: Path) -> None:
    from s2s.optimize.registry import example

    files = [tmp_path / "example.cu", tmp_path / "example_streaming.cu", tmp_path / "example_hoist.cu"]
    for f, name in zip(files, ("stencil-tiling", "stencil-streaming", "hoist-invariants")):
        f.write_text(example(name)[1])
    out = run_pass(make_pass("hoist-invariants"), _cuda(BLEND_CL).encode(), "cuda", "blend")
    assert isinstance(out, Applied), out
    files.append(tmp_path / "blend.cu")
    files[-1].write_bytes(out.text)
    for path in sorted(GOLDEN.glob("stencil_*.cu")):
        expected = path.read_text().split("// ----- EXPECTED\n")[1]
        if "REFUSED" not in expected:
            files.append(tmp_path / path.name)
            files[-1].write_text(expected)
    for src, kernel in ((JACOBI_CL, "jacobi"), (CONV_CL, "conv3"), (FIELDS_CL, "fields")):
        for double in (False, True):
            text = _cuda(src).replace("float", "double") if double else _cuda(src)
            out = run_pass(make_pass("stencil-tiling"), text.encode(), "cuda", kernel)
            assert isinstance(out, Applied), (kernel, out)
            files.append(tmp_path / f"{kernel}{int(double)}.cu")
            files[-1].write_bytes(out.text)
    for src, kernel in ((ZLOOP_CL, "heat"), (GRID3_CL, "laplace"), (EDGE3_CL, "edge")):
        cuda = _cuda(src).replace("get_global_id(2)", "blockIdx.z * blockDim.z + threadIdx.z")
        out = run_pass(make_pass("stencil-streaming"), cuda.encode(), "cuda", kernel)
        assert isinstance(out, Applied), (kernel, out)
        files.append(tmp_path / f"{kernel}_streaming.cu")
        files[-1].write_bytes(out.text)
    nvcc = shutil.which("nvcc")
    assert nvcc is not None
    proc = nvcc_checks(nvcc, ["-c", "-arch=sm_90"], files, tmp_path, 300)
    assert proc.returncode == 0, proc.stderr[-4000:]
