#!/usr/bin/env bash
# Copies the real applications bench/gpu_auto_apps.sh runs `s2s auto` on from the development corpus into
# .gpu/apps/ (git-ignored: never committed; the GPU machine gets it with the working tree). Only git-tracked
# sources are copied, no build outputs. Run here, before the GPU batch:   bash bench/prepare_gpu_apps.sh [CORPUS]
set -eu
CORPUS=${1:-/work/corpus}
DEST=.gpu/apps
rm -rf "$DEST"
mkdir -p "$DEST"
tracked() {  # tracked() REPO SUBDIR... : copy the git-tracked files under the SUBDIRs of REPO to stdin's tar
  local repo=$1; shift
  git -C "$repo" ls-files -z -- "$@" | (cd "$repo" && tar --null -T - -cf -)
}
# NAS Parallel Benchmarks (CUDA), one tree per benchmark: the top Makefile, config, sys, common and the benchmark
for bm in EP CG MG IS; do
  d="$DEST/npb-$(echo $bm | tr A-Z a-z)"
  mkdir -p "$d"
  tracked "$CORPUS/NPB-GPU" CUDA/Makefile CUDA/config CUDA/sys CUDA/common CUDA/bin/.gitignore "CUDA/$bm" | tar -xf - -C "$d" --strip-components=1
  mkdir -p "$d/bin"
done
# BabelStream: its sources; nvml.h and a libnvidia-ml stub (the driver's real library is used at run time)
mkdir -p "$DEST/babelstream" "$DEST/_deps/nvml"
tracked "$CORPUS/BabelStream" src | tar -xf - -C "$DEST/babelstream"
cp -r "$CORPUS/_deps/nvml/nvidia/cu13/include" "$DEST/_deps/nvml/include"
cp -r "$CORPUS/_deps/nvml/stub" "$DEST/_deps/nvml/stub"
# Parboil sgemm and stencil: the benchmark's sources and Parboil's common library (inputs are generated on the GPU)
for bm in sgemm stencil; do
  d="$DEST/parboil-$bm"
  mkdir -p "$d"
  tracked "$CORPUS/Parboil" common "benchmarks/$bm/src/cuda" | tar -xf - -C "$d"
  cp "$CORPUS/Parboil/common/Makefile.conf.example-nvidia" "$d/common/Makefile.conf"
done
du -sh "$DEST"
find "$DEST" -type f | wc -l
# inputs of the Parboil benchmarks (their datasets are not public in the corpus): generated, deterministic
python3 - "$DEST" <<'PY'
import random, struct, sys
from pathlib import Path
dest = Path(sys.argv[1])
rng = random.Random(7)
n = 1024  # sgemm: A (n x n) and B^T (n x n), text, column-major, "rows cols" first
inp = dest / "parboil-sgemm" / "input"
inp.mkdir(parents=True, exist_ok=True)
for name in ("A.txt", "BT.txt"):
    vals = " ".join(f"{rng.uniform(-1, 1):.5f}" for _ in range(n * n))
    (inp / name).write_text(f"{n} {n}\n{vals}\n")
nx, ny, nz = 128, 128, 32  # stencil: raw float32, x fastest
inp = dest / "parboil-stencil" / "input"
inp.mkdir(parents=True, exist_ok=True)
(inp / "in.bin").write_bytes(struct.pack(f"<{nx * ny * nz}f", *(rng.uniform(0, 1) for _ in range(nx * ny * nz))))
PY
du -sh "$DEST"
