#!/usr/bin/env bash
# The values the inference rules of 746dca3 added (issue 11), against a real run on the H200: the default run without
# input files (NPB BT/SP/LU read inputXX.data when present), array elements (grid_points[0]), host loops run on known
# values and a buffer at a known offset (LU pintgr_3), cudaDeviceProp.sharedMemPerBlock (BT z_solve_3), a local pointer
# that may be one of two same-size buffers (mergeSort), a struct member pointer (simpleCallback). Each kernel is
# captured with `s2s capture --compare-static`: equal / FILL-IN / wrong. Needs the corpus packed beside the repo:
#   here:        .venv/bin/python bench/fidelity.py --pack .gpu/corpus
#   GPU machine: bash bench/fidelity_default_run_gpu.sh OUT_DIR [COMMIT]   (carry .gpu/corpus and .whl; about 6 minutes)
# Writes OUT_DIR/fidelity_default_run_capture.json and .md (GPU name, date, commit) and OUT_DIR/gpu.txt.
set -u
OUT=${1:?output directory}
export S2S_COMMIT=${2:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
. "$(dirname "$0")/gpu_preamble.sh"
[ -d .gpu/corpus/NPB-GPU ] || { echo "no .gpu/corpus: run 'python bench/fidelity.py --pack .gpu/corpus' first and carry it"; exit 2; }
gpu_info
KERNELS=SP/sp.cu:exact_rhs_gpu_kernel_2,SP/sp.cu:compute_rhs_gpu_kernel_2,LU/lu.cu:erhs_gpu_kernel_2
KERNELS=$KERNELS,LU/lu.cu:pintgr_gpu_kernel_3,LU/lu.cu:setiv_gpu_kernel,BT/bt.cu:add_gpu_kernel,BT/bt.cu:y_solve_gpu_kernel_1
KERNELS=$KERNELS,BT/bt.cu:z_solve_gpu_kernel_3,mergeSort.cu:mergeSortSharedKernel,simpleCallback.cu:incKernel
timeout 570 python3 bench/fidelity.py --capture --corpus .gpu/corpus --out "$OUT" --stem fidelity_default_run \
  --kernels "${KERNELS_OVERRIDE:-$KERNELS}" --deadline "${DEADLINE:-480}" 2>&1 | tail -40
