#!/usr/bin/env bash
# Issue 26's Done-when on an application whose hot kernel takes a second or more a launch: capture-first
#   s2s auto APP --build-cmd 'make ARCH=sm_90' --run-cmd ./matmul_chain --top 4 --max-evals 20 --runs 2
# on bench/longzoo/matmul_chain (ours: three naive 16384^2 FP32 products, each >= 1.6 s a launch on an H200, plus fill,
# rescale and row-sum kernels; its own run checks 64 sampled entries on the CPU). One device call of at most 580 s:
# auto runs under a deadline (default 500 s, the rest of the call is the preamble and the check after), its wall time
# recorded; then the application is built with auto's diff applied (the original when the diff is empty) and run once:
# its own PASS/FAIL line. bench/long_kernel_report.py writes OUT/long_kernel.{json,md}: GPU, date, commit, the label
# "in-sample (our own application)", finished within 10 minutes (yes / no / not decided when killed at the shorter
# deadline), auto's wall seconds, the tool's wall time per stage and every application build and run by purpose (from
# auto-report.json), each kernel's measured ms per launch, outcome and speedup, and the check after reintegration.
# OUT also keeps auto.log, auto-report.json, auto.diff and check.txt.
#   bash bench/gpu_long_kernel.sh OUT COMMIT [DEADLINE_S]
set -u
OUT=${1:?output directory}
COMMIT=${2:-unknown}
DEADLINE=${3:-500}
. "$(dirname "$0")/gpu_preamble.sh"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$ROOT"
gpu_info
APP=matmul_chain
SCR=$(mktemp -d /tmp/s2s-long-kernel.XXXXXX)
cp -r "$ROOT/bench/longzoo/$APP" "$SCR/app"
rm -f "$SCR/app/$APP"
CMD=(python3 -m s2s auto "$SCR/app" --build-cmd 'make ARCH=sm_90' --run-cmd "./$APP" --top 4 --max-evals 20 --runs 2
     --work "$SCR/work" --diff "$SCR/auto.diff")
echo "auto: ${CMD[*]} (killed after ${DEADLINE} s)"
T0=$(date +%s.%N)
timeout -k 15 "$DEADLINE" "${CMD[@]}" > "$OUT/auto.log" 2>&1
RC=$?
WALL=$(python3 -c "import sys; print(round($(date +%s.%N) - $T0, 3))")
echo "auto rc=$RC ${WALL}s"
tail -n 25 "$OUT/auto.log"
cp "$SCR/work/auto-report.json" "$OUT/" 2>/dev/null
cp "$SCR/auto.diff" "$OUT/" 2>/dev/null
# the application's own check after reintegration: a fresh copy with the diff applied, built and run once
cp -r "$ROOT/bench/longzoo/$APP" "$SCR/after"
rm -f "$SCR/after/$APP"
LEFT=$((575 - SECONDS))
if [ "$LEFT" -lt 20 ]; then
  echo "no time left in the call for the check after ($LEFT s)" > "$OUT/check.txt"
else
  (cd "$SCR/after" && if [ -s "$SCR/auto.diff" ]; then { patch -s -p1 < "$SCR/auto.diff" || git apply "$SCR/auto.diff" || exit 4; }; else echo "(no diff from auto, or an empty one: the original)"; fi \
     && timeout $((LEFT - 5)) make -s ARCH=sm_90 > /dev/null && timeout $((LEFT - 5)) "./$APP") > "$OUT/check.txt" 2>&1
  echo "check after rc=$? (left $LEFT s)"
fi
cat "$OUT/check.txt"
python3 "$ROOT/bench/long_kernel_report.py" --report "$SCR/work/auto-report.json" --wall-s "$WALL" --rc "$RC" \
  --deadline "$DEADLINE" --limit 600 --gpu "$OUT/gpu.txt" --commit "$COMMIT" --label "in-sample (our own application)" \
  --check "$OUT/check.txt" --command "s2s auto $APP --build-cmd 'make ARCH=sm_90' --run-cmd ./$APP --top 4 --max-evals 20 --runs 2" \
  --out "$OUT" --work "$SCR/work" > /dev/null
echo "summary rc=$? in $OUT/long_kernel.md; call ${SECONDS}s"
rm -rf "$SCR"
