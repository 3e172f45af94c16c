#!/usr/bin/env bash
# The whole kernel zoo in one device call on nvidia-h200-x2: part 1/2 on GPU 0 and 2/2 on GPU 1, 20 kernels at once per
# GPU, each GPU its own device lock, nvidia-smi utilization sampled every second into OUT/smi.csv (451 s at 455222a):
#   bash bench/gpu_zoo_whole.sh OUT_DIR COMMIT [DEADLINE_S]
set -u
OUT=${1:?out}
export S2S_COMMIT=${2:-unknown}
DEADLINE=${3:-480}
export CUPY_TF32=0
. "$(dirname "$0")/gpu_preamble.sh"
gpu_info index,name,driver_version,memory.total
gpu_watch
part() {
  CUDA_VISIBLE_DEVICES=$1 S2S_DEVICE_LOCK=/tmp/s2s-gpu$1.lock timeout $((DEADLINE + 45)) \
    python3 bench/gpu_zoo.py --part "$2/2" --out "$OUT" --work "/tmp/s2s-zoo$2" --deadline "$DEADLINE" --parallel 20 \
    --jobs 12 --max-evals 30 > "$OUT/part$2.log" 2>&1
  echo "part $2 on GPU $1 rc=$? at ${SECONDS}s"
}
part 0 1 &
P1=$!
part 1 2 &
P2=$!
wait $P1 $P2
kill "$GPU_WATCH" 2>/dev/null
timeout 30 python3 bench/gpu_zoo.py --summarize "$OUT" --out "$OUT" > "$OUT/summary.log" 2>&1
grep "^| \|Geometric\|Per family" "$OUT"/gpu_zoo_summary.md 2>/dev/null | cut -c1-170
pack zoofinal.tgz 'gpu_zoo_summary.*' '*.tgz' 'gpu.txt'
echo "done ${SECONDS}s"
