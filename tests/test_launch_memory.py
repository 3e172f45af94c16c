"""Launch-shape changes and memory the host sizes for the block (issue 27 item 4): an OpenCL `__local` argument sized by
clSetKernelArg(k, i, size, NULL) and CUDA dynamic shared memory (`extern __shared__`, the launch's third argument)
stay sized for the old block when a pass changes it; mep.toml records one size, not a function of the block, so
launch-config, and any pipeline of the built-in proposer that changes the block, refuses with the reason; unless
mep.toml writes the count as an expression of the block (s2s/optimize/launch_sizes.py): the launch then carries the
count for the new block, and the variant runs with it on PoCL."""
from __future__ import annotations

from pathlib import Path

import pytest
from mep_util import ParamSpec, make_mep, manifest

from s2s.lang.edits import Refused
from s2s.lang.kernel_facts import kernel_facts
from s2s.optimize.candidate import Candidate
from s2s.optimize.registry import build_pipeline, run_pass

TRANSPOSE_CL = """\
__kernel void transpose(__global float* out, __global const float* in, __local float* tile, int n)
{
    int x = get_global_id(0);
    int y = get_global_id(1);
    tile[get_local_id(1) * get_local_size(0) + get_local_id(0)] = in[y * n + x];
    barrier(CLK_LOCAL_MEM_FENCE);
    out[x * n + y] = tile[get_local_id(1) * get_local_size(0) + get_local_id(0)];
}
"""

STAGED_CU = """\
__global__ void staged(float* out, const float* in, int n)
{
    extern __shared__ float stage[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        stage[i - blockIdx.x * blockDim.x] = in[i];
        out[i] = 2.0f * stage[i - blockIdx.x * blockDim.x];
    }
}
"""

# dynamic shared memory behind a device helper outside the kernel (the CUDA samples' SharedMemory<T> idiom)
HELPER_CU = """\
__device__ float* dynamic_smem() { extern __shared__ float smem[]; return smem; }
__global__ void scaled(float* out, const float* in, int n)
{
    float* s = dynamic_smem();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        s[i - blockIdx.x * blockDim.x] = in[i];
        out[i] = 0.5f * s[i - blockIdx.x * blockDim.x];
    }
}
"""


def test_launch_config_refuses_a_host_sized_local_argument() -> None:
    out = run_pass(build_pipeline("launch-config{block=128}")[0], TRANSPOSE_CL.encode(), "opencl", "transpose")
    assert isinstance(out, Refused) and "__local argument tile is sized by the host" in out.reason


def test_launch_config_refuses_extern_shared_memory() -> None:
    """The kernel indexes its dynamic shared memory through the global index only (nothing else ties it to the
    block shape): the extern declaration alone is the reason."""
    for step in ("launch-config{block=128}", "launch-config{block=64}"):
        out = run_pass(build_pipeline(step)[0], STAGED_CU.encode(), "cuda", "staged")
        assert isinstance(out, Refused) and "dynamic shared memory (stage, extern __shared__)" in out.reason, out


def _state(tmp: Path, src: str, kernel: str, dialect: str, params: list[ParamSpec], shared: int = 0):  # type: ignore[no-untyped-def]
    from s2s.mep.manifest import load
    from s2s.optimize.proposers.base import State

    ext = "cl" if dialect == "opencl" else "cu"
    grid, block = ((4096, 64, 1), (16, 16, 1)) if dialect == "opencl" else ((16, 1, 1), (256, 1, 1))
    mep = make_mep(tmp / kernel, src, manifest(kernel, dialect, f"kernel.{ext}", params, grid, block, shared_mem=shared))
    return State(manifest=load(mep), original=src.encode(), kernel=kernel, dialect=dialect,
                 facts=kernel_facts(src.encode(), dialect, kernel), patterns=[])


def test_no_round_one_candidate_changes_the_block_of_a_local_argument(tmp_path: Path) -> None:
    """The transpose MEP (mep.toml: `tile` in space local, 256 floats for 16 x 16 work-items): round 1 holds no
    candidate with another work-group shape, and every launch-config step says why."""
    from s2s.optimize.proposers.builtin import BuiltinProposer

    params = [ParamSpec("out", "__global float*", "out", "float", count=4096 * 64, space="global"),
              ParamSpec("in", "__global const float*", "in", "float", count=4096 * 64, space="global"),
              ParamSpec("tile", "__local float*", "inout", "float", count=256, count_expr="(neededLocalMemory)/sizeof(float)", space="local"),
              ParamSpec("n", "int", "scalar", "int", value=64)]
    state = _state(tmp_path, TRANSPOSE_CL, "transpose", "opencl", params)
    prop = BuiltinProposer()
    cands = prop.propose(state)
    assert all(c.launch is None or c.launch.block == (16, 16, 1) for c in cands)
    steps = [s for s in prop.refusals if s.startswith("launch-config")]
    assert steps and all("__local argument tile" in prop.refusals[s] or "3-D block for a kernel" in prop.refusals[s] for s in steps)
    assert "__local argument tile" in prop.refusals["launch-config{block=128}"]


