#!/usr/bin/env bash
# The zoo's forward substitution (trsm_cols) with triangular-solve-blocking at rows = 4, 8, 16, 32 beside the previous best
# and cuBLAS strsm (bench/gpu_zoo_plans.py with bench/plans/zoo_trsm.toml), one device call:
#   bash bench/gpu_zoo_trsm.sh OUT_DIR COMMIT      # about 2-3 minutes, under 580 s
# Writes OUT_DIR/zoo_trsm.{json,md}: per pipeline its verdict, median µs, speedup over the original and vendor / ours.
set -u
OUT=${1:?output directory}
export S2S_COMMIT=${2:-unknown}
. "$(dirname "$0")/gpu_preamble.sh"
gpu_info
stage 580 "trsm" python3 bench/gpu_zoo_plans.py bench/plans/zoo_trsm.toml "$OUT" --work /tmp/s2s-zoo-trsm
cat "$OUT/zoo_trsm.md" 2>/dev/null
