#!/usr/bin/env bash
# GPU evidence for issue 14 on a machine with 2 GPUs (nvidia-h200-x2), in well under 8 minutes:
# `s2s auto` over samples/heat3d_cuda and samples/hip_particles with --cluster local, then --cluster dask (a Dask
# worker per GPU, CUDA_VISIBLE_DEVICES pinned): wall times, each evaluation's GPU from the histories, winners the same
# or re-timed equal. Dask comes from .whl/ (see bench/README.md for the pip download command).
#   bash bench/gpu_cluster.sh OUT_DIR [COMMIT] [TOP] [MAX_EVALS]
set -u
OUT=${1:?output directory}
export S2S_COMMIT=${2:-unknown}
TOP=${3:-2}
EVALS=${4:-6}
. "$(dirname "$0")/gpu_preamble.sh"
export PYTHONPATH=${PYTHONPATH:-$PWD}
python3 -c "import distributed, dask; print('dask', dask.__version__, 'distributed', distributed.__version__)" || {
  echo "dask/distributed not importable: put their wheels in .whl/" >&2; exit 2; }
gpu_info index,name,driver_version,memory.total
rm -rf /tmp/s2s-gpu-cluster
timeout 470 python3 bench/gpu_cluster.py --out "$OUT" --work /tmp/s2s-gpu-cluster --top "$TOP" --max-evals "$EVALS" --rounds 1 --timeout 110
echo "gpu_cluster rc=$?"
cp /tmp/s2s-gpu-cluster/*.log "$OUT/" 2>/dev/null
pack gpu_cluster.tgz
