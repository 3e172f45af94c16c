"""Scan throughput on real trees and generated ones, cold and warm, with 1 and 2 processes.

    python bench/scan_speed.py [--real /work/corpus] [--out bench/results] [--src DIR] [--quick]

* real: every source file under --real (the development corpus: cuda-samples, NPB-GPU, Parboil, cupy, CloverLeaf,
  BabelStream, torch_*, cutlass; over 2M lines), scanned cold (an empty cache) and warm (the same tree again), with
  1 and 2 worker processes; lines/s, files parsed vs skipped by the pre-filter vs cached, peak memory (getrusage of
  the scanning process and its workers), and the whole `s2s scan TREE --json` command on the warm tree.
* generated: trees of 1k, 2k, 4k and 8k files (3 kernels and 3 launch sites each) and one file with 20k kernels,
  scanned and ranked by the whole `s2s scan --no-cache --json` command; the time ratio of each doubling.

Every measurement runs in a fresh child process (its peak memory is its own). --src runs another checkout of s2s
(its `s2s` package directory's parent), e.g. the code before a change, for a before/after table.
Writes OUT/scan_speed.json and OUT/scan_speed.md (machine, date, commit, load average).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from provenance import commit, write_result

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import inspect, json, resource, sys, time
from pathlib import Path
from s2s.scan.tree import scan_tree
from s2s.scan.ranking import static_estimate
tree, jobs, cache = sys.argv[1], int(sys.argv[2]), sys.argv[3]
kw = {}
if "jobs" in inspect.signature(scan_tree).parameters:
    kw = {"jobs": jobs, "cache_dir": Path(cache) if cache else None}
t = time.perf_counter()
index = scan_tree(tree, **kw)
scan_s = time.perf_counter() - t
static_estimate(index)
total_s = time.perf_counter() - t
own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({
    "lines": index.lines_scanned, "files": index.files_scanned, "kernels": len(index.kernels),
    "launches": len(index.launches), "problems": len(index.problems), "extra": dict(index.extra),
    "scan_seconds": round(scan_s, 3), "scan_and_rank_seconds": round(total_s, 3),
    "cpu_seconds": round(own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime, 2),
    "peak_mb": round(max(own.ru_maxrss, kids.ru_maxrss) / 1024, 1),
    "lines_per_second": round(index.lines_scanned / scan_s),
}))
"""

KERNEL = """#include "common{i}.h"
__global__ void scale_{i}_{k}(float* a, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int t = 0; t < 4; ++t) {{ if (i < n) a[i] = a[i] * 0.5f + t; }}
}}
"""
LAUNCH = """void run_{i}_{k}(float* a, int n, int steps) {{
    for (int s = 0; s < steps; ++s) {{ scale_{i}_{k}<<<(n + 255) / 256, 256>>>(a, n); }}
}}
"""


