#!/usr/bin/env bash
# The sample figures re-run the honest way (issue 15), in one device call on ONE H200 (about 330 s in all):
#   1. capture:  each of the 13 sample MEPs (bench/meps) copied, and the application's own data attached to the copy
#                (`s2s capture samples/APP --kernel FILE:NAME --build-cmd 'make ... <the MEP's sizes>' --run-cmd ./APP
#                --into COPY`), all at once, each under a timeout, then replayed (`s2s run --no-time`) (bench/gpu_samples.py
#                capture); a kernel whose capture or replay fails (s2s capture does not instrument HIP applications yet)
#                is optimized on generated inputs only
#   2. optimize: all 13 at once with the built-in proposer (bench/gpu_bench.py), at most 30 evaluations each, until the
#                call's deadline; every candidate of a captured MEP is checked on the captured data first, the top 3 are
#                re-timed against the original's noise band before a winner is declared
#   3. summary:  OUT/gpu_samples.{json,md}: per kernel the re-timed winner's speedup (1.00x: no win, failed, refused on
#                the captured data, not run), held to captured data or not, evaluations (to best); geomeans over the 8
#                CUDA kernels, the 5 HIP kernels and all 13 (bench/geomean.py); in-sample
#   bash bench/gpu_samples.sh OUT_DIR [COMMIT] [dry]
# Wall time: setup (the wheels of .whl/, which the device call must carry) ~15 s, captures and replays ~30-60 s (at most
# 95 s), optimizing until TOTAL - 45 s (each loop stops 75 s before that deadline), summary and archive ~10 s: 300-335 s.
# dry (no GPU needed): the captures build the instrumented applications but do not run them (run command `true`), and
# nothing is optimized: the summary then counts every kernel "not run", 1.00x.
# OUT keeps gpu_samples.{md,json}, gpu.txt and samples.tgz (everything: logs, captures.json, gpu_bench's JSON, each
# MEP's mep.toml and history.sqlite). TOTAL (env S2S_SAMPLES_TOTAL, default 330) is the wall-time budget in seconds.
set -u
OUT=${1:?output directory}
export S2S_COMMIT=${2:-unknown}
TOTAL=${S2S_SAMPLES_TOTAL:-330}
DRY=""
[ "${3:-}" = dry ] && DRY=--dry
. "$(dirname "$0")/gpu_preamble.sh"
[ -d .whl ] || export PYTHONPATH=${PYTHONPATH:-$PWD}
gpu_info
WORK=/tmp/s2s-samples
rm -rf "$WORK" && mkdir -p "$WORK"
echo "setup done at ${SECONDS}s"

stage 125 capture python3 bench/gpu_samples.py capture --meps bench/meps --work "$WORK" --timeout 80 --deadline 95 --parallel 13 $DRY
cat "$OUT/capture.log"
cp "$WORK/captures.json" "$OUT/" 2>/dev/null

# the rest of the budget, less the summary and the archive, goes to optimizing; each loop stops 75 s before the deadline
# so that its winner can be declared (the original against itself three times, the top 3 re-timed)
OPT=$((TOTAL - SECONDS - 45))
[ "$OPT" -lt 120 ] && OPT=120
if [ -z "$DRY" ]; then
  echo "optimize: deadline ${OPT}s"
  stage $((OPT + 40)) optimize python3 bench/gpu_bench.py --meps "$WORK/meps" --out "$OUT" --work "$WORK/opt" \
    --tag gpu_samples_optimize --max-evals 30 --deadline "$OPT" --reserve 75 --parallel 13 --jobs 2
fi

stage 30 summary python3 bench/gpu_samples.py summarize --meps bench/meps --work "$WORK" \
  --optimized "$OUT/gpu_samples_optimize.json" --out "$OUT"
cat "$OUT/gpu_samples.md" 2>/dev/null || tail -20 "$OUT/summary.log"
for m in "$WORK"/opt/[0-9]*/; do
  d="$OUT/meps/$(basename "$m")" && mkdir -p "$d"
  cp "$m/mep.toml" "$m/history.sqlite" "$d/" 2>/dev/null
  cp "$m/capture/index.json" "$d/capture-index.json" 2>/dev/null
done
pack samples.tgz 'gpu_samples.md' 'gpu_samples.json' 'gpu.txt'
echo "done at ${SECONDS}s"
