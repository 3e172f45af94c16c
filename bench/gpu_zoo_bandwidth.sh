#!/usr/bin/env bash
# The zoo's bandwidth-bound kernels against the copy bandwidth (bench/gpu_zoo_plans.py with bench/plans/zoo_bandwidth.toml),
# one part per device call:
#   bash bench/gpu_zoo_bandwidth.sh OUT_DIR COMMIT 1    # then 2, then 3: each about 5 minutes, under 580 s
# Each writes OUT_DIR/zoo_bandwidth_partIof3.{json,md}: per kernel the floor, and per pipeline its verdict, time,
# speedup over the original and fraction of the floor.
set -u
OUT=${1:?output directory}
export S2S_COMMIT=${2:-unknown}
PART=${3:?part 1, 2 or 3}
export CUPY_TF32=0
. "$(dirname "$0")/gpu_preamble.sh"
gpu_info
stage 580 "bandwidth$PART" python3 bench/gpu_zoo_plans.py bench/plans/zoo_bandwidth.toml "$OUT" --part "$PART/3" --work /tmp/s2s-zoo-bw
cat "$OUT/zoo_bandwidth_part${PART}of3.md" 2>/dev/null
