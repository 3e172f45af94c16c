"""Inputs of the Parboil benchmarks in the catalogue (their datasets are not in the repository): generated,
deterministic, into DIR/input where the application runs; the same values bench/gen_app_inputs.py wrote.

    python3 bench/apps/inputs.py sgemm|stencil-base|mri-q DIR     (skips an input that exists)
"""
from __future__ import annotations

import random
import struct
import sys
from pathlib import Path


def floats(rng: random.Random, n: int, lo: float, hi: float) -> list[float]:
    return [rng.uniform(lo, hi) for _ in range(n)]


def main(which: str, dest: Path) -> int:
    inp = dest / "input"
    inp.mkdir(parents=True, exist_ok=True)
    rng = random.Random(7)
    if which == "sgemm":  # A (n x n) and B^T (n x n), text, column-major, "rows cols" first
        n = 1024
        for name in ("A.txt", "BT.txt"):
            vals = " ".join(f"{v:.5f}" for v in floats(rng, n * n, -1, 1))
            if not (inp / name).exists():
                (inp / name).write_text(f"{n} {n}\n{vals}\n")
    elif which == "stencil-base":  # raw float32, x fastest; one block per (y, z) row, nx - 1 threads
        nx, ny, nz = 256, 256, 64
        if not (inp / "in.bin").exists():
            (inp / "in.bin").write_bytes(struct.pack(f"<{nx * ny * nz}f", *floats(rng, nx * ny * nz, 0, 1)))
    elif which == "mri-q":  # numK, numX (int32), kx, ky, kz (numK), x, y, z (numX), phiR, phiI (numK), float32
        num_k, num_x = 2048, 131072
        arrays = [floats(rng, num_k, -0.5, 0.5) for _ in range(3)] + [floats(rng, num_x, -8, 8) for _ in range(3)]
        arrays += [floats(rng, num_k, -1, 1) for _ in range(2)]
        if not (inp / "in.bin").exists():
            (inp / "in.bin").write_bytes(struct.pack("<ii", num_k, num_x)
                                         + b"".join(struct.pack(f"<{len(a)}f", *a) for a in arrays))
    else:
        print(f"unknown input set {which!r}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], Path(sys.argv[2])))
