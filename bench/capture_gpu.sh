#!/usr/bin/env bash
# Capture evidence on a GPU: record kernels of samples/heat3d_cuda from a real run of the application
# (`s2s capture`), replay them in their MEPs (`s2s run --json`: the reference must reproduce the captured
# outputs first), and check that a tampered MEP is refused (exit 2). Needs python3, nvcc and make, and
# the repository on PYTHONPATH (tree-sitter, jinja2 and rich installed).
#   bash bench/capture_gpu.sh OUT_DIR
set -u
OUT=${1:?output directory}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
export CUDA_MODULE_LOADING=EAGER
WORK=$(mktemp -d /tmp/s2s-capture-gpu.XXXXXX)
S2S="python3 -m s2s"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/gpu.txt" 2>&1
( cd "$ROOT" && git rev-parse HEAD 2>/dev/null ) > "$OUT/commit.txt"
# a copy of the sample, hashed before and after: the capture must leave it untouched
cp -r "$ROOT/samples/heat3d_cuda" "$WORK/app"
rm -rf "$WORK/app/build" "$WORK/app/heat3d"
tree_hash() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-64); }
HASH0=$(tree_hash "$WORK/app")

one() {  # NAME KERNEL LAUNCH-OPTION
  local name=$1 kernel=$2 which=$3 t0=$SECONDS
  $S2S capture "$WORK/app" --kernel "$kernel" --build-cmd "make -j8" --run-cmd ./heat3d $which \
      -o "$WORK/mep-$name" > "$OUT/$name.capture.log" 2>&1
  echo "$?" > "$OUT/$name.capture.rc"
  if [ -f "$WORK/mep-$name/mep.toml" ]; then
    cp "$WORK/mep-$name/mep.toml" "$OUT/$name.mep.toml"
    cp "$WORK/mep-$name/capture/index.json" "$OUT/$name.index.json" 2>/dev/null
    $S2S run "$WORK/mep-$name" --json --no-time > "$OUT/$name.run.json" 2> "$OUT/$name.run.err"
    echo "$?" > "$OUT/$name.run.rc"
  fi
  echo "$name: capture rc=$(cat "$OUT/$name.capture.rc") run rc=$(cat "$OUT/$name.run.rc" 2>/dev/null) $((SECONDS - t0))s"
}

one stencil7 stencil7 "--launch 3"
one matvec_rows matvec_rows "--launch 1"

# a tampered MEP (the kernel scaled by 1.5) must not reproduce the captured outputs: exit 2 before any check
if [ -d "$WORK/mep-stencil7" ]; then
  cp -r "$WORK/mep-stencil7" "$WORK/mep-tampered"
  sed -i 's/u_new\[c\] = u\[c\] + diffusion_number(p) \* lap;/u_new[c] = 1.5f * (u[c] + diffusion_number(p) * lap);/' \
      "$WORK/mep-tampered/kernel.cu"
  $S2S run "$WORK/mep-tampered" --json --no-time > "$OUT/tampered.run.json" 2> "$OUT/tampered.run.err"
  echo "$?" > "$OUT/tampered.run.rc"
  echo "tampered: run rc=$(cat "$OUT/tampered.run.rc") (2 expected)"
fi
HASH1=$(tree_hash "$WORK/app")

python3 - "$OUT" "$HASH0" "$HASH1" <<'PY'
import json, pathlib, sys
out, h0, h1 = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3]
def read(name, default=None):
    p = out / name
    return p.read_text().strip() if p.is_file() else default
summary = {"gpu": read("gpu.txt"), "commit": read("commit.txt"), "tree_untouched": h0 == h1, "kernels": {}}
for name in ("stencil7", "matvec_rows"):
    run = None
    try:
        run = json.loads(read(f"{name}.run.json") or "null")
    except ValueError:
        pass
    summary["kernels"][name] = {
        "capture_rc": read(f"{name}.capture.rc"), "run_rc": read(f"{name}.run.rc"),
        "verdict": run and run.get("verdict"), "input_sets": run and run.get("input_sets"),
        "reproduced": bool(run and any("reproduces the application's outputs" in m for m in run.get("messages", []))),
        "messages": run and run.get("messages"), "run_error": read(f"{name}.run.err"),
    }
summary["tampered"] = {"run_rc": read("tampered.run.rc"), "error": read("tampered.run.err")}
summary["ok"] = (summary["tree_untouched"] and all(k["verdict"] == "ok" and k["reproduced"] for k in summary["kernels"].values())
                 and summary["tampered"]["run_rc"] == "2")
(out / "capture_gpu.json").write_text(json.dumps(summary, indent=1) + "\n")
print(json.dumps({"ok": summary["ok"], "tree_untouched": summary["tree_untouched"],
                  **{k: v["verdict"] for k, v in summary["kernels"].items()}, "tampered_rc": summary["tampered"]["run_rc"]}))
PY
rm -rf "$WORK"
