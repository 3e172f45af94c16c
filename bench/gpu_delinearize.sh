#!/usr/bin/env bash
# delinearize-2d on the GPU: the zoo kernels whose flat 1-D index it splits (gemm_colmajor, syrk_lower, fdtd_e,
# transpose_gather, jacobi2d_macro, batched_gemm8) optimized with the built-in proposer (at most 30 evaluations each,
# re-timed winners), beside the vendor library where the catalog names one. One device call, under 600 s:
#   bash bench/gpu_delinearize.sh OUT_DIR COMMIT
# writes OUT_DIR/gpu_zoo_part1of1.{json,md} (per kernel: speedup, pipeline of the winner, evaluations, vendor ratio)
# and the MEPs' reports in one archive, as bench/gpu_zoo.sh does.
set -u
OUT=${1:?output directory}
export S2S_COMMIT=${2:-unknown}
export CUPY_TF32=0
KERNELS=gemm_colmajor,syrk_lower,fdtd_e,transpose_gather,jacobi2d_macro,batched_gemm8
. "$(dirname "$0")/gpu_preamble.sh"
gpu_info
t0=$SECONDS
timeout 560 python3 bench/gpu_zoo.py --part 1/1 --only "$KERNELS" --out "$OUT" --work /tmp/s2s-zoo --deadline 480 \
  --parallel 3 > "$OUT/part1of1.log" 2>&1
echo "delinearize zoo rc=$? $((SECONDS - t0))s"
tail -40 "$OUT"/gpu_zoo_*.md 2>/dev/null
pack zoo-delinearize.tgz 'gpu_zoo_*.md'
