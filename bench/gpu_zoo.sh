#!/usr/bin/env bash
# The kernel zoo on the GPU, one device call per part (each well under 600 s):
#   bash bench/gpu_zoo.sh OUT_DIR COMMIT apps     build and run the 40 zoo apps (their own CPU checks), ~2 min
#   bash bench/gpu_zoo.sh OUT_DIR COMMIT I[/K]    optimize part I of K (default K = 4: 10 kernels each, deadline 480 s;
#                                                 K = 6 or 8 gives each kernel more of its 30 evaluations)
# then, anywhere: python3 bench/gpu_zoo.py --summarize DIR_WITH_THE_PARTS_JSON (writes gpu_zoo_summary.{json,md})
set -u
OUT=${1:?output directory}
export S2S_COMMIT=${2:-unknown}
PART=${3:?apps or a part I or I/K}
case "$PART" in apps|*/*) ;; *) PART="$PART/4" ;; esac
TAG=${PART//\//of}
export CUPY_TF32=0
. "$(dirname "$0")/gpu_preamble.sh"
gpu_info
t0=$SECONDS
case "$PART" in
  apps) timeout 400 python3 bench/gpu_zoo.py --apps --out "$OUT" --work /tmp/s2s-zoo --jobs 16 > "$OUT/apps.log" 2>&1 ;;
  [1-9]*/[1-9]*) timeout 560 python3 bench/gpu_zoo.py --part "$PART" --out "$OUT" --work /tmp/s2s-zoo --deadline 480 \
           --parallel 4 > "$OUT/part$TAG.log" 2>&1 ;;
  *) echo "unknown part $PART"; exit 2 ;;
esac
echo "part $PART rc=$? $((SECONDS - t0))s"
tail -60 "$OUT"/gpu_zoo_*.md 2>/dev/null
# the device returns at most 8 files: everything travels in one archive (the tables stay readable beside it)
pack "zoo-$TAG.tgz" 'gpu_zoo_*.md'
