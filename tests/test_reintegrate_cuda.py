"""Reintegrating CUDA winners whose passes add helper types and change the launch: the diff holds the
helpers once, the launch site covers the application's own sizes, and the whole application compiles."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, SAMPLES, needs_nvcc

from s2s.extract.mep_writer import make_mep
from s2s.lang.edits import LaunchChange
from s2s.mep.history import History
from s2s.mep.manifest import load
from s2s.optimize.candidate import Candidate, LaunchOverride
from s2s.optimize.loop import write_variant
from s2s.optimize.registry import Applied, build_pipeline, run_pass
from s2s.reintegrate.splice import apply_in_place, plan


def _plant(mep: Path, pipeline: str, speedup: float) -> str:
    """The pipeline's rewrite of the MEP's kernel, recorded as a verified winner (as `s2s optimize` records one)."""
    m = load(mep)
    text = (mep / m.kernel_file).read_bytes()
    grid, block = tuple(m.launch.grid), tuple(m.launch.block)
    launches = []
    for p in build_pipeline(pipeline):
        out = run_pass(p, text, "cuda", m.kernel)
        assert isinstance(out, Applied), out
        text = out.text
        if out.launch is not None:
            launches.append(out.launch)
            grid, block = out.launch.resolve(grid, block)  # type: ignore[arg-type]
    rules = tuple(r.grid_from for r in launches)
    cand = Candidate(text, f"pass:{pipeline}", None, LaunchOverride(grid, block, m.launch.shared_mem), launch_rules=rules)  # type: ignore[arg-type]
    write_variant(mep, m.kernel_file, cand)
    hist = History(mep / "history.sqlite")
    hist.add(cand.id, 1, cand.origin, None, cand.source_sha, cand.launch.as_dict() if cand.launch else None)
    hist.finish(cand.id, "ok", {"speedup": speedup, "verdict": "ok"})
    hist.close()
    return cand.id


def test_coarsening_launch_rules_cover_every_point() -> None:
    rule = LaunchChange(None, "coarsen-z", per_item=8)
    assert rule.resolve((8, 64, 250), (32, 4, 1)) == ((8, 64, 32), (32, 4, 1))  # 32 x 8 = 256 >= 250
    assert rule.resolve((4, 4, 3), (8, 8, 3)) == ((4, 4, 1), (8, 8, 3))  # ceil(ceil(9 / 8) / 3) = 1
    data = (SAMPLES / "heat3d_cuda/src/kernels_linalg.cu").read_bytes()
    out = run_pass(build_pipeline("smem-transpose{tile=32 rows=8}")[0], data, "cuda", "transpose_naive")
    assert isinstance(out, Applied) and out.launch is not None
    # 32x32 tiles over a 1000 x 1000 matrix with 32x8 threads: one block per tile
    assert out.launch.resolve((63, 63, 1), (16, 16, 1)) == ((32, 32, 1), (32, 8, 1))


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("reint-cuda")
    root = base / "heat3d_cuda"
    shutil.copytree(SAMPLES / "heat3d_cuda", root, ignore=shutil.ignore_patterns("build", "heat3d"))
    return root


@pytest.mark.slow
@needs_nvcc
def test_coarsened_stencil_and_wide_particles_reintegrate_and_compile(tree: Path, tmp_path: Path) -> None:
    stencil, parts = tmp_path / "mep-stencil7", tmp_path / "mep-particles"
    make_mep(str(tree), "stencil7", str(stencil))
    make_mep(str(tree), "particles_step", str(parts))
    _plant(stencil, "restrict-const,launch-config{block=32x8},thread-coarsen{axis=z factor=8}", 1.5)
    _plant(parts, "struct-wide-io", 1.3)

    p = plan(stencil, "best", str(tree))
    main = next(new for path, (_old, new) in p.files.items() if path.name == "main.cu").decode()
    # the site's own grid and block, coarsened by 8 along z with a ceiling, then divided by the new block
    assert "stencil7<<<dim3(((grid.x) * (block.x) + 31) / 32, ((grid.y) * (block.y) + 7) / 8, " \
           "((grid.z) * (block.z) * 1 + 7) / 8), dim3(32, 8, 1)>>>" in main
    apply_in_place(p, None, None)

    q = plan(parts, "best", str(tree))
    (path, (_old, new)), = q.files.items()
    assert path.name == "kernels_particles.cu"
    assert new.count(b"struct s2s_wide_io {") == 1 and b"s2s_wide_io<Particle>::load(parts + (idx))" in new
    apply_in_place(q, None, None)
    again = plan(parts, "best", str(tree), force=True)  # a second time: the helpers are there already
    assert all(n.count(b"struct s2s_wide_io {") == 1 for _o, n in again.files.values())

    proc = subprocess.run(["make", "-s", "-j2", "NX=40", "NY=24", "NZ=20"], cwd=tree, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.slow
@needs_nvcc
def test_fast_math_helper_copy_reintegrates_into_the_hip_sample(tmp_path: Path) -> None:
    tree = tmp_path / "hip_particles"
    shutil.copytree(SAMPLES / "hip_particles", tree, ignore=shutil.ignore_patterns("build", "hip_particles"))
    mep = tmp_path / "mep-forces"
    make_mep(str(tree), "compute_forces_naive", str(mep))
    _plant(mep, "smem-allpairs{tile=256},fast-math", 2.0)
    p = plan(mep, "best", str(tree))
    (path, (_old, new)), = p.files.items()
    text = new.decode()
    # the helper from nbody_math.h is not redefined: a renamed copy goes before the kernel, which calls it
    assert path.name == "forces.hip" and text.count("body_body_accel_fast(") == 2 and "rsqrtf(r2)" in text
    assert text.index("void body_body_accel_fast") < text.index("void compute_forces_naive")
    apply_in_place(p, None, None)
    proc = subprocess.run(["make", "-s", "-j2", f"HIP_SHIM={ROOT / 'templates/hip_shim'}", "NBODY=1024"], cwd=tree,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]


RECT = """\
#include <cuda_runtime.h>
#define ROWS 64
#define COLS 512

