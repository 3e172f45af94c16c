"""Issue 12 on a CUDA machine: nvcc really runs commands hidden in flags (the danger), s2s refuses every such flag
from mep.toml before nvcc starts (exit 2, nothing runs), `s2s run --variant best` runs the winner on the GPU, and a
harness that hangs on the GPU is killed with its whole process group at timing.timeout_s.

    python3 bench/gpu_safety.py --out DIR        (writes DIR/gpu_safety.json and DIR/gpu_safety.md)
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from provenance import commit, write_result  # noqa: E402

DANGERS = ["-DX=`touch {m}`", "-DX=$(touch {m})", "-DX=1;touch {m}", "-DX=1|touch {m}", "-DX=1&&touch {m}", "-ccbin={d}",
           "--compiler-bindir={d}", "-Xcompiler=-wrapper,{d}/gcc", "@{d}/opts.rsp", "--options-file={d}/opts.rsp"]


def s2s(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "s2s", *args], capture_output=True, text=True, cwd=ROOT, timeout=timeout)


def evil_dir(work: Path, marker: Path) -> Path:
    """A directory whose gcc (and options file) would touch `marker`: what -ccbin / @file would run or read."""
    d = work / "evil"
    d.mkdir(exist_ok=True)
    gcc = d / "gcc"
    gcc.write_text(f"#!/bin/sh\ntouch {marker}\nexec {shutil.which('gcc') or '/usr/bin/gcc'} \"$@\"\n")
    gcc.chmod(0o755)
    (d / "opts.rsp").write_text(f"-ccbin={d}\n")
    return d


def nvcc_runs_it(work: Path) -> list[dict[str, object]]:
    """The danger, shown with nvcc itself: each flag on a one-line .cu file; did the marker appear?"""
    src = work / "a.cu"
    src.write_text("__global__ void k() {}\nint main() { return 0; }\n")
    out = []
    for i, flag in enumerate(DANGERS):
        marker = work / f"nvcc-marker-{i}"
        d = evil_dir(work, marker)
        argv = ["nvcc", "-arch=sm_90", flag.format(m=marker, d=d), "-c", str(src), "-o", str(work / "a.o")]
        t0 = time.monotonic()
        try:
            rc = subprocess.run(argv, capture_output=True, text=True, timeout=120).returncode
        except (OSError, subprocess.TimeoutExpired) as exc:
            rc = f"{type(exc).__name__}"  # type: ignore[assignment]
        out.append({"flag": flag.format(m="MARKER", d="DIR"), "nvcc_rc": rc, "command_ran": marker.exists(),
                    "seconds": round(time.monotonic() - t0, 2)})
    return out


def cuda_mep(work: Path) -> Path:
    tree = work / "app"
    shutil.copytree(ROOT / "samples" / "heat3d_cuda", tree, ignore=shutil.ignore_patterns("build", "heat3d"))
    mep = work / "mep"
    res = s2s("extract", str(tree), "--kernel", "axpby_t", "-o", str(mep))
    if res.returncode != 0:
        raise SystemExit(f"extract failed: {res.stderr}")
    return mep


def s2s_refuses(work: Path, mep: Path) -> list[dict[str, object]]:
    toml = (mep / "mep.toml").read_text()
    out = []
    for i, flag in enumerate(DANGERS):
        marker = work / f"s2s-marker-{i}"
        d = evil_dir(work, marker)
        text = toml.replace("flags = [", "flags = [" + json.dumps(flag.format(m=marker, d=d)) + ", ", 1)
        (mep / "mep.toml").write_text(text)
        res = s2s("run", str(mep), "--no-time")
        out.append({"flag": flag.format(m="MARKER", d="DIR"), "s2s_rc": res.returncode, "command_ran": marker.exists(),
                    "message": res.stderr.strip().splitlines()[-1][:240] if res.stderr.strip() else ""})
    (mep / "mep.toml").write_text(toml)
    return out


def add_variant(mep: Path, vid: str, body_prefix: str, speedup: float) -> None:
    from s2s.mep.history import History

    src = (mep / "kernel.cu").read_text()
    at = src.index("{", src.index("__global__"))
    vdir = mep / "variants" / vid
    vdir.mkdir(parents=True, exist_ok=True)
    (vdir / "kernel.cu").write_text(src[:at + 1] + body_prefix + src[at + 1:])
    hist = History(mep / "history.sqlite")
    hist.add(vid, 1, "pass:gpu-safety", None, vid, None)
    hist.finish(vid, "ok", {"speedup": speedup})
    hist.close()


def run_best(mep: Path) -> dict[str, object]:
    add_variant(mep, "vbest", " /* the winner */ ", 2.0)
    add_variant(mep, "vslow", " /* a slower one */ ", 1.1)
    t0 = time.monotonic()
    res = s2s("run", str(mep), "--variant", "best", "--json")
    doc: dict[str, object] = {"rc": res.returncode, "seconds": round(time.monotonic() - t0, 1)}
    try:
        m = json.loads(res.stdout)
        doc.update(variant=m.get("variant_id"), verdict=m.get("verdict"), device=m.get("device"), speedup=m.get("speedup"))
    except ValueError:
        doc["stderr"] = res.stderr[-600:]
    return doc


def hang_is_killed(mep: Path) -> dict[str, object]:
    """A variant that never ends on the GPU: timed-out at timing.timeout_s, and no process of its group is left."""
    add_variant(mep, "vhang", " { volatile int s2s_spin = 1; while (s2s_spin) {} } ", 3.0)
    toml = (mep / "mep.toml").read_text()
    (mep / "mep.toml").write_text(toml.replace("timeout_s = 120.0", "timeout_s = 8.0"))
    t0 = time.monotonic()
    res = s2s("run", str(mep), "--variant", "vhang", "--json", timeout=400)
    seconds = time.monotonic() - t0
    (mep / "mep.toml").write_text(toml)
    time.sleep(1)
    left = subprocess.run(["pgrep", "-f", str(mep / "build" / "vhang")], capture_output=True, text=True).stdout.split()
    doc: dict[str, object] = {"rc": res.returncode, "seconds": round(seconds, 1), "processes_left": len(left)}
    try:
        m = json.loads(res.stdout)
        doc.update(verdict=m.get("verdict"), messages=m.get("messages", [])[:2])
    except ValueError:
        doc["stderr"] = res.stderr[-600:]
    return doc


def markdown(doc: dict[str, object]) -> str:
    lines = [f"# Issue 12 safety probes on {doc['gpu']}", "", f"date {doc['date']}, commit {doc['commit']}", "",
             "| flag from data | nvcc alone: command ran | s2s run: exit | s2s run: command ran |", "|---|---|---|---|"]
    for a, b in zip(doc["nvcc"], doc["s2s"]):  # type: ignore[call-overload]
        lines.append(f"| `` {a['flag']} `` | {a['command_ran']} | {b['s2s_rc']} | {b['command_ran']} |")
    rb, hk = doc["run_best"], doc["hang"]
    lines += ["", f"`s2s run --variant best`: rc {rb.get('rc')}, variant {rb.get('variant')}, verdict {rb.get('verdict')}, "  # type: ignore[union-attr]
              f"device {rb.get('device')}",
              f"hanging variant: rc {hk.get('rc')}, verdict {hk.get('verdict')} after {hk.get('seconds')} s "  # type: ignore[union-attr]
              f"(timing.timeout_s = 8), processes left {hk.get('processes_left')}"]  # type: ignore[union-attr]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "bench/results"))
    args = ap.parse_args()
    smi = shutil.which("nvidia-smi")
    gpu = subprocess.run([smi, "--query-gpu=name", "--format=csv,noheader"] if smi else ["true"], capture_output=True, text=True)
    with tempfile.TemporaryDirectory(prefix="s2s-safety-") as tmp:
        work = Path(tmp)
        mep = cuda_mep(work)
        doc: dict[str, object] = {"gpu": gpu.stdout.strip().splitlines()[0] if gpu.returncode == 0 and gpu.stdout.strip()
                                  else "no GPU", "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "commit": commit(),
                                  "nvcc": nvcc_runs_it(work), "s2s": s2s_refuses(work, mep)}
        doc["run_best"] = run_best(mep)
        doc["hang"] = hang_is_killed(mep)
    write_result(Path(args.out), "gpu_safety", doc, markdown(doc))
    print(markdown(doc))
    refused = all(r["s2s_rc"] == 2 and not r["command_ran"] for r in doc["s2s"])  # type: ignore[attr-defined]
    return 0 if refused else 1


if __name__ == "__main__":
    sys.exit(main())
