#!/usr/bin/env bash
# Sequence MEPs on the GPU (issue 28, first slice): the launch-bound time loop of bench/seqzoo/heat1d_steps (two kernels
# per step, ping-pong buffers, a time index; 10,000 steps) captured from a real run of the application into a sequence
# MEP (s2s.sequence.capture_sequence: one profiled run, one instrumented run), then its harness replays the window
# as the application made it (original), as one CUDA Graph (graph_window) and as a graph of the loop body launched once
# per body with the time-index node updated (graph_body), checks each final state against the original replay's and
# the original replay against the state the application left, and times the three. One device call, about a minute:
#   bash bench/gpu_sequences.sh OUT_DIR [REPS]
# prints the application's own line, the variation found, the harness's JSON line and a one-line summary; exit 0 when
# the capture worked and every check passed.
set -u
OUT=${1:?output directory}
REPS=${2:-15}
. "$(dirname "$0")/gpu_preamble.sh"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$ROOT"
gpu_info
WORK=$(mktemp -d /tmp/s2s-sequences.XXXXXX)
cp -r "$ROOT/bench/seqzoo/heat1d_steps" "$WORK/app"
(cd "$WORK/app" && make -s > /dev/null && ./heat1d_steps) > "$OUT/app.txt" 2>&1
echo "application: $(cat "$OUT/app.txt")"
t0=$SECONDS
timeout 400 python3 - "$WORK/app" "$WORK/seq" > "$OUT/capture.txt" 2>&1 <<'PY'
import json, sys
from s2s.base.errors import UserError
from s2s.sequence.capture import capture_sequence
try:
    got = capture_sequence(sys.argv[1], "make", "./heat1d_steps", sys.argv[2], timeout=300)
except UserError as e:
    print(e.one_line()); sys.exit(2)
print(json.dumps({"sequence": got.sequence.as_dict(), "window_launches": len(got.window.launches),
                  "buffers": [b.bytes for b in got.window.buffers], "variation": got.variation.as_dict(), "notes": got.notes}))
PY
rc=$?
echo "capture rc=$rc $((SECONDS - t0))s"
cat "$OUT/capture.txt"
[ $rc -eq 0 ] || exit 1
cp "$WORK/seq/sequence.json" "$WORK/seq/kernels.cu" "$OUT/" 2>/dev/null
(cd "$WORK/seq" && make -s NVCC_ARCH=sm_90 > "$OUT/build.txt" 2>&1) || { echo "harness build failed"; cat "$OUT/build.txt"; exit 1; }
(cd "$WORK/seq" && timeout 180 ./harness "$REPS") > "$OUT/harness.json" 2> "$OUT/harness.err"
hrc=$?
echo "harness rc=$hrc"
cat "$OUT/harness.json" "$OUT/harness.err"
python3 - "$OUT/harness.json" <<'PY'
import json, sys
try:
    r = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
except (OSError, ValueError, IndexError):
    print("no JSON line from the harness"); sys.exit(0)
m, c = r["modes"], r["checks"]
print(f"summary: {r['launches']} launches; original {m['original']['median_ms']:.3f} ms "
      f"({m['original']['per_launch_us']:.2f} us/launch), graph_window {m['graph_window']['median_ms']:.3f} ms "
      f"(x{r['speedup']['graph_window']:.2f}), graph_body {m['graph_body']['median_ms']:.3f} ms (x{r['speedup']['graph_body']:.2f}); "
      f"replay==capture {c['replay_vs_capture']['identical']}, graphs identical {c['graph_window']['identical']}/"
      f"{c['graph_body']['identical']}; verdict {r['verdict']}")
PY
rm -rf "$WORK"
exit $hrc
