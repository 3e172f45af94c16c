#!/usr/bin/env bash
# Sequence MEPs on the GPU (issue 28, first slice). Three launch-bound time loops of our own sequence zoo:
#   heat1d_steps  two kernels a step, ping-pong buffers, a time index, 10,000 steps (20,000 launches)
#   wave2d_steps  two kernels a step (a 2-D grid, then the edges), three rotating buffers, 5,000 steps (10,000 launches)
#   fisher1d_steps  a stencil then an elementwise reaction on its output, 8,000 steps (16,000 launches): the pair fuses
# For each: the application built and run as it is (its own check and loop time), its loop captured from a real run into a
# sequence MEP (s2s.sequence.capture_sequence: one profiled run, one instrumented run), then the harness replays the
# window as the application made it (original), as one CUDA Graph (graph_window) and as a graph of the loop body
# launched once per body, nodes whose arguments change updated between launches (graph_body); it checks each final state
# against the original replay's, the original replay against the state the application left, and times them all; where
# two launches of the body fuse (s2s.sequence.fusion), also the fused window (fused) and it as one graph
# (fused_graph_window); where the body can be one cooperative launch (s2s.sequence.persistent), the window's iterations
# as one persistent kernel with a grid barrier between launches (persistent; its refusal reason printed otherwise).
# Then the reintegration: the host-code diff that makes the loop a graph of one body period, instantiated once and
# launched per body (s2s.sequence.host_graph, form graph_body), applied to a copy of the application, built and run: its
# own check and loop time beside the original's; and the same for the persistent form's diff (s2s.sequence.host_persistent:
# one cooperative launch per batch of the window's iterations).
# One device call, one to three minutes:
#   bash bench/gpu_sequences.sh OUT_DIR [REPS]
# prints per app the application's line, the variation found, the harness's JSON line and a summary line; exit 0 when
# every capture worked and every check passed.
set -u
OUT=${1:?output directory}
REPS=${2:-15}
. "$(dirname "$0")/gpu_preamble.sh"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$ROOT"
gpu_info
WORK=$(mktemp -d /tmp/s2s-sequences.XXXXXX)
status=0

