#!/usr/bin/env bash
# Static values against captured ones on the development catalogue (issue 29), one device call (~7-8 min):
#   bash bench/gpu_fidelity_catalog.sh OUT COMMIT [bench/fidelity_catalog.py options...]
# The device command (run with carry [".gpu/apps.tgz", ".whl"], timeout_s 600; about 460 s; COMMIT literally, the
# device copy has no .git; the archive is extracted into .gpu/apps here when .gpu/apps is absent):
#   bash bench/gpu_fidelity_catalog.sh "$OUT" COMMIT --parallel 10 --deadline 420
# Without a committed CPU part (bench/results/fidelity/*-cpu/) the CPU keys are null: summarize again later with
#   python bench/fidelity_catalog.py --merge RETURNED/run/fidelity_catalog.json --static CPU/fidelity_catalog.json --out DIR
# Per development application laid out in .gpu/apps/NAME (bench/apps/layout.py; never the held-out split): ONE
# instrumented build and run capturing up to --per-app kernels (default 40: all it launches), every statically inferred value compared
# with the captured one (equal / FILL-IN / wrong), --parallel applications at a time, none started within 30 s of
# --deadline, every worker stopped with what it started at the deadline. The CPU figures (found, extracted, compile
# alone, runnable, compile-time sized) come from the newest committed CPU part (bench/results/fidelity/*-cpu/).
# Returns OUT/fidelity_summary.{json,md} and OUT/fidelity_catalog.tgz (fidelity_catalog.json, per-application rows and
# logs, gpu.txt, smi.csv, load.txt): the device returns a few files only.
set -u
OUT=${1:?output directory}
export S2S_COMMIT=${2:-unknown}
shift 2
. "$(dirname "$0")/gpu_preamble.sh"
[ -d .gpu/apps ] || { [ -f .gpu/apps.tgz ] && tar xzf .gpu/apps.tgz -C .gpu; }
[ -d .gpu/apps ] || { echo "no .gpu/apps (nor .gpu/apps.tgz): lay the applications out and carry them"; exit 2; }
gpu_info
gpu_watch
timeout -k 10 560 python3 bench/fidelity_catalog.py --capture --apps-dir .gpu/apps --out "$OUT/run" "$@" > "$OUT/run.log" 2>&1
echo "fidelity_catalog rc=$?"
gpu_unwatch
tail -30 "$OUT/run.log"
cp "$OUT"/run/fidelity_summary.json "$OUT"/run/fidelity_summary.md "$OUT"/ 2>/dev/null
mv "$OUT/run.log" "$OUT/run/" 2>/dev/null
mv "$OUT/gpu.txt" "$OUT/smi.csv" "$OUT/load.txt" "$OUT/run/" 2>/dev/null
pack fidelity_catalog.tgz fidelity_summary.json fidelity_summary.md
ls -la "$OUT"
