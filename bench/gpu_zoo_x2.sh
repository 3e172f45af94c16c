#!/usr/bin/env bash
# The whole kernel zoo in one device call on a machine with 2 GPUs (nvidia-h200-x2): parts 1+3 on GPU 0 and 2+4 on
# GPU 1, each GPU with its own device lock, so timed evaluations never overlap on a GPU while builds share the CPUs.
#   bash bench/gpu_zoo_x2.sh OUT_DIR COMMIT [DEADLINE_S]
# then: python3 bench/gpu_zoo.py --summarize OUT_DIR (merges gpu_zoo_part*.json into gpu_zoo_summary.{json,md})
set -u
OUT=${1:?output directory}
export S2S_COMMIT=${2:-unknown}
DEADLINE=${3:-470}
export CUPY_TF32=0
. "$(dirname "$0")/gpu_preamble.sh"
gpu_info index,name,driver_version,memory.total
part() {  # GPU PART
  CUDA_VISIBLE_DEVICES=$1 S2S_DEVICE_LOCK=/tmp/s2s-gpu$1.lock timeout $((DEADLINE + 70)) \
    python3 bench/gpu_zoo.py --part "$2/4" --out "$OUT" --work "/tmp/s2s-zoo$2" --deadline "$DEADLINE" --parallel 4 \
    --jobs 8 > "$OUT/part$2.log" 2>&1
  echo "part $2 on GPU $1 rc=$?"
}
t0=$SECONDS
part 0 1 & part 1 2 & part 0 3 & part 1 4 &
wait
echo "all parts $((SECONDS - t0))s"
python3 bench/gpu_zoo.py --summarize "$OUT" --out "$OUT" > "$OUT/summary.log" 2>&1
tail -70 "$OUT"/gpu_zoo_summary.md 2>/dev/null
pack zoo-x2.tgz 'gpu_zoo_summary.*' '*.tgz'