one() {  # APP
  local app=$1 t0=$SECONDS
  echo "== $app"
  cp -r "$ROOT/bench/seqzoo/$app" "$WORK/$app"
  (cd "$WORK/$app" && make -s > /dev/null && "./$app") > "$OUT/$app.app.txt" 2>&1
  echo "application: $(cat "$OUT/$app.app.txt")"
  rm -f "$WORK/$app/$app"
  timeout 400 python3 - "$WORK/$app" "./$app" "$WORK/seq-$app" > "$OUT/$app.capture.txt" 2>&1 <<'PY'
import json, sys
from s2s.base.errors import UserError
from s2s.sequence.capture import capture_sequence
try:
    got = capture_sequence(sys.argv[1], "make", sys.argv[2], sys.argv[3], timeout=300)
except UserError as e:
    print(e.one_line()); sys.exit(2)
print(json.dumps({"sequence": got.sequence.as_dict(), "window_launches": len(got.window.launches),
                  "buffers": [b.bytes for b in got.window.buffers], "variation": got.variation.as_dict(), "notes": got.notes}))
PY
  local rc=$?
  echo "capture rc=$rc $((SECONDS - t0))s"
  cat "$OUT/$app.capture.txt"
  if [ $rc -ne 0 ]; then status=1; return; fi
  cp "$WORK/seq-$app/sequence.json" "$OUT/$app.sequence.json"
  (cd "$WORK/seq-$app" && make -s NVCC_ARCH=sm_90 > "$OUT/$app.build.txt" 2>&1) \
    || { echo "harness build failed"; cat "$OUT/$app.build.txt"; status=1; return; }
  (cd "$WORK/seq-$app" && timeout 180 ./harness "$REPS") > "$OUT/$app.harness.json" 2> "$OUT/$app.harness.err"
  local hrc=$?
  echo "harness rc=$hrc"
  cat "$OUT/$app.harness.json" "$OUT/$app.harness.err"
  [ $hrc -eq 0 ] || status=1
  # the reintegration: the loop as a body graph in a copy of the app, built and run (its own check and time)
  python3 -c 'import sys; from s2s.sequence.host_graph import graph_diff; sys.stdout.buffer.write(graph_diff(sys.argv[1]))' \
      "$WORK/seq-$app" > "$OUT/$app.graph.diff" 2> "$OUT/$app.graph.err"
  if [ -s "$OUT/$app.graph.diff" ]; then
    cp -r "$ROOT/bench/seqzoo/$app" "$WORK/$app-graph"
    (cd "$WORK/$app-graph" && { patch -s -p1 < "$OUT/$app.graph.diff" || git apply "$OUT/$app.graph.diff"; } && make -s > /dev/null && "./$app") \
      > "$OUT/$app.graph.app.txt" 2>&1
    echo "application, loop graphed: $(cat "$OUT/$app.graph.app.txt")"
  else
    echo "no graph diff: $(cat "$OUT/$app.graph.err")"
  fi
  # the persistent form reintegrated: one cooperative launch per batch of iterations, in a copy of the app
  python3 -c 'import sys; from s2s.sequence.host_persistent import persistent_diff; sys.stdout.buffer.write(persistent_diff(sys.argv[1]))' \
      "$WORK/seq-$app" > "$OUT/$app.persistent.diff" 2> "$OUT/$app.persistent.err"
  if [ -s "$OUT/$app.persistent.diff" ]; then
    cp -r "$ROOT/bench/seqzoo/$app" "$WORK/$app-persistent"
    (cd "$WORK/$app-persistent" && { patch -s -p1 < "$OUT/$app.persistent.diff" || git apply "$OUT/$app.persistent.diff"; } && make -s > /dev/null && "./$app") \
      > "$OUT/$app.persistent.app.txt" 2>&1
    echo "application, loop persistent: $(cat "$OUT/$app.persistent.app.txt")"
  else
    echo "no persistent diff: $(cat "$OUT/$app.persistent.err")"
  fi
  python3 - "$OUT/$app.harness.json" "$app" "$OUT/$app.app.txt" "$OUT/$app.graph.app.txt" "$OUT/$app.sequence.json" \
      "$OUT/$app.persistent.app.txt" <<'PY'
import json, os, re, sys
try:
    r = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
except (OSError, ValueError, IndexError):
    print("no JSON line from the harness"); sys.exit(0)
m, c = r["modes"], r["checks"]
own = re.search(r"in ([0-9.]+) ms", open(sys.argv[3]).read())
modes = "; ".join(f"{k} {m[k]['median_ms']:.3f} ms (x{r['speedup'][k]:.2f}, +{m[k]['setup_ms']:.1f} ms setup, "
                  f"{'identical' if c[k]['identical'] else 'max_rel %s' % c[k]['max_rel']})" for k in m if k != "original")
print(f"summary {sys.argv[2]}: {r['launches']} launches; the application's own loop {own.group(1) if own else '?'} ms; "
      f"original replay {m['original']['median_ms']:.3f} ms ({m['original']['per_launch_us']:.2f} us/launch); {modes}; "
      f"replay==capture {c['replay_vs_capture']['identical']}; verdict {r['verdict']}")
graphed = open(sys.argv[4]).read() if os.path.isfile(sys.argv[4]) else ""
g = re.search(r": (ok|FAILED) .*in ([0-9.]+) ms", graphed)
print(f"summary {sys.argv[2]} reintegrated: the application's loop as one graph {g.group(2) + ' ms, its check ' + g.group(1) if g else 'not run'}"
      f" (the original application's loop {own.group(1) if own else '?'} ms)")
# the persistent form's column: its time and speedup, or why it was not planned or not run
plan = json.load(open(sys.argv[5])).get("persistent", {}) if os.path.isfile(sys.argv[5]) else {}
if "persistent" in m:
    col = (f"{m['persistent']['median_ms']:.3f} ms (x{r['speedup']['persistent']:.2f}, +{m['persistent']['setup_ms']:.1f} ms setup, "
           f"{'identical' if c['persistent']['identical'] else 'max_rel %s' % c['persistent']['max_rel']}; grid barrier, "
           f"{plan.get('iterations', '?')} iterations in one launch of {plan.get('threads', '?')}-thread blocks)")
elif r.get("persistent_refused"):
    col = f"not run on this device: {r['persistent_refused']}"
else:
    col = f"not planned: {plan.get('reason', 'no plan in sequence.json')}"
print(f"summary {sys.argv[2]} persistent: {col}")
persisted = open(sys.argv[6]).read() if os.path.isfile(sys.argv[6]) else ""
q = re.search(r": (ok|FAILED) .*in ([0-9.]+) ms", persisted)
print(f"summary {sys.argv[2]} reintegrated persistent: the application's loop {q.group(2) + ' ms, its check ' + q.group(1) if q else 'not run'}"
      f" (the original application's loop {own.group(1) if own else '?'} ms)")
PY
}

one heat1d_steps
one wave2d_steps
one fisher1d_steps
rm -rf "$WORK"
exit $status
