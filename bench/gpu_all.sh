#!/usr/bin/env bash
# Everything the GPU evidence needs (H200), in one device call or two that each fit the 600 s limit:
#   part a: optimize every benchmark MEP, whole applications before/after (reductions held to captured data
#           first), MEP savings; the per-kernel pattern libraries are kept under OUT/w1-patterns
#   part b: the same MEPs again, each with the other kernels' patterns (leave-one-out; from PATTERNS_DIR,
#           default /tmp/w1), and the capture evidence
#   bash bench/gpu_all.sh OUT_DIR [COMMIT] [all|a|b] [PATTERNS_DIR]
set -u
OUT=${1:?output directory}
export S2S_COMMIT=${2:-unknown}
PART=${3:-all}
PATTERNS=${4:-/tmp/w1}
. "$(dirname "$0")/gpu_preamble.sh"
gpu_info
if [ "$PART" != b ]; then
  stage 300 optimize python3 bench/gpu_bench.py --meps bench/meps --out "$OUT" --work /tmp/w1 --deadline 285 --parallel 4
  mkdir -p "$OUT/w1-patterns" && cp /tmp/w1/patterns-*.json "$OUT/w1-patterns/" 2>/dev/null
  for m in /tmp/w1/[0-9]*/; do python3 -m s2s report "$m" > /dev/null 2>&1 && mkdir -p "$OUT/reports" \
    && cp "$m/report.md" "$OUT/reports/$(basename "$m").md"; done
  stage 160 app python3 bench/app_bench.py --work /tmp/w1 --out "$OUT" --runs 7 \
    --make-vars "MAT_N=2048 NX=256 NY=256 NZ=256 NPART=1048576 NBODY=32768 HIP_SHIM=$PWD/templates/hip_shim"
  stage 40 savings python3 bench/mep_savings.py --sample samples/heat3d_cuda --kernel matmul_naive --out "$OUT" \
    --make-vars "MAT_N=2048" --defines MAT_N=2048 --tag mep_savings_heat3d_cuda_matmul
  red=/tmp/w1/03-heat3d_cuda.reduce_energy   # held to captured data by app_bench: which result is nearer the exact sum?
  if [ -d "$red/capture" ]; then
    V=$(python3 -c "import json,re; a=json.load(open('$OUT/app_bench.json')); m=re.search(r'variant ([0-9.e+-]+)', ' '.join(a[0].get('checked_on_captured_data', []))); print(m.group(1) if m else '')")
    stage 30 truth python3 bench/reduction_truth.py "$red" --output energy --expr "np.sum(0.5 * u.astype(np.float64) ** 2)" ${V:+--variant-value $V}
  fi
fi
if [ "$PART" != a ]; then
  stage 200 inherit python3 bench/gpu_bench.py --meps bench/meps --out "$OUT" --work /tmp/w2 --inherit "$PATTERNS" --deadline 180 \
    --parallel 4 --tag gpu_optimize_inherited
  stage 60 capture bash bench/capture_gpu.sh "$OUT/capture"
fi
tail -20 "$OUT/gpu_optimize.md" "$OUT/gpu_optimize_inherited.md" 2>/dev/null
# the device returns at most 8 files: everything travels in one archive (the tables stay readable beside it)
(cd "$OUT" && tar czf "/tmp/results-$PART.tgz" . && find . -mindepth 1 -maxdepth 1 ! -name 'gpu_optimize*.md' -exec rm -rf {} + \
  && mv "/tmp/results-$PART.tgz" .)
