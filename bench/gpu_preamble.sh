# The setup every bench/gpu_*.sh shares, sourced once the script has set OUT (its output directory):
#   . "$(dirname "$0")/gpu_preamble.sh"
# It keeps lazy module loading out of the first timed launch (CUDA_MODULE_LOADING=EAGER), creates $OUT, and installs
# the wheels carried in .whl/ (tree-sitter and the rest: the GPU machine reaches no registry) into /tmp/site, which it
# puts on PYTHONPATH with the checkout (a failed install ends the script with 1). Then it defines:
#   gpu_info [FIELDS]          the GPUs into $OUT/gpu.txt (FIELDS for nvidia-smi, default name,driver_version,memory.total)
#   gpu_watch                  every GPU's utilization once a second into $OUT/smi.csv and the host's load average every
#                              2 s into $OUT/load.txt (epoch seconds, then /proc/loadavg), in the background; gpu_unwatch
#                              stops both
#   stage SECONDS NAME CMD...  CMD under a timeout, its output in $OUT/NAME.log; prints "NAME rc=RC Ns"
#   pack NAME [KEEP...]        everything in $OUT archived as $OUT/NAME; with KEEP patterns (find -name), only the files
#                              matching one of them stay beside the archive (the device returns a few files only)
export CUDA_MODULE_LOADING=EAGER
mkdir -p "$OUT"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
fi

gpu_info() {
  nvidia-smi --query-gpu="${1:-name,driver_version,memory.total}" --format=csv > "$OUT/gpu.txt" 2>&1
}

gpu_watch() {
  nvidia-smi --query-gpu=timestamp,index,utilization.gpu,utilization.memory --format=csv -l 1 > "$OUT/smi.csv" 2>&1 &
  GPU_WATCH=$!
  (while sleep 2; do echo "$(date +%s) $(cat /proc/loadavg 2>/dev/null)"; done > "$OUT/load.txt") &
  LOAD_WATCH=$!
}

gpu_unwatch() {
  kill "$GPU_WATCH" "$LOAD_WATCH" 2>/dev/null
}

stage() {
  local secs=$1; shift; local name=$1; shift; local t0=$SECONDS
  timeout "$secs" "$@" > "$OUT/$name.log" 2>&1; echo "$name rc=$? $((SECONDS - t0))s"
}

pack() {
  local name=$1; shift
  local keep=()
  for k in "$@"; do keep+=(! -name "$k"); done
  (cd "$OUT" && tar czf "/tmp/$name" --exclude "$name" . \
    && if [ $# -gt 0 ]; then find . -mindepth 1 -maxdepth 1 "${keep[@]}" -exec rm -rf {} +; fi \
    && mv "/tmp/$name" .)
}
