#!/usr/bin/env bash
# contraction-triangle on syrk, syrk_lower, covar_cols and syr2k against contraction-blocking and cuBLAS (bench/gpu_zoo_plans.py
# with bench/plans/zoo_triangle.toml),
# in one device call of about 4-5 minutes (under 580 s):
#   bash bench/gpu_zoo_triangle.sh OUT_DIR COMMIT
# Writes OUT_DIR/zoo_triangle.{json,md}: per form the verdict, the original's and the form's median µs, the speedup,
# cuBLAS's time and vendor / ours.
set -u
OUT=${1:?output directory}
export S2S_COMMIT=${2:-unknown}
export CUPY_TF32=0
. "$(dirname "$0")/gpu_preamble.sh"
gpu_info
stage 580 "zoo_triangle" python3 bench/gpu_zoo_plans.py bench/plans/zoo_triangle.toml "$OUT" --work /tmp/s2s-zoo-triangle
cat "$OUT/zoo_triangle.md" 2>/dev/null
