#!/usr/bin/env bash
# The zoo's underfilled launches at every 1-D block size against the cost model's SM-fill rule
# (bench/gpu_zoo_plans.py with bench/plans/underfill.toml), in two device calls of about 4-6 minutes each (under 580 s):
#   bash bench/gpu_underfill.sh OUT_DIR COMMIT 1    # then 2
# Each writes OUT_DIR/underfill_partIof2.{json,md}: per kernel and block size the SMs with a block, the model's fill and
# predicted speedup, the verdict and the measured speedup; per kernel whether the predicted best block was measured best.
set -u
OUT=${1:?output directory}
export S2S_COMMIT=${2:-unknown}
PART=${3:?part 1 or 2}
. "$(dirname "$0")/gpu_preamble.sh"
gpu_info
stage 580 "underfill$PART" python3 bench/gpu_zoo_plans.py bench/plans/underfill.toml "$OUT" --part "$PART/2" --work /tmp/s2s-underfill
cat "$OUT/underfill_part${PART}of2.md" 2>/dev/null
