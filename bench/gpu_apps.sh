#!/usr/bin/env bash
# The application benchmark on the GPU machine, one device call (bench/apps.py says what it measures):
#   bash bench/gpu_apps.sh OUT COMMIT [bench/apps.py options...]
# e.g. --check-only (the catalogue check of every laid-out application), or --label held-out --deadline 520.
# Needs .gpu/apps (python3 bench/apps/layout.py .gpu/apps [--label ...], here) and .whl (tree-sitter, tree-sitter-cuda,
# libclang wheels for Python 3.12) carried. Returns OUT/apps_summary.{json,md}, OUT/check.json and OUT/apps.tgz (the
# logs and every auto-report.json; no MEP data, no diffs: they quote the applications' sources).
set -u
OUT=${1:?output directory}
export S2S_COMMIT=${2:-unknown}
shift 2
. "$(dirname "$0")/gpu_preamble.sh"
gpu_info
gpu_watch
export S2S_DEVICE_LOCK=/tmp/s2s-apps-device.lock
python3 bench/apps.py --apps-dir .gpu/apps --out "$OUT/run" "$@"
echo "apps rc=$?"
gpu_unwatch
cp "$OUT"/run/apps_summary.json "$OUT"/run/apps_summary.md "$OUT"/run/check.json "$OUT"/ 2>/dev/null
(cd "$OUT/run" && tar czf "$OUT/apps.tgz" logs check.json $(ls work/*/auto-report.json 2>/dev/null) 2>/dev/null)
rm -rf "$OUT/run"
ls -la "$OUT"
