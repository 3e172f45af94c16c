"""`s2s auto` over the sample applications with --cluster local, then --cluster dask (one worker per GPU), on the
same machine: wall times, which GPU ran each evaluation (from each MEP's history), and whether every winner is the
same candidate or, re-timed side by side in one MEP, equally fast. Writes OUT/gpu_cluster.json and .md.

    python3 bench/gpu_cluster.py --out OUT [--apps samples/heat3d_cuda,samples/hip_particles] [--top 3] [--max-evals 8]
"""
from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from provenance import commit, write_result


def gpu_names() -> list[str]:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=index,name,uuid", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=30).stdout
    except OSError:
        return []
    return [ln.strip() for ln in out.splitlines() if ln.strip()]


def history(mep: Path) -> list[dict[str, object]]:
    db = mep / "history.sqlite"
    if not db.is_file():
        return []
    con = sqlite3.connect(db)
    try:
        rows = con.execute("SELECT id, status, speedup, result, created, finished FROM candidates ORDER BY created").fetchall()
        best = con.execute("SELECT value FROM meta WHERE key='best'").fetchone()
    finally:
        con.close()
    out = []
    for cid, status, speedup, result, created, finished in rows:
        res = json.loads(result) if result else {}
        out.append({"id": cid, "status": status, "speedup": speedup, "worker": res.get("worker", {}), "created": created,
                    "finished": finished, "best": bool(best and best[0] == cid)})
    return out


def run_auto(app: str, cluster: str, work: Path, args: argparse.Namespace) -> dict[str, object]:
    cmd = [sys.executable, "-m", "s2s", "auto", app, "--top", str(args.top), "--max-evals", str(args.max_evals),
           "--rounds", str(args.rounds), "--no-patterns", "--work", str(work), "--diff", str(work / "auto.diff"),
           "--cluster", cluster, "--no-profile"]  # ncu runs only with --cluster local: it would skew the wall times
    t0 = time.monotonic()
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
        rc, log = res.returncode, res.stdout + res.stderr
    except subprocess.TimeoutExpired as exc:
        rc, log = 124, f"timed out after {args.timeout} s\n" + str(exc.stdout or "")
    wall = time.monotonic() - t0
    (work.parent / f"{work.name}.log").write_text(log)
    meps = {}
    for mep in sorted(work.glob("mep-*")):
        rows = history(mep)
        best = next((r for r in rows if r["best"]), None)
        meps[mep.name] = {"evaluations": sum(1 for r in rows if r["status"] not in ("pending", "duplicate")),
                          "best": best["id"] if best else None, "best_speedup": best["speedup"] if best else None,
                          "gpus": sorted({str(r["worker"].get("gpu", "")) for r in rows if r["worker"]}),  # type: ignore[union-attr]
                          "gpu_uuids": sorted({str(r["worker"].get("gpu_uuid", "")) for r in rows if r["worker"]}),  # type: ignore[union-attr]
                          "span": [min((r["created"] for r in rows), default=None), max((r["finished"] or 0 for r in rows), default=None)],
                          "statuses": {r["id"]: r["status"] for r in rows}}
    return {"cluster": cluster, "rc": rc, "wall_s": round(wall, 2), "cluster_line": next(
        (ln for ln in log.splitlines() if ln.startswith("cluster:")), ""), "meps": meps}


def retime(mep: Path, variant: str) -> float | None:
    res = subprocess.run([sys.executable, "-m", "s2s", "run", str(mep), "--variant", variant, "--json"], capture_output=True,
                         text=True, timeout=180)
    try:
        return float(json.loads(res.stdout).get("speedup") or 0) or None
    except (json.JSONDecodeError, AttributeError, ValueError):
        return None


def compare(local: dict[str, object], dask: dict[str, object], dask_work: Path) -> list[dict[str, object]]:
    out = []
    for name, lm in local["meps"].items():  # type: ignore[union-attr]
        dm = dask["meps"].get(name, {})  # type: ignore[union-attr]
        a, b = lm["best"], dm.get("best")
        row: dict[str, object] = {"mep": name, "local_best": a, "local_speedup": lm["best_speedup"], "dask_best": b,
                                  "dask_speedup": dm.get("best_speedup"),
                                  "same_verdicts": lm["statuses"] == dm.get("statuses")}
        if a == b:
            row["winner"] = "same"
        elif a and b and dm.get("statuses", {}).get(a) == "ok":  # both in the dask MEP: time them again, one after the other
            sa, sb = retime(dask_work / name, a), retime(dask_work / name, b)
            row.update(retimed_local_best=sa, retimed_dask_best=sb)
            row["winner"] = "verified equal" if sa and sb and abs(sa - sb) / max(sa, sb) <= 0.07 else "differs"
        else:
            row["winner"] = "differs"
        out.append(row)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--apps", default="samples/heat3d_cuda,samples/hip_particles")
    ap.add_argument("--work", default="/tmp/s2s-gpu-cluster")
    ap.add_argument("--top", type=int, default=3)
    ap.add_argument("--max-evals", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=200.0, help="seconds per s2s auto run")
    args = ap.parse_args()
    out, work = Path(args.out), Path(args.work)
    doc: dict[str, object] = {"gpus": gpu_names(), "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                              "commit": commit(), "settings": {k: getattr(args, k) for k in ("top", "max_evals", "rounds")},
                              "apps": []}
    for app in args.apps.split(","):
        tag = Path(app).name
        local = run_auto(app, "local", work / f"{tag}-local", args)
        dask = run_auto(app, "dask", work / f"{tag}-dask", args)
        doc["apps"].append({"app": app, "local": local, "dask": dask,  # type: ignore[union-attr]
                            "winners": compare(local, dask, work / f"{tag}-dask")})
    lines = [f"# s2s auto: --cluster dask vs --cluster local ({len(doc['gpus'])} GPU(s))", "",  # type: ignore[arg-type]
             f"GPUs: {'; '.join(doc['gpus']) or 'none found'}  ", f"date: {doc['date']}  ", f"commit: {doc['commit']}  ",  # type: ignore[arg-type]
             f"settings: --top {args.top} --max-evals {args.max_evals} --rounds {args.rounds} --no-patterns", "",
             "| app | local wall s | dask wall s | speedup of the run | GPUs used by dask (history) | winners |", "|---|---|---|---|---|---|"]
    for a in doc["apps"]:  # type: ignore[attr-defined]
        lw, dw = a["local"]["wall_s"], a["dask"]["wall_s"]
        gpus = sorted({g for m in a["dask"]["meps"].values() for g in m["gpus"]})
        verdict = ", ".join(f"{w['mep']}: {w['winner']}" for w in a["winners"])
        lines.append(f"| {a['app']} (rc {a['local']['rc']}/{a['dask']['rc']}) | {lw} | {dw} | {lw / dw if dw else 0:.2f}x | "
                     f"{', '.join(gpus)} | {verdict} |")
    write_result(out, "gpu_cluster", doc, "\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
