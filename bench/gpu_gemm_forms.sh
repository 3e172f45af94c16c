#!/usr/bin/env bash
# Each tiled form of the GEMM-like zoo kernels against cuBLAS (bench/gpu_zoo_plans.py with bench/plans/gemm_forms.toml),
# in one device call of about 4 minutes (under 580 s):
#   bash bench/gpu_gemm_forms.sh OUT_DIR COMMIT [PLAN]    # PLAN: gemm_forms (default) or gemm_forms_all
# Writes OUT_DIR/gpu_gemm_forms.{json,md}: per form the verdict, the original's and the form's median µs, the speedup,
# cuBLAS's time and vendor / ours.
set -u
OUT=${1:?output directory}
export S2S_COMMIT=${2:-unknown}
PLAN=${3:-gemm_forms}
export CUPY_TF32=0
. "$(dirname "$0")/gpu_preamble.sh"
gpu_info
stage 580 "gemm_forms" python3 bench/gpu_zoo_plans.py "bench/plans/$PLAN.toml" "$OUT" --work /tmp/s2s-gemm-forms
cat "$OUT/gpu_gemm_forms.md" 2>/dev/null
