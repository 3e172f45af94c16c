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
for bm in sgemm stencil mri-q; do
  d="$DEST/parboil-$bm"
  mkdir -p "$d"
  tracked "$CORPUS/Parboil" common "benchmarks/$bm/src/cuda" | tar -xf - -C "$d"
  cp "$CORPUS/Parboil/common/Makefile.conf.example-nvidia" "$d/common/Makefile.conf"
done
# Parboil's cuda_base versions (the benchmark authors' straightforward ports: a naive GEMM, a naive 7-point stencil, the
# reference Coulomb-potential kernel): the kind of kernel s2s is for. cp generates its own atoms; the others read generated inputs.
for bm in sgemm stencil cp; do
  d="$DEST/parboil-$bm-base"
  mkdir -p "$d"
  tracked "$CORPUS/Parboil" common "benchmarks/$bm/src/cuda_base" | tar -xf - -C "$d"
  cp "$CORPUS/Parboil/common/Makefile.conf.example-nvidia" "$d/common/Makefile.conf"
done
du -sh "$DEST"
find "$DEST" -type f | wc -l
# the Parboil inputs are generated where the apps run (bench/gpu_auto_apps.sh): python3 bench/gen_app_inputs.py .gpu/apps
du -sh "$DEST"
