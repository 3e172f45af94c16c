#!/usr/bin/env bash
# GPU evidence for issue 11 (capture first), on the H200, in well under 8 minutes:
#   (a) capture + replay of samples/particles_struct_cuda (a kernel taking a struct of device pointers by value)
#   (b) `s2s auto APP --build-cmd ... --run-cmd ...` end to end on real applications of the development corpus
#       (NPB-GPU CG/MG/EP class S, Parboil sgemm/stencil with generated inputs, BabelStream), copied beforehand
#       into the git-ignored .gpu/apps/ by `bash bench/prepare_gpu_apps.sh` (run that here, before the batch).
# Results: OUT/auto_apps.json and OUT/auto_apps.md (GPU, date, commit), per application OUT/<app>.log and
# OUT/<app>.diff, everything also in OUT/auto_apps.tgz.
#   bash bench/gpu_auto_apps.sh OUT_DIR [COMMIT] [APPS (comma-separated)] [DEADLINE_S]
set -u
OUT=${1:?output directory}
export S2S_COMMIT=${2:-unknown}
APPS=${3:-struct,npb-cg,parboil-sgemm,npb-mg,parboil-stencil,npb-ep,babelstream}
DEADLINE=${4:-440}
. "$(dirname "$0")/gpu_preamble.sh"
gpu_info
if [ ! -d .gpu/apps ]; then echo ".gpu/apps is missing: run bash bench/prepare_gpu_apps.sh first" >&2; exit 2; fi
python3 bench/gen_app_inputs.py .gpu/apps || exit 1
timeout $((DEADLINE + 30)) python3 bench/auto_apps.py --out "$OUT" --apps "$APPS" --deadline "$DEADLINE" \
  --per-app 170 --top 1 --max-evals 8 --rounds 2 --runs 3
echo "auto_apps rc=$?"
pack auto_apps.tgz
