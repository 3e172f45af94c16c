#!/usr/bin/env bash
# Issue 12 evidence on the GPU machine (about 2-4 minutes): bash bench/gpu_safety.sh OUT_DIR [COMMIT]
set -u
OUT=${1:-${OUT:?output directory}}
export S2S_COMMIT=${2:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
. "$(dirname "$0")/gpu_preamble.sh"
timeout 450 python3 bench/gpu_safety.py --out "$OUT"
