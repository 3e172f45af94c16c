#!/usr/bin/env bash
# The zoo's bandwidth-bound kernels against the copy bandwidth (bench/gpu_zoo_bandwidth.py), one part per device call:
#   bash bench/gpu_zoo_bandwidth.sh OUT_DIR COMMIT 1    # then 2, then 3: each about 5 minutes, under 580 s
# Each writes OUT_DIR/zoo_bandwidth_partIof3.{json,md}: per kernel the floor, and per pipeline its verdict, time,
# speedup over the original and fraction of the floor.
set -u
OUT=${1:?output directory}
export S2S_COMMIT=${2:-unknown}
PART=${3:?part 1, 2 or 3}
export CUDA_MODULE_LOADING=EAGER CUPY_TF32=0
mkdir -p "$OUT"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu.txt" 2>&1
t0=$SECONDS
timeout 580 python3 bench/gpu_zoo_bandwidth.py "$OUT" --part "$PART/3" --work /tmp/s2s-zoo-bw > "$OUT/bandwidth$PART.log" 2>&1
echo "part $PART rc=$? $((SECONDS - t0))s"
cat "$OUT/zoo_bandwidth_part${PART}of3.md" 2>/dev/null
