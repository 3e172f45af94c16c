"""What an MEP saves: seconds to build and run the MEP of one kernel against seconds to build and run the
whole application it came from, as a ratio (same machine, same process, back to back).

    python bench/mep_savings.py --sample samples/ocl_solver --kernel matmul [--make-vars "..."] [--out DIR]

The MEP run includes its correctness check on several input sets and its timing, as `s2s run` does.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from provenance import commit, write_result


def _timed(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, int]:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    return time.perf_counter() - t0, r.returncode


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sample", default="samples/ocl_solver")
    ap.add_argument("--kernel", default="matmul")
    ap.add_argument("--make-vars", default="")
    ap.add_argument("--defines", default="", help="NAME=VALUE,... size overrides for the MEP")
    ap.add_argument("--out", default="bench/results")
    ap.add_argument("--tag", default="")
    args = ap.parse_args()
    from s2s.extract.mep_writer import make_mep

    make_vars = args.make_vars.split()
    with tempfile.TemporaryDirectory() as tmp:
        app = Path(tmp) / "app"
        shutil.copytree(args.sample, app, ignore=shutil.ignore_patterns("build"))
        subprocess.run(["make", "clean"], cwd=app, capture_output=True)
        app_build, rc1 = _timed(["make", "-j", str(os.cpu_count() or 1), *make_vars], app)
        app_run, rc2 = _timed(["make", "run", *make_vars], app)
        overrides = dict(d.split("=", 1) for d in args.defines.split(",") if d)
        t0 = time.perf_counter()
        mep = Path(tmp) / "mep"
        make_mep(str(app), args.kernel, str(mep), overrides=overrides)
        extract_s = time.perf_counter() - t0
        from s2s.mep.evaluate import build, run_built

        t0 = time.perf_counter()
        b = build(mep, None)
        mep_build = time.perf_counter() - t0
        t0 = time.perf_counter()
        m = run_built(b)
        mep_run = time.perf_counter() - t0
    app_total = app_build + app_run
    mep_total = mep_build + mep_run
    doc = {"sample": args.sample, "kernel": args.kernel, "device": m.device, "app_build_s": round(app_build, 2),
           "app_run_s": round(app_run, 2), "app_ok": rc1 == 0 and rc2 == 0, "extract_s": round(extract_s, 2),
           "mep_build_s": round(mep_build, 2), "mep_run_s": round(mep_run, 2), "mep_verdict": m.verdict,
           "ratio_app_over_mep": round(app_total / mep_total, 2) if mep_total else None,
           "date": time.strftime("%Y-%m-%d"), "commit": commit()}
    print(json.dumps(doc))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = args.tag or f"mep_savings_{Path(args.sample).name}_{args.kernel}"
    write_result(out, name, doc)


if __name__ == "__main__":
    main()
