#!/usr/bin/env bash
# The whole kernel zoo on the machine's G GPUs (nvidia-smi -L; GPUS=G overrides, to keep the split of earlier calls):
# the zoo in G x PER_GPU x CALLS parts, this call's G x PER_GPU of them, part I on GPU (I-1) % G, every part's kernels
# at once, each GPU its own device lock (timed evaluations never overlap on a GPU while builds share the CPUs), nvidia-smi utilization sampled every second into OUT/smi.csv, then the parts in OUT
# merged (--summarize; after the last call, copy every call's gpu_zoo_part*.json into one folder and summarize that):
#   bash bench/gpu_zoo_whole.sh OUT_DIR COMMIT [DEADLINE_S] [PER_GPU] [CALL/CALLS]
# ONLY=a,b,...: those zoo kernels alone (a re-run of the kernels a change touched).
# CALL/CALLS (default 1/1): with 2/2, the second of two device calls, each with half the zoo (twice the GPU time a kernel).
# 451 s at 455222a with PER_GPU 1 (two parts of 20 kernels: results/gpu-zoo/run-2026-11-30-final-455222a/); PER_GPU 2
# is the earlier four-part layout (the parts of one GPU then share its lock).
set -u
OUT=${1:?output directory}
export S2S_COMMIT=${2:-unknown}
DEADLINE=${3:-480}
PER_GPU=${4:-1}
CALL=${5:-1/1}
CALLS=${CALL#*/}
CALL=${CALL%/*}
export CUPY_TF32=0
. "$(dirname "$0")/gpu_preamble.sh"
gpu_info index,name,driver_version,memory.total
gpu_watch
G=${GPUS:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')}
[ "$G" -ge 1 ] 2>/dev/null || G=1
K=$((G * PER_GPU * CALLS))  # parts in all
N=$(cd bench && python3 -c "from zoo_catalog import ZOO; print(len(ZOO))")  # the zoo's kernels
PARALLEL=$(( (N + K - 1) / K ))  # every kernel of a part at once
FIRST=$(( (CALL - 1) * G * PER_GPU + 1 ))
LAST=$(( CALL * G * PER_GPU ))
JOBS=$(( $(nproc) / (G * PER_GPU) ))  # the cores shared by the parts of this call
part() {  # GPU PART
  CUDA_VISIBLE_DEVICES=$1 S2S_DEVICE_LOCK=/tmp/s2s-gpu$1.lock timeout $((DEADLINE + 45)) \
    python3 bench/gpu_zoo.py --part "$2/$K" --out "$OUT" --work "/tmp/s2s-zoo$2" --deadline "$DEADLINE" \
    --parallel "$PARALLEL" --jobs "$JOBS" --max-evals 30 ${ONLY:+--only "$ONLY"} > "$OUT/part$2.log" 2>&1
  echo "part $2 on GPU $1 rc=$? at ${SECONDS}s"
}
pids=()
if [ -n "${GPU_TESTS:-}" ]; then  # pytest arguments: `-m gpu` tests beside the parts, under the last GPU's lock
  # shellcheck disable=SC2086
  (CUDA_VISIBLE_DEVICES=$((G - 1)) S2S_DEVICE_LOCK=/tmp/s2s-gpu$((G - 1)).lock timeout 400 \
    python3 -m pytest -q -m gpu -p no:cacheprovider $GPU_TESTS > "$OUT/gputests.log" 2>&1; echo "gputests rc=$? at ${SECONDS}s") &
  pids+=($!)
fi
for i in $(seq "$FIRST" "$LAST"); do
  part $(( (i - 1) % G )) "$i" &
  pids+=($!)
done
wait "${pids[@]}"
gpu_unwatch
timeout 30 python3 bench/gpu_zoo.py --summarize "$OUT" --out "$OUT" > "$OUT/summary.log" 2>&1
grep "^| \|Geometric\|Per family" "$OUT"/gpu_zoo_summary.md 2>/dev/null | cut -c1-170
[ -f "$OUT/gputests.log" ] && tail -2 "$OUT/gputests.log"
pack zoo-whole.tgz 'gpu_zoo_summary.*' '*.tgz' 'gpu.txt'
echo "done ${SECONDS}s"