__global__ void scale_rows(float* A, float a, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    int c = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) A[r * cols + c] *= a;
}

void run(float* d)
{
    dim3 block(16, 16);
    dim3 grid((ROWS + 15) / 16, (COLS + 15) / 16);
    scale_rows<<<grid, block>>>(d, 2.0f, ROWS, COLS);
}
"""


def test_swapped_launch_follows_the_recorded_rule(tmp_path: Path) -> None:
    """A wide matrix (cols >= 2 x rows) defeats guessing the x/y swap from the MEP's numbers; the rule does not."""
    tree = tmp_path / "app"
    tree.mkdir()
    (tree / "rect.cu").write_text(RECT)
    mep = tmp_path / "mep"
    make_mep(str(tree), "scale_rows", str(mep))
    vid = _plant(mep, "coalesce-remap", 3.0)
    assert json.loads((mep / "variants" / vid / "variant.json").read_text())["launch_rules"] == ["swap-xy"]
    new = plan(mep, "best", str(tree)).files[(tree / "rect.cu").resolve()][1].decode()
    assert "scale_rows<<<dim3(((grid.y) * (block.y) + 15) / 16, ((grid.x) * (block.x) + 15) / 16, " in new


@pytest.mark.slow
@needs_nvcc
def test_helpers_reaching_one_unit_twice_compile(tmp_path: Path) -> None:
    """Two kernels in two headers of one translation unit, each reintegrated with the same helpers: guarded, once."""
    from s2s.passes.arithmetic.fast_math import EXAMPLE_AFTER as FAST
    from s2s.passes.memory.struct_wide_io import HELPER

    fast_copy = FAST[FAST.index("#ifndef"):FAST.index("#endif") + len("#endif")]
    (tmp_path / "a.cuh").write_text(HELPER + fast_copy + "\n")
    (tmp_path / "b.cuh").write_text(HELPER + fast_copy + "\n")
    (tmp_path / "unit.cu").write_text('__device__ float kernel_w(float r2, float h) { return expf(-r2 / (h * h)); }\n'
                                      '#include "a.cuh"\n#include "b.cuh"\n'
                                      "struct P { float x, y, z, w; };\n"
                                      "__global__ void k(P* p) { P q = s2s_wide_io<P>::load(p); q.x = kernel_w_fast(q.y, 1.0f);"
                                      " s2s_wide_io<P>::store(p, q); }\n")
    proc = subprocess.run(["nvcc", "-c", "-arch=sm_90", "unit.cu", "-o", "unit.o"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
