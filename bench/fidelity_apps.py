"""Static inference against the truth on the applications `s2s auto` runs (issue 11): for each kernel, every value
`s2s extract` infers compared with what `s2s capture --compare-static` records from the application's real run
(equal / FILL-IN / wrong; the target is zero wrong). The applications are bench/auto_apps.py's (Parboil's CUDA and
cuda_base versions with generated inputs, BabelStream), copied into .gpu/apps by bench/prepare_gpu_apps.sh;
bench/fidelity.py's GPU part covers NPB-GPU and cuda-samples.

    python3 bench/fidelity_apps.py --out DIR [--apps a,b] [--deadline S]     on the GPU machine

Writes DIR/fidelity_apps.json and .md (GPU, date, commit) and each capture's log DIR/<app>.<kernel>.log.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from auto_apps import APPS, apps, gpu_name  # noqa: E402
from fidelity import capture_compare  # noqa: E402
from provenance import commit, write_result  # noqa: E402

# the kernels of each application, as FILE:NAME in its tree (every kernel the application launches, at most three)
KERNELS = {
    "parboil-sgemm-base": ["benchmarks/sgemm/src/cuda_base/sgemm_kernel.cu:mysgemmNT"],
    "parboil-stencil-base": ["benchmarks/stencil/src/cuda_base/kernels.cu:naive_kernel"],
    "parboil-cp-base": ["benchmarks/cp/src/cuda_base/cuenergy_pre.cu:cenergy"],
    "parboil-mri-q": ["benchmarks/mri-q/src/cuda/computeQ.cu:ComputeQ_GPU", "benchmarks/mri-q/src/cuda/computeQ.cu:ComputePhiMag_GPU"],
    "parboil-sgemm": ["benchmarks/sgemm/src/cuda/sgemm_kernel.cu:mysgemmNT"],
    "parboil-stencil": ["benchmarks/stencil/src/cuda/kernels.cu:block2D_hybrid_coarsen_x"],
    "babelstream": ["src/cuda/CUDAStream.cu:dot_kernel", "src/cuda/CUDAStream.cu:for_each_kernel"],
}


def capture_one(app: str, spec: dict[str, str], kernel: str, work: Path, out: Path, timeout: float) -> dict[str, object]:
    name = kernel.rpartition(":")[2]
    mep = work / f"{app}.{name}"
    shutil.rmtree(mep, ignore_errors=True)
    t0 = time.time()
    got = capture_compare(APPS / spec["tree"], kernel, spec["build"], spec["run"], mep, timeout, timeout + 30,
                          log=out / f"{app}.{name}.log")
    row: dict[str, object] = {"app": app, "kernel": kernel, "capture_rc": got["rc"], "seconds": round(time.time() - t0, 1)}
    values = got.get("values")
    if got["rc"] == 0 and isinstance(values, list):
        row["summary"] = {"equal": got["equal"], "FILL-IN": got["fill_in"], "wrong": got["wrong"]}
        row["wrong"] = [v for v in values if v["verdict"] == "wrong"]
        row["fill_in"] = [v["value"] for v in values if v["verdict"] == "FILL-IN"]
    else:
        row["error"] = (str(got["tail"]).strip().splitlines() or ["no output"])[-1][:300]
    return row


def markdown(doc: dict[str, object]) -> str:
    rows = doc["rows"]
    assert isinstance(rows, list)
    tot = {k: sum(int(r.get("summary", {}).get(k, 0)) for r in rows) for k in ("equal", "FILL-IN", "wrong")}
    lines = [f"# Static values against captured ones on the auto applications ({doc['gpu']}, {doc['date']}, commit {doc['commit']})",
             "", f"All values: **{tot['equal']} equal, {tot['FILL-IN']} FILL-IN, {tot['wrong']} wrong**.", "",
             "| application | kernel | capture rc | equal | FILL-IN | wrong | FILL-IN values |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        s = r.get("summary", {})
        lines.append(f"| {r['app']} | {str(r['kernel']).rpartition(':')[2]} | {r['capture_rc']} | {s.get('equal', '')} | "
                     f"{s.get('FILL-IN', '')} | {s.get('wrong', '')} | {', '.join(r.get('fill_in', [])) or r.get('error', '')} |")
    wrong = [(r["app"], r["kernel"], w) for r in rows for w in r.get("wrong", [])]
    if wrong:
        lines += ["", "Wrong values:", ""] + [f"- {a} {k}: {w['value']} static {w['static']!r}, captured {w['captured']!r}"
                                               for a, k, w in wrong]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", default="/tmp/s2s-fidelity-apps")
    ap.add_argument("--apps", default=",".join(KERNELS))
    ap.add_argument("--deadline", type=float, default=400.0, help="seconds for everything; later kernels are skipped")
    args = ap.parse_args()
    out, work = Path(args.out), Path(args.work)
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    specs, t_end, rows = apps(), time.time() + args.deadline, []
    for app in args.apps.split(","):
        for kernel in KERNELS[app]:
            left = t_end - time.time()
            if left < 30:
                rows.append({"app": app, "kernel": kernel, "capture_rc": "-", "error": "not run: deadline"})
                continue
            rows.append(capture_one(app, specs[app], kernel, work, out, min(left, 180.0)))
            print(json.dumps({k: v for k, v in rows[-1].items() if k != "wrong"}), flush=True)
    doc = {"gpu": gpu_name(), "date": time.strftime("%Y-%m-%d"), "commit": commit(), "rows": rows}
    write_result(out, "fidelity_apps", doc, markdown(doc))
    print(markdown(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