def test_a_block_change_is_refused_where_the_manifest_gives_dynamic_shared_memory(tmp_path: Path) -> None:
    """The kernel's dynamic shared memory sits in a device helper the kernel's text does not show; mep.toml's
    launch.shared_mem (1024 bytes for 256 threads) is what tells: a pipeline that changes the block is refused."""
    from s2s.optimize.proposers.builtin import apply_pipeline

    params = [ParamSpec("out", "float*", "out", "float", count=4096, space="global"),
              ParamSpec("in", "const float*", "in", "float", count=4096, space="global"),
              ParamSpec("n", "int", "scalar", "int", value=4096)]
    held = apply_pipeline("launch-config{block=128}", _state(tmp_path, HELPER_CU, "scaled", "cuda", params, shared=1024))
    assert isinstance(held, str) and "block changes from 256x1x1 to 128x1x1" in held and "launch.shared_mem = 1024" in held
    free = apply_pipeline("launch-config{block=128}", _state(tmp_path / "free", HELPER_CU, "scaled", "cuda", params))
    assert isinstance(free, Candidate) and free.launch is not None and free.launch.block == (128, 1, 1)


# the transpose with a __local buffer of one float per work-item, sized by the host from the work-group (16 x 16 here)
SCALED = [("tile", "local", 256, "block_x * block_y")]


def test_a_count_written_as_an_expression_of_the_block_scales() -> None:
    from s2s.optimize.launch_sizes import scaled_counts, scaling

    assert scaling(SCALED) == ("tile",)
    assert scaled_counts(SCALED, 0, (16, 16, 1), (32, 8, 1)) == (("tile", 256),)
    assert scaled_counts(SCALED, 0, (16, 16, 1), (32, 16, 1)) == (("tile", 512),)
    padded = [("tile", "local", 16 * 17, "get_local_size(1) * (get_local_size(0) + 1)")]
    assert scaled_counts(padded, 0, (16, 16, 1), (32, 4, 1)) == (("tile", 4 * 33),)


def test_a_count_that_is_not_of_the_block_is_refused_with_the_reason() -> None:
    from s2s.optimize.launch_sizes import scaled_counts, scaling

    host = [("tile", "local", 256, "(neededLocalMemory)/sizeof(float)")]
    assert scaling(host) == ()
    why = scaled_counts(host, 0, (16, 16, 1), (32, 8, 1))
    assert isinstance(why, str) and "__local argument tile" in why and "not an expression of block_x" in why
    wrong = scaled_counts([("tile", "local", 100, "block_x * block_y")], 0, (16, 16, 1), (32, 8, 1))
    assert isinstance(wrong, str) and "gives 256 at block 16x16x1, mep.toml's count is 100" in wrong
    shared = scaled_counts([], 1024, (256, 1, 1), (128, 1, 1))
    assert isinstance(shared, str) and "launch.shared_mem = 1024" in shared


N_T = 64


def _transpose_state(tmp: Path, count_expr: str):  # type: ignore[no-untyped-def]
    from s2s.mep.manifest import load
    from s2s.optimize.proposers.base import State

    params = [ParamSpec("out", "__global float*", "out", "float", count=N_T * N_T, space="global"),
              ParamSpec("in", "__global const float*", "in", "float", count=N_T * N_T, space="global"),
              ParamSpec("tile", "__local float*", "inout", "float", count=64, count_expr=count_expr, space="local"),
              ParamSpec("n", "int", "scalar", "int", value=N_T)]
    mep = make_mep(tmp / "transpose", TRANSPOSE_CL, manifest("transpose", "opencl", "kernel.cl", params, (N_T, N_T, 1),
                                                              (8, 8, 1), repetitions=3, warmup=1, timeout_s=60.0))
    src = TRANSPOSE_CL.encode()
    return mep, State(manifest=load(mep), original=src, kernel="transpose", dialect="opencl",
                      facts=kernel_facts(src, "opencl", "transpose"), patterns=[])


def test_the_launch_pass_scales_a_local_buffer_the_mep_sizes_from_the_block(tmp_path: Path) -> None:
    """mep.toml: `tile` holds block_x * block_y floats (64 at 8 x 8). launch-config{block=32x8} applies, its launch
    carries 256 floats for `tile`; where the count is only a number from host names, the same step is refused."""
    from s2s.optimize.proposers.builtin import apply_pipeline

    _, state = _transpose_state(tmp_path, "block_x * block_y")
    cand = apply_pipeline("launch-config{block=32x8}", state)
    assert isinstance(cand, Candidate) and cand.launch is not None
    assert cand.launch.block == (32, 8, 1) and cand.launch.grid == (N_T, N_T, 1) and cand.launch.local_counts == (("tile", 256),)
    _, fixed = _transpose_state(tmp_path / "fixed", "(neededLocalMemory)/sizeof(float)")
    held = apply_pipeline("launch-config{block=32x8}", fixed)
    assert isinstance(held, str) and "__local argument tile is sized by the host" in held


@pytest.mark.slow
def test_the_scaled_local_buffer_runs_on_pocl(tmp_path: Path) -> None:
    """The variant (32 x 8 work-groups, 256 floats of `tile`) runs and matches the original (8 x 8, 64 floats) on PoCL;
    variant.json records the count the harness gives the variant."""
    pytest.importorskip("pyopencl")
    from s2s.mep.evaluate import evaluate
    from s2s.mep.variant import Variant
    from s2s.optimize.loop import write_variant
    from s2s.optimize.proposers.builtin import apply_pipeline

    mep, state = _transpose_state(tmp_path, "block_x * block_y")
    cand = apply_pipeline("launch-config{block=32x8}", state)
    assert isinstance(cand, Candidate)
    write_variant(mep, "kernel.cl", cand)
    assert Variant.read(mep / "variants" / cand.id).local_counts == (("tile", 256),)
    m = evaluate(mep, cand.id)
    assert m.verdict == "ok", m.messages
