#!/usr/bin/env bash
# Static inference against the truth on the H200 (issue 11): every value `s2s extract` infers for kernels of real
# applications (NPB-GPU class S, cuda-samples), compared with what `s2s capture --compare-static` records from a real
# run: equal / FILL-IN / wrong. Needs the corpus trees packed beside the repo (they are not in it):
#   here:        .venv/bin/python bench/fidelity.py --pack .gpu/corpus
#   GPU machine: bash bench/fidelity_gpu.sh OUT_DIR [COMMIT]      (carry .gpu/corpus and .whl; about 7 minutes)
# Writes OUT_DIR/fidelity_capture.json and .md (GPU name, date, commit) and OUT_DIR/gpu.txt.
set -u
OUT=${1:?output directory}
export S2S_COMMIT=${2:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
export CUDA_MODULE_LOADING=EAGER
mkdir -p "$OUT"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
fi
[ -d .gpu/corpus/NPB-GPU ] || { echo "no .gpu/corpus: run 'python bench/fidelity.py --pack .gpu/corpus' first and carry it"; exit 2; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu.txt" 2>&1
timeout 540 python3 bench/fidelity.py --capture --corpus .gpu/corpus --out "$OUT" --per-program "${PER_PROGRAM:-2}" \
  --deadline "${DEADLINE:-420}" 2>&1 | tail -40
