"""Launch-shape changes and memory the host sizes for the block (issue 27 item 4): an OpenCL `__local` argument sized by
clSetKernelArg(k, i, size, NULL) and CUDA dynamic shared memory (`extern __shared__`, the launch's third argument)
stay sized for the old block when a pass changes it; mep.toml records one size, not a function of the block, so
launch-config, and any pipeline of the built-in proposer that changes the block, refuses with the reason."""
from __future__ import annotations

from pathlib import Path

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
