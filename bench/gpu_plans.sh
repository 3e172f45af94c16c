#!/usr/bin/env bash
# Several plan files (bench/plans/*.toml, bench/gpu_zoo_plans.py) in one device call on nvidia-h200-x2: plan I on GPU
# (I-1) % (the GPUs there), every plan at once, each GPU its own device lock (a plan's timed runs never overlap another's on its GPU):
#   bash bench/gpu_plans.sh OUT_DIR COMMIT DEADLINE_S PLAN.toml [PLAN.toml...]
# With GPU_TESTS set (pytest arguments), those tests run first (`-m gpu`), their log in OUT/gputests.log.
# Each plan writes OUT/NAME.{json,md}; everything is packed into OUT/plans.tgz beside the markdown.
set -u
OUT=${1:?output directory}
export S2S_COMMIT=${2:-unknown}
DEADLINE=${3:?deadline in seconds for each plan}
shift 3
export CUPY_TF32=0
. "$(dirname "$0")/gpu_preamble.sh"
gpu_info index,name,driver_version,memory.total
if [ -n "${GPU_TESTS:-}" ]; then
  # shellcheck disable=SC2086
  stage 240 gputests python3 -m pytest -q -m gpu -p no:cacheprovider $GPU_TESTS
  tail -3 "$OUT/gputests.log"
fi
gpu_watch
i=0
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c GPU)
[ "$ngpu" -ge 1 ] || ngpu=1
pids=()
for plan in "$@"; do
  g=$((i % ngpu))
  name=$(basename "$plan" .toml)
  (CUDA_VISIBLE_DEVICES=$g S2S_DEVICE_LOCK=/tmp/s2s-gpu$g.lock timeout $((DEADLINE + 60)) \
    python3 bench/gpu_zoo_plans.py "$plan" "$OUT" --work "/tmp/s2s-plan-$name" --deadline "$DEADLINE" --jobs 8 \
    > "$OUT/$name.log" 2>&1; echo "$name on GPU $g rc=$? at ${SECONDS}s") &
  pids+=($!)
  i=$((i + 1))
done
wait "${pids[@]}"
gpu_unwatch
pack plans.tgz '*.md'
echo "done ${SECONDS}s"
