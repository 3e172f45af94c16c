#!/usr/bin/env bash
# GPU evidence of issue 12 "Verification" and issue 15 "Honest measurement" on the H200, in one device call (< 8 min):
#   cheats:  the cheat catalogue (bench/cheat_catalogue.py) on CUDA: every entry must be caught with its verdict
#   winner:  three sample MEPs optimized (<= 12 evaluations each; matvec, transpose, axpby: a no-win case): the noise band of the original against itself and
#            the re-timed top-3 winner declaration, per kernel (gpu_winner.json: noise_band, winner)
#   bash bench/gpu_verification.sh OUT_DIR [COMMIT]
set -u
OUT=${1:?output directory}
export S2S_COMMIT=${2:-unknown}
. "$(dirname "$0")/gpu_preamble.sh"
[ -d .whl ] || export PYTHONPATH=${PYTHONPATH:-$PWD}
gpu_info
stage 200 cheats python3 bench/cheat_catalogue.py --backend cuda --out "$OUT" --work /tmp/s2s-cheats
stage 250 winner python3 bench/gpu_bench.py --meps bench/meps --out "$OUT" --work /tmp/s2s-winner --tag gpu_winner \
  --only 02-heat3d_cuda.matvec_rows,06-heat3d_cuda.transpose_naive,13-heat3d_cuda.axpby_t --max-evals 12 --deadline 150 --parallel 3
tail -40 "$OUT/cheat_catalogue_cuda.md" "$OUT/gpu_winner.md" 2>/dev/null
python3 - "$OUT" <<'PY'
import json, sys
try:
    doc = json.load(open(f"{sys.argv[1]}/gpu_winner.json"))
except OSError:
    sys.exit(0)
for r in doc["kernels"]:
    print(r.get("mep"), "noise band:", r.get("noise_band"), "| winner:", (r.get("winner") or {}).get("why"))
PY
