"""Inputs of the Parboil benchmarks that bench/auto_apps.py runs (their datasets are not public in the corpus): generated,
deterministic, where the applications run (bench/gpu_auto_apps.sh calls it; the files are too large to carry).

    python3 bench/gen_app_inputs.py APPS_DIR      (skips the inputs that exist)
"""
import random
import struct
import sys
from pathlib import Path

dest = Path(sys.argv[1])
if (dest / "parboil-mri-q" / "input" / "in.bin").is_file():  # the last one written: all exist
    sys.exit(0)
rng = random.Random(7)
n = 1024  # sgemm: A (n x n) and B^T (n x n), text, column-major, "rows cols" first
inp = dest / "parboil-sgemm" / "input"
inp.mkdir(parents=True, exist_ok=True)
for name in ("A.txt", "BT.txt"):
    vals = " ".join(f"{rng.uniform(-1, 1):.5f}" for _ in range(n * n))
    (inp / name).write_text(f"{n} {n}\n{vals}\n")
(dest / "parboil-sgemm-base" / "input").mkdir(parents=True, exist_ok=True)
for name in ("A.txt", "BT.txt"):  # the same matrices for the naive version
    (dest / "parboil-sgemm-base" / "input" / name).write_bytes((inp / name).read_bytes())
nx, ny, nz = 128, 128, 32  # stencil: raw float32, x fastest
inp = dest / "parboil-stencil" / "input"
inp.mkdir(parents=True, exist_ok=True)
(inp / "in.bin").write_bytes(struct.pack(f"<{nx * ny * nz}f", *(rng.uniform(0, 1) for _ in range(nx * ny * nz))))
nx, ny, nz = 256, 256, 64  # the naive stencil: one block per (y, z) row, nx - 1 threads (at most 1024)
inp = dest / "parboil-stencil-base" / "input"
inp.mkdir(parents=True, exist_ok=True)
(inp / "in.bin").write_bytes(struct.pack(f"<{nx * ny * nz}f", *(rng.uniform(0, 1) for _ in range(nx * ny * nz))))
num_k, num_x = 2048, 131072  # mri-q: numK, numX (int32), then kx, ky, kz (numK), x, y, z (numX), phiR, phiI (numK), float32
inp = dest / "parboil-mri-q" / "input"
inp.mkdir(parents=True, exist_ok=True)
arrays = [[rng.uniform(-0.5, 0.5) for _ in range(num_k)] for _ in range(3)]  # k-space samples, cycles per field of view
arrays += [[rng.uniform(-8.0, 8.0) for _ in range(num_x)] for _ in range(3)]  # voxel positions in a 16-unit field
arrays += [[rng.uniform(-1.0, 1.0) for _ in range(num_k)] for _ in range(2)]
(inp / "in.bin").write_bytes(struct.pack("<ii", num_k, num_x) + b"".join(struct.pack(f"<{len(a)}f", *a) for a in arrays))
