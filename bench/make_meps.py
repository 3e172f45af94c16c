"""Generate the GPU benchmark's MEPs from the CUDA and HIP samples, at sizes worth timing on an H200.

    python bench/make_meps.py [--out bench/meps]

The MEPs' extracted part (mep.toml, the kernel file, extract.json) is committed, so every GPU run starts from the
same extraction; the harness, Makefile and README are generated again from templates/ by each build (git ignores them).
"""
from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from s2s.extract.mep_writer import make_mep

ROOT = Path(__file__).resolve().parent.parent
# (sample, kernel, size overrides): sizes chosen so one launch runs well past launch overhead;
# the most telling kernels first, since the GPU benchmark works through them under a deadline
KERNELS = [
    ("heat3d_cuda", "matmul_naive", {"MAT_N": "2048"}),
    ("heat3d_cuda", "matvec_rows", {"MAT_N": "4096"}),
    ("heat3d_cuda", "reduce_energy", {"NX": "256", "NY": "256", "NZ": "256"}),
    ("heat3d_cuda", "colsum_strided", {"MAT_N": "4096"}),
    ("hip_particles", "compute_forces_naive", {"NBODY": "32768"}),
    ("heat3d_cuda", "transpose_naive", {"MAT_N": "4096"}),
    ("heat3d_cuda", "stencil7", {"NX": "256", "NY": "256", "NZ": "256"}),
    ("hip_particles", "deposit_density", {"NBODY": "4194304"}),
    ("hip_particles", "speed_histogram", {"NBODY": "4194304"}),
    ("hip_particles", "kinetic_energy", {"NBODY": "4194304"}),
    ("heat3d_cuda", "particles_step", {"NPART": "4194304", "NX": "128", "NY": "128", "NZ": "128"}),
    ("hip_particles", "integrate_bodies", {"NBODY": "4194304"}),
    ("heat3d_cuda", "axpby_t", {"NX": "256", "NY": "256", "NZ": "256"}),
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "bench" / "meps"))
    args = ap.parse_args()
    out = Path(args.out)
    if out.exists():
        shutil.rmtree(out)
    for i, (sample, kernel, sizes) in enumerate(KERNELS, 1):
        dest = out / f"{i:02d}-{sample}.{kernel}"
        if dest.exists():
            shutil.rmtree(dest)
        _d, m, _ex = make_mep(str(ROOT / "samples" / sample), kernel, str(dest), overrides=sizes)
        todo = m.unfilled()
        print(f"{dest.name}: grid {m.launch.grid} block {m.launch.block}" + (f"  FILL-IN: {todo}" if todo else ""))


if __name__ == "__main__":
    main()
