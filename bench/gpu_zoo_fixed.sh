#!/usr/bin/env bash
# The zoo kernels that the audit's pass fixes gave new candidates (bench/results/zoo_audit.md), optimized on the GPU:
#   bash bench/gpu_zoo_fixed.sh OUT_DIR COMMIT 1    dot_blocks, reduce_max_blocks, scan_rows, spmv_csr       (one call, < 560 s)
#   bash bench/gpu_zoo_fixed.sh OUT_DIR COMMIT 2    nbody_soa, gemv_rows, batched_gemv16, transpose_gather   (one call, < 560 s)
# Each writes OUT_DIR/gpu_zoo_part1of1.{json,md} (bench/gpu_zoo.py --part 1/1 --only ...): per kernel the re-timed winner,
# its pipeline, evaluations, the vendor time and the roofline floor. At most 12 evaluations per kernel so four fit.
set -u
OUT=${1:?output directory}
export S2S_COMMIT=${2:-unknown}
case "${3:?half 1 or 2}" in
  1) ONLY=dot_blocks,reduce_max_blocks,scan_rows,spmv_csr ;;
  2) ONLY=nbody_soa,gemv_rows,batched_gemv16,transpose_gather ;;
  *) echo "half must be 1 or 2"; exit 2 ;;
esac
export CUPY_TF32=0
. "$(dirname "$0")/gpu_preamble.sh"
gpu_info
t0=$SECONDS
timeout 560 python3 bench/gpu_zoo.py --part 1/1 --only "$ONLY" --out "$OUT" --work /tmp/s2s-zoo --deadline 480 --parallel 4 \
  --max-evals 12 > "$OUT/fixed$3.log" 2>&1
echo "half $3 rc=$? $((SECONDS - t0))s"
tail -30 "$OUT"/gpu_zoo_*.md 2>/dev/null
