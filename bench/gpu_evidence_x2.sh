#!/usr/bin/env bash
# One device call on a 2-GPU machine (nvidia-h200-x2) for the GPU evidence of issues 11 and 12, in five streams:
#   GPU 0: auto on real applications (struct sample, NPB CG, Parboil sgemm); then the verification evidence
#   GPU 1: auto on real applications (NPB MG, Parboil stencil, NPB EP); the safety evidence; static-vs-captured fidelity
# Each GPU has its own device lock, so timed evaluations never overlap on a GPU; the correctness-only streams
# (cheats, safety, fidelity) share the GPU with the timed ones (their load is noise there, alternation cancels most).
# Needs .gpu/apps (bench/prepare_gpu_apps.sh), .gpu/corpus (bench/fidelity.py --pack .gpu/corpus) and .whl carried.
#   bash bench/gpu_evidence_x2.sh OUT_DIR COMMIT
set -u
OUT=${1:?output directory}
C=${2:-unknown}
export S2S_COMMIT=$C
. "$(dirname "$0")/gpu_preamble.sh"
if [ -d .whl ]; then  # installed once, then out of the way: the stream scripts would each reinstall into the same place at once
  mv .whl /tmp/whl-installed
fi
export PYTHONPATH=/tmp/site:$PWD
gpu_info index,name,driver_version,memory.total
stream() {  # GPU NAME SECONDS CMD...
  local gpu=$1 name=$2 secs=$3; shift 3
  mkdir -p "$OUT/$name"
  local t0=$SECONDS
  CUDA_VISIBLE_DEVICES=$gpu S2S_DEVICE_LOCK=/tmp/s2s-gpu$gpu.lock timeout "$secs" "$@" > "$OUT/$name/stream.log" 2>&1
  echo "$name (GPU $gpu) rc=$? $((SECONDS - t0))s"
}
stream 0 auto1 540 bash bench/gpu_auto_apps.sh "$OUT/auto1" "$C" struct,npb-cg,parboil-sgemm 420 &
stream 1 auto2 540 bash bench/gpu_auto_apps.sh "$OUT/auto2" "$C" npb-mg,parboil-stencil,npb-ep 420 &
stream 0 verif 540 bash bench/gpu_verification.sh "$OUT/verif" "$C" &
stream 1 safety 400 bash bench/gpu_safety.sh "$OUT/safety" "$C" &
DEADLINE=360 PER_PROGRAM=2 stream 1 fidelity 540 bash bench/fidelity_gpu.sh "$OUT/fidelity" "$C" &
wait
for f in auto1/auto_apps auto2/auto_apps verif/cheat_catalogue_cuda verif/gpu_winner safety/gpu_safety fidelity/fidelity_capture; do
  [ -f "$OUT/$f.md" ] && cp "$OUT/$f.md" "$OUT/$(echo "$f" | tr / -).md"
done
tail -n 25 "$OUT"/*.md
(cd "$OUT" && tar czf /tmp/evidence.tgz --exclude='*.tgz' . && mkdir -p /tmp/keep && mv ./*.md /tmp/keep/ 2>/dev/null; \
  find . -mindepth 1 -maxdepth 1 -exec rm -rf {} +; mv /tmp/evidence.tgz /tmp/keep/* .)
