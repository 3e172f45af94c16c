#!/usr/bin/env bash
# The stencil passes on the GPU: the zoo's eight stencil kernels optimized with the built-in proposer (stencil-tiling,
# stencil-streaming, delinearize-2d then stencil-tiling, hoist-invariants among the candidates; at most 20 evaluations
# each, re-timed winners), beside the vendor-free roofline floor. Two device calls, each under 600 s:
#   bash bench/gpu_stencils.sh OUT_DIR COMMIT a     # jacobi2d, conv2d_3x3, fdtd_hz, heat3d_zloop      (~8 min)
#   bash bench/gpu_stencils.sh OUT_DIR COMMIT b     # laplace3d, jacobi2d_macro, fdtd_e, conv2d_5x5    (~8 min)
# writes OUT_DIR/gpu_zoo_part1of1.{json,md} (per kernel: speedup, winner's pipeline, evaluations) and the MEPs'
# reports (each candidate's origin and verdict in history.sqlite) in one archive, as bench/gpu_zoo.sh does.
set -u
OUT=${1:?output directory}
export S2S_COMMIT=${2:-unknown}
case "${3:?a or b}" in
  a) KERNELS=jacobi2d,conv2d_3x3,fdtd_hz,heat3d_zloop ;;
  b) KERNELS=laplace3d,jacobi2d_macro,fdtd_e,conv2d_5x5 ;;
  *) echo "unknown half $3"; exit 2 ;;
esac
export CUPY_TF32=0
. "$(dirname "$0")/gpu_preamble.sh"
gpu_info
t0=$SECONDS
timeout 560 python3 bench/gpu_zoo.py --part 1/1 --only "$KERNELS" --out "$OUT" --work /tmp/s2s-zoo --deadline 480 \
  --parallel 4 --max-evals 20 > "$OUT/stencils-$3.log" 2>&1
echo "stencil zoo $3 rc=$? $((SECONDS - t0))s"
tail -40 "$OUT"/gpu_zoo_*.md 2>/dev/null
pack "zoo-stencils-$3.tgz" 'gpu_zoo_*.md'
