#!/usr/bin/env bash
# The cost model judged on the GPU, and the profiler feedback taken, in one device call (~7-9 min with the defaults):
#   bash bench/gpu_cost_model.sh OUT_DIR COMMIT [KERNEL ...]
# For each zoo kernel (default: five of different kinds): extract its MEP, `s2s optimize` it with the built-in proposer
# (every candidate's prediction is recorded as it is proposed; ncu profiles the original and the winner once), write
# `s2s report` (report.html, report.png) and `s2s report --json`; then bench/cost_model_accuracy.py over all of them
# writes OUT/cost_model_accuracy.{json,md}: per MEP the Spearman rank correlation of predicted and measured speedups,
# the predicted best against the measured best, and the predictions that were most wrong.
# Needs .whl/ as for gpu_zoo.sh (tree-sitter for extraction and the kernel model).
set -u
OUT=${1:?output directory}
export S2S_COMMIT=${2:-unknown}
shift 2 || shift $#
KERNELS=${*:-gemv_rows gemm_naive syrk jacobi2d transpose_2d}
BUDGET=${S2S_COST_BUDGET:-45}  # seconds of proposing per kernel, before the re-timing and ncu
mkdir -p "$OUT/reports"
OUT=$(cd "$OUT" && pwd)
. "$(dirname "$0")/gpu_preamble.sh"
gpu_info
command -v ncu >> "$OUT/gpu.txt" 2>&1 || echo "ncu: not installed" >> "$OUT/gpu.txt"
WORK=/tmp/s2s-cost-model
rm -rf "$WORK" && mkdir -p "$WORK"
t0=$SECONDS
for k in $KERNELS; do
  mep="$WORK/$k"
  {
    echo "== $k"
    python3 -m s2s extract "bench/zoo/$k" --kernel "$k" -o "$mep" &&
    timeout $((BUDGET + 55)) python3 -m s2s optimize "$mep" --max-evals 30 --rounds 4 --no-patterns --time-budget "$BUDGET" --jobs 8
    echo "optimize rc=$? at $((SECONDS - t0)) s"
    python3 -m s2s report "$mep" && python3 -m s2s report "$mep" --json > "$OUT/reports/$k.json"
    mkdir -p "$OUT/reports/$k" && cp "$mep"/report.{md,html,png} "$OUT/reports/$k/" 2>/dev/null
  } >> "$OUT/run.log" 2>&1
done
python3 bench/cost_model_accuracy.py "$OUT/reports" --out "$OUT" > /dev/null 2>> "$OUT/run.log"
echo "rc=$? $((SECONDS - t0)) s"
cat "$OUT/cost_model_accuracy.md" 2>/dev/null | head -60
# the device returns at most 8 files: the reports travel in one archive
(cd "$OUT" && tar czf reports.tgz reports run.log && rm -rf reports run.log)
