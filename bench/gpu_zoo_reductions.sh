#!/usr/bin/env bash
# The zoo's reductions (bench/gpu_zoo_plans.py with bench/plans/zoo_reductions.toml), one device call:
#   bash bench/gpu_zoo_reductions.sh OUT_DIR COMMIT      # about 4-6 minutes, under 580 s
# Writes OUT_DIR/zoo_reductions.{json,md}: per kernel the floor, and per pipeline its verdict, time, speedup over the
# original and fraction of the floor.
set -u
OUT=${1:?output directory}
export S2S_COMMIT=${2:-unknown}
. "$(dirname "$0")/gpu_preamble.sh"
gpu_info
stage 580 "reductions" python3 bench/gpu_zoo_plans.py bench/plans/zoo_reductions.toml "$OUT" --work /tmp/s2s-zoo-reductions
cat "$OUT/zoo_reductions.md" 2>/dev/null