def env_for(src: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def child_scan(tree: Path, jobs: int, cache: Path | None, src: Path | None) -> dict[str, object]:
    res = subprocess.run([sys.executable, "-c", CHILD, str(tree), str(jobs), str(cache or "")], capture_output=True,
                         text=True, env=env_for(src), cwd=tempfile.gettempdir(), timeout=1800)
    if res.returncode != 0:
        raise SystemExit(f"scan of {tree} failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout)  # type: ignore[no-any-return]


def command_time(tree: Path, args: list[str], env: dict[str, str], repeat: int = 1) -> tuple[float, float, dict[str, object]]:
    """(wall seconds, CPU seconds of the command and its workers, its printed stats), the fastest of `repeat` runs."""
    best: tuple[float, float, dict[str, object]] | None = None
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        res = subprocess.run([sys.executable, "-m", "s2s", "scan", str(tree), "--json", *args], capture_output=True,
                             text=True, env=env, cwd=tempfile.gettempdir(), timeout=1800)
        wall = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if res.returncode != 0:
            raise SystemExit(f"s2s scan {tree} failed:\n{res.stderr[-3000:]}")
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        if best is None or wall < best[0]:
            best = (wall, cpu, json.loads(res.stdout)["stats"])
    assert best is not None
    return best


def generate_files(root: Path, files: int) -> int:
    """`files` files: one header per 10, the rest .cu files with 3 kernels and 3 launch sites each."""
    lines = 0
    for i in range(files):
        d = root / f"pkg{i // 100:03d}"
        d.mkdir(parents=True, exist_ok=True)
        if i % 10 == 0:
            text = f"#pragma once\n#define BLOCK_{i} 256\nstruct Cell{i} {{ float rho, e; }};\n"
            name = f"common{i}.h"
        else:
            text = "".join(KERNEL.format(i=i, k=k) + LAUNCH.format(i=i, k=k) for k in range(3))
            text = text.replace(f'#include "common{i}.h"', f'#include "common{i - i % 10}.h"')
            name = f"kern{i}.cu"
        (d / name).write_text(text)
        lines += text.count("\n")
    return lines


def generate_one_file(root: Path, kernels: int) -> int:
    text = "".join(KERNEL.format(i=0, k=k).replace('#include "common0.h"\n', "") + "\n\n\n" for k in range(kernels))
    root.mkdir(parents=True, exist_ok=True)
    (root / "huge.cu").write_text(text)
    return text.count("\n")


def age(root: Path) -> None:
    """Files not written in the last seconds (a fresh file is hashed again by the cache, as git does)."""
    old = time.time() - 600
    for dirpath, _dirs, names in os.walk(root):
        for n in names:
            os.utime(os.path.join(dirpath, n), (old, old))


def real_tree(real: Path, src: Path | None, work: Path) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for jobs in (1, 2):
        cache = work / f"cache-real-{jobs}"
        cold = child_scan(real, jobs, cache, src)
        warm = child_scan(real, jobs, cache, src)
        rows.append({"jobs": jobs, "cold": cold, "warm": warm})
        print(f"real jobs={jobs}: cold {cold['scan_seconds']} s ({cold['lines_per_second']:,} lines/s), "
              f"warm {warm['scan_seconds']} s", flush=True)
    return rows


def generated(src: Path | None, work: Path, quick: bool, one_file_kernels: int) -> dict[str, object]:
    env = env_for(src)
    env["S2S_CACHE_DIR"] = str(work / "cache-unused")
    sizes = (1000, 2000) if quick else (1000, 2000, 4000, 8000)
    no_cache = [] if src is not None else ["--no-cache"]  # code from before the cache has no such option
    trees = []
    for n in sizes:
        root = work / f"gen{n}"
        lines = generate_files(root, n)
        wall, cpu, stats = command_time(root, no_cache, env, repeat=2)
        trees.append({"files": n, "lines": lines, "command_wall_seconds": round(wall, 2), "cpu_seconds": round(cpu, 2),
                      "printed_seconds": stats["seconds"]})
        print(f"generated {n} files: {wall:.2f} s wall, {cpu:.2f} s CPU", flush=True)
    for a, b in zip(trees, trees[1:]):
        b["ratio_to_half"] = round(float(b["command_wall_seconds"]) / float(a["command_wall_seconds"]), 2)  # type: ignore[arg-type]
        b["cpu_ratio_to_half"] = round(float(b["cpu_seconds"]) / float(a["cpu_seconds"]), 2)  # type: ignore[arg-type]
    one = work / "one-file"
    lines = generate_one_file(one, one_file_kernels)
    wall, cpu, stats = command_time(one, no_cache, env)
    print(f"one file, {one_file_kernels} kernels: {wall:.2f} s", flush=True)
    return {"trees": trees, "one_file": {"kernels": one_file_kernels, "lines": lines, "command_wall_seconds": round(wall, 2),
                                         "cpu_seconds": round(cpu, 2), "printed_seconds": stats["seconds"]}}


def markdown(doc: dict[str, object]) -> str:
    out = [f"# scan speed ({doc['date']}, commit {doc['commit']}, {doc['machine']}, {doc['cpus']} cores, "
           f"load average {doc['load_average']} at start)", ""]
    if doc["src"] != str(ROOT):
        out += [f"Code measured: the s2s package under `{doc['src']}` (not this checkout).", ""]
    real = doc.get("real")
    if real:
        r0 = real[0]["cold"]  # type: ignore[index]
        out += [f"Real tree `{doc['real_root']}`: {r0['lines']:,} lines in {r0['files']:,} readable files "
                f"({r0['kernels']} kernels, {r0['launches']} launch sites).", "",
                "| processes | run | seconds | lines/s | CPU s | parsed | skipped (pre-filter) | cached | peak MB |",
                "|---|---|---|---|---|---|---|---|---|"]
        for row in real:  # type: ignore[attr-defined]
            for run in ("cold", "warm"):
                m = row[run]
                ex = m["extra"]
                out.append(f"| {row['jobs']} | {run} | {m['scan_seconds']} | {m['lines_per_second']:,} | {m['cpu_seconds']} | "
                           f"{ex.get('parsed', '-')} | {ex.get('skipped', '-')} | {ex.get('cached', '-')} | {m['peak_mb']} |")
        cmd = doc.get("warm_command")
        if cmd:
            out += ["", f"Whole `s2s scan TREE --json` on the unchanged tree (interpreter start included): "
                    f"{cmd['wall_seconds']} s wall, printed {cmd['printed_seconds']} s."]  # type: ignore[index]
    gen = doc.get("generated")
    if gen:
        out += ["", "Generated trees (3 kernels, 3 launches a file; the whole `s2s scan --no-cache --json` command, the faster "
                "of two runs; CPU: the command and its workers):", "",
                "| files | lines | wall s | x previous | CPU s | x previous |", "|---|---|---|---|---|---|"]
        for t in gen["trees"]:  # type: ignore[index]
            out.append(f"| {t['files']} | {t['lines']:,} | {t['command_wall_seconds']} | {t.get('ratio_to_half', '')} | "
                       f"{t.get('cpu_seconds', '')} | {t.get('cpu_ratio_to_half', '')} |")
        one = gen["one_file"]  # type: ignore[index]
        out.append(f"\nOne file, {one['kernels']:,} kernels, {one['lines']:,} lines: {one['command_wall_seconds']} s wall, "
                   f"{one.get('cpu_seconds', '')} s CPU.")
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--real", default="/work/corpus", help="a tree of real GPU code ('' to leave out)")
    ap.add_argument("--out", default="bench/results")
    ap.add_argument("--src", default=None, help="checkout whose s2s package to measure (default: this one)")
    ap.add_argument("--stem", default="scan_speed")
    ap.add_argument("--quick", action="store_true", help="generated trees of 1k and 2k files only")
    ap.add_argument("--one-file-kernels", type=int, default=20_000, help="kernels in the generated single file")
    args = ap.parse_args()
    src = Path(args.src).resolve() if args.src else None
    doc: dict[str, object] = {
        "date": time.strftime("%Y-%m-%d %H:%M"), "commit": commit(), "machine": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(), "load_average": round(os.getloadavg()[0], 1), "src": str(src or ROOT),
    }
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if args.real:
            real = Path(args.real).resolve()
            doc["real_root"] = str(real)
            doc["real"] = real_tree(real, src, work)
            env = env_for(src)
            env["S2S_CACHE_DIR"] = str(work / "cache-real-2")
            if src is None:
                wall, _cpu, stats = command_time(real, [], env)
                doc["warm_command"] = {"wall_seconds": round(wall, 2), "printed_seconds": stats["seconds"]}
        doc["generated"] = generated(src, work, args.quick, args.one_file_kernels)
    write_result(Path(args.out), args.stem, doc, markdown(doc))
    print(markdown(doc))


if __name__ == "__main__":
    main()
