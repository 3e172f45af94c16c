#!/usr/bin/env bash
# The zoo's 2-D stencils and convolutions with stencil-registers (bench/gpu_zoo_plans.py with
# bench/plans/zoo_stencil_registers.toml), one device call:
#   bash bench/gpu_zoo_stencil_registers.sh OUT_DIR COMMIT      # about 5 minutes, under 580 s
# Writes OUT_DIR/zoo_stencil_registers.{json,md}: per kernel the floor, and per pipeline its verdict, time, speedup over
# the original and fraction of the floor.
set -u
OUT=${1:?output directory}
export S2S_COMMIT=${2:-unknown}
. "$(dirname "$0")/gpu_preamble.sh"
gpu_info
stage 580 "stencil-registers" python3 bench/gpu_zoo_plans.py bench/plans/zoo_stencil_registers.toml "$OUT" --work /tmp/s2s-zoo-stencil-registers
cat "$OUT/zoo_stencil_registers.md" 2>/dev/null
