"""How faithful static extraction is on real applications of the development corpus (/work/corpus).

    python bench/fidelity.py [--corpus /work/corpus] [--out bench/results] [--stem fidelity] [--limit N]
    python bench/fidelity.py --capture [--out DIR]        # on the GPU machine: static values against captured ones

Per application and per kernel (CPU part, runs anywhere with nvcc): the kernel is found by `scan`, extracted into an
MEP (`make_mep`), its kernel file compiled alone (`nvcc -arch=sm_90 -c`, the MEP's own -D/-I), and, where mep.toml has
no FILL-IN left, the MEP's harness built: "runnable with no edits". Result: OUT/STEM.json and OUT/STEM.md.

`--capture` runs, for each application with a build and run command, `s2s capture TREE --kernel FILE:K --build-cmd B
--run-cmd R --compare-static` in a scratch copy and tabulates the per-value report the capture writes into the MEP
(capture/fidelity.json: equal / FILL-IN / wrong). Result: OUT/fidelity_capture.json and .md.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from provenance import commit, write_result  # noqa: E402

# (name, tree relative to the corpus, where its sizes come from, at most this many kernels)
APPS: list[dict[str, object]] = [
    {"name": "NPB-GPU (CUDA, 8 benchmarks in one tree)", "tree": "NPB-GPU/CUDA", "sizes": "compile-time", "limit": 40},
    {"name": "Parboil sgemm", "tree": "Parboil/benchmarks/sgemm/src/cuda", "sizes": "run-time"},
    {"name": "Parboil stencil", "tree": "Parboil/benchmarks/stencil/src/cuda", "sizes": "run-time"},
    {"name": "Parboil mri-q", "tree": "Parboil/benchmarks/mri-q/src/cuda", "sizes": "run-time"},
    {"name": "Parboil cutcp", "tree": "Parboil/benchmarks/cutcp/src/cuda", "sizes": "run-time"},
    {"name": "Parboil lbm", "tree": "Parboil/benchmarks/lbm/src/cuda", "sizes": "compile-time"},
    {"name": "Parboil histo", "tree": "Parboil/benchmarks/histo/src/cuda", "sizes": "run-time"},
    {"name": "Parboil tpacf", "tree": "Parboil/benchmarks/tpacf/src/cuda", "sizes": "run-time"},
    {"name": "Parboil mri-gridding", "tree": "Parboil/benchmarks/mri-gridding/src/cuda", "sizes": "run-time"},
    {"name": "BabelStream (CUDA)", "tree": "BabelStream/src/cuda", "sizes": "run-time"},
    {"name": "CloverLeaf_CUDA", "tree": "CloverLeaf_CUDA", "sizes": "run-time"},
    {"name": "cuda-samples 0_Introduction", "tree": "cuda-samples/Samples/0_Introduction", "sizes": "compile-time",
     "limit": 30},
]


def _nvcc() -> str | None:
    return os.environ.get("S2S_NVCC") or shutil.which("nvcc") or (
        "/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").exists() else None)


def _pick(kernels: list[dict], limit: int) -> list[dict]:  # type: ignore[type-arg]
    """At most `limit` CUDA kernels, spread evenly over the tree (deterministic)."""
    cuda = [k for k in kernels if k["language"] in {"cuda", "hip"}]
    cuda.sort(key=lambda k: (k["file"], k["line"]))
    if len(cuda) <= limit:
        return cuda
    step = len(cuda) / limit
    return [cuda[int(i * step)] for i in range(limit)]


def _flags_for_nvcc(flags: list[str], mep: Path) -> list[str]:
    out = []
    for f in flags:
        if f.startswith("-I") and not Path(f[2:]).is_absolute():
            f = "-I" + str((mep / f[2:]).resolve())
        out.append(f)
    return out


def one_kernel(tree: str, spec: str, mep: str, nvcc: str | None, build: bool, build_cmd: str | None = None,
               index: object = None) -> dict[str, object]:
    """Extract one kernel (with the application's build command, when known, as `s2s extract --build-cmd`; `index`:
    the tree's scan, when made already), compile its file alone, build the MEP when nothing is left to fill in."""
    from s2s.base.errors import UserError
    from s2s.extract.mep_writer import make_mep

    rec: dict[str, object] = {"kernel": spec}
    t0 = time.perf_counter()
    try:
        out, manifest, _ex = make_mep(tree, spec, mep, build_cmd=build_cmd, index=index)  # type: ignore[arg-type]
    except UserError as e:
        rec.update(extracted=False, error=str(e).splitlines()[0][:300])
        return rec
    except Exception as e:  # a crash is a result too: counted as not extracted
        rec.update(extracted=False, error=f"crash: {type(e).__name__}: {e}"[:300])
        return rec
    rec["extract_s"] = round(time.perf_counter() - t0, 2)
    todo = manifest.unfilled()
    rec.update(extracted=True, fill_in=len(todo), fill_in_what=[t.split(":")[0] for t in todo],
               fill_in_detail=[" ".join(t.split())[:240] for t in todo])
    try:
        import tomllib

        tomllib.loads((out / "mep.toml").read_text())
        rec["toml_valid"] = True
    except Exception as e:
        rec["toml_valid"] = False
        rec["toml_error"] = str(e)[:200]
    if nvcc:
        kfile = out / manifest.kernel_file
        cmd = [nvcc, "-arch=sm_90", "-std=c++17", "-c", str(kfile), "-o", os.devnull,
               *_flags_for_nvcc(manifest.flags, out), f"-I{out}"]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
            rec["compiles_alone"] = p.returncode == 0
            if p.returncode:
                errs = [ln for ln in p.stderr.splitlines() if "error" in ln]
                rec["compile_error"] = (errs[0] if errs else p.stderr.strip()[-200:])[:300]
        except subprocess.TimeoutExpired:
            rec["compiles_alone"] = False
            rec["compile_error"] = "nvcc timed out"
    rec["runnable"] = False
    if not todo and build and rec.get("compiles_alone"):
        from s2s.mep.backends import get_backend
        from s2s.mep.backends.base import resolve_target

        try:
            res = get_backend(manifest.backend).build(resolve_target(out, manifest, None))
            rec["runnable"] = bool(res.ok)
            if not res.ok:
                rec["build_error"] = " ".join(str(m) for m in res.messages)[:300]
        except Exception as e:
            rec["build_error"] = f"{type(e).__name__}: {e}"[:300]
    return rec


def scan_kernels(tree: Path) -> list[dict]:  # type: ignore[type-arg]
    p = subprocess.run([sys.executable, "-m", "s2s.cli", "scan", str(tree), "--json"], capture_output=True, text=True,
                       cwd=ROOT, timeout=600)
    if p.returncode != 0:
        return []
    return list(json.loads(p.stdout).get("kernels", []))


def static_part(corpus: Path, limit: int, workers: int, build: bool, only: list[str]) -> dict[str, object]:
    nvcc = _nvcc()
    apps_out = []
    scratch = Path(tempfile.mkdtemp(prefix="s2s-fidelity-"))
    try:
        for app in APPS:
            if only and not any(o in str(app["name"]) for o in only):
                continue
            tree = corpus / str(app["tree"])
            if not tree.is_dir():
                apps_out.append({"name": app["name"], "tree": app["tree"], "missing": True})
                continue
            found = scan_kernels(tree)
            picked = _pick(found, min(limit, int(app.get("limit", limit))))  # type: ignore[call-overload]
            jobs = []
            with cf.ProcessPoolExecutor(max_workers=workers) as pool:
                for i, k in enumerate(picked):
                    spec = f"{k['file']}:{k['name']}@{k['line']}"
                    jobs.append(pool.submit(one_kernel, str(tree), spec, str(scratch / f"{len(apps_out)}-{i}"), nvcc, build))
                recs = [j.result() for j in jobs]
            fills = [int(r["fill_in"]) for r in recs if r.get("extracted")]  # type: ignore[call-overload]
            apps_out.append({
                "name": app["name"], "tree": app["tree"], "sizes": app["sizes"], "found": len(found),
                "found_cuda": len([k for k in found if k["language"] in {"cuda", "hip"}]), "examined": len(recs),
                "extracted": sum(1 for r in recs if r.get("extracted")),
                "compiles_alone": sum(1 for r in recs if r.get("compiles_alone")),
                "no_fill_in": sum(1 for r in recs if r.get("extracted") and not r.get("fill_in")),
                "runnable": sum(1 for r in recs if r.get("runnable")),
                "toml_invalid": sum(1 for r in recs if r.get("extracted") and not r.get("toml_valid")),
                "median_fill_in": statistics.median(fills) if fills else None,
                "kernels": recs,
            })
            a = apps_out[-1]
            print(f"{a['name']}: found {a['found']}, examined {a['examined']}, extracted {a['extracted']}, compiles alone "
                  f"{a['compiles_alone']}, no FILL-IN {a['no_fill_in']}, runnable {a['runnable']}, median FILL-IN "
                  f"{a['median_fill_in']}", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return {"apps": apps_out, "nvcc": nvcc or "", "built_meps": build}


def markdown(doc: dict[str, object]) -> str:
    lines = [f"# Static extraction fidelity on the development corpus ({doc['date']}, commit {doc['commit']})", "",
             "Kernels examined per application (at most the limit, spread over the tree); *compiles alone*: the MEP's "
             "kernel file with `nvcc -arch=sm_90 -c`; *runnable*: no FILL-IN left and the MEP's harness builds.", "",
             "| application | sizes | found | examined | extracted | compiles alone | no FILL-IN | runnable | median FILL-IN |",
             "|---|---|---|---|---|---|---|---|---|"]
    tot = {"examined": 0, "extracted": 0, "compiles_alone": 0, "no_fill_in": 0, "runnable": 0}
    for a in doc["apps"]:  # type: ignore[attr-defined]
        if a.get("missing"):
            lines.append(f"| {a['name']} | missing | | | | | | | |")
            continue
        for k in tot:
            tot[k] += a[k]
        lines.append(f"| {a['name']} | {a['sizes']} | {a['found']} | {a['examined']} | {a['extracted']} | "
                     f"{a['compiles_alone']} | {a['no_fill_in']} | {a['runnable']} | {a['median_fill_in']} |")
    lines.append(f"| **all** | | | {tot['examined']} | {tot['extracted']} | {tot['compiles_alone']} | {tot['no_fill_in']} | "
                 f"{tot['runnable']} | |")
    ct = [a for a in doc["apps"] if not a.get("missing") and a.get("sizes") == "compile-time"]  # type: ignore[attr-defined]
    n_ct, r_ct = sum(a["examined"] for a in ct), sum(a["runnable"] for a in ct)
    if n_ct:
        lines += ["", f"Kernels of applications with compile-time sizes: **{r_ct} of {n_ct} runnable with no edits "
                  f"({100 * r_ct / n_ct:.0f}%)**; " + ", ".join(f"{a['name']} {a['runnable']}/{a['examined']}" for a in ct) + ".",
                  "", "What stays FILL-IN in those that are not runnable (the MEP's own hints say why):", ""]
        for a in ct:
            for k in a["kernels"]:
                if k.get("runnable"):
                    continue
                why = (", ".join(k.get("fill_in_what") or []) if k.get("extracted") else f"not extracted: {k.get('error', '')}")
                if k.get("extracted") and not k.get("compiles_alone"):
                    why = f"does not compile alone ({str(k.get('compile_error', ''))[-120:]}); " + why
                lines.append(f"- {k['kernel']}: {why[:300]}")
    return "\n".join(lines) + "\n"


# --capture (GPU machine): applications that build and run there in seconds; {corpus} is the packed corpus, {bm} the
# NPB program. Trees, build and run commands as `s2s capture` takes them (the build and run happen in its copy).
_NPB_BUILD = "make {bm} CLASS=S COMPUTE_CAPABILITY='-gencode arch=compute_90,code=sm_90'"
_SAMPLE_BUILD = "nvcc -arch=sm_90 -std=c++17 -I{corpus}/cuda-samples/Common -o app *.cu $(ls *.cpp 2>/dev/null)"  # and its host .cpp files
CAPTURE_APPS: list[dict[str, str]] = (
    [{"program": f"NPB {bm.upper()}", "tree": "NPB-GPU/CUDA", "files": bm.upper() + "/", "build": _NPB_BUILD.replace("{bm}", bm),
      "run": f"./bin/{bm}.S"} for bm in ("ep", "cg", "mg", "is", "ft")]
    + [{"program": f"cuda-samples {s}", "tree": f"cuda-samples/Samples/0_Introduction/{s}", "files": "", "build": _SAMPLE_BUILD,
        "run": "./app"} for s in ("vectorAdd", "matrixMul", "simpleAtomicIntrinsics", "asyncAPI", "clock", "simpleVoteIntrinsics")])
# programs captured only when --kernels names one of their kernels (the values of 746dca3's inference rules)
EXTRA_APPS: list[dict[str, str]] = (
    [{"program": f"NPB {bm.upper()}", "tree": "NPB-GPU/CUDA", "files": bm.upper() + "/", "build": _NPB_BUILD.replace("{bm}", bm),
      "run": f"./bin/{bm}.S"} for bm in ("bt", "sp", "lu")]
    + [{"program": f"cuda-samples {s}", "tree": f"cuda-samples/Samples/0_Introduction/{s}", "files": "", "build": _SAMPLE_BUILD,
        "run": "./app"} for s in ("mergeSort", "simpleCallback")])
PACK = ["NPB-GPU/CUDA", "cuda-samples/Common"] + [a["tree"] for a in CAPTURE_APPS + EXTRA_APPS
                                                  if a["tree"].startswith("cuda-samples")]


def pack(corpus: Path, dest: Path) -> None:
    """Copy the trees --capture needs (sources only, no build outputs) to DEST, to carry to the GPU machine."""
    skip = shutil.ignore_patterns(".git", "*.o", "bin", "build", "*.a", "*.so", "*.pdf", "*.doc*", "data")
    for rel in PACK:
        if (dest / rel).exists():
            shutil.rmtree(dest / rel)
        shutil.copytree(corpus / rel, dest / rel, ignore=skip, symlinks=True)
    (dest / "NPB-GPU" / "CUDA" / "bin").mkdir(exist_ok=True)
    print(f"packed {', '.join(PACK)} into {dest}")


def _built_files(tree: Path, build_cmd: str) -> set[str]:
    """The tree's files (relative) the build command compiles, from a dry run of it; empty when that says nothing."""
    from s2s.scan.build_capture import commands_from_build

    try:
        commands, _how = commands_from_build(tree, build_cmd)
    except Exception:  # noqa: BLE001 - no dry run: every scanned kernel stays a candidate
        return set()
    if not commands:
        return set()
    from s2s.extract.extract import load_tree
    from s2s.scan.includes import IncludeGraph

    graph = IncludeGraph(load_tree(tree))
    out = set()
    for f, command in commands.items():  # each unit with the files it includes (`#include "kernels.cu"` is built too)
        unit = Path(f).resolve()
        files = graph.unit_order(unit, command.include_dirs)[0] if unit in graph.files else [unit]
        for path in files:
            try:
                out.add(str(path.resolve().relative_to(tree.resolve())))
            except ValueError:
                continue
    return out


def capture_compare(tree: Path, kernel: str, build: str, run: str, mep: Path, timeout: float, kill_after: float,
                    log: Path | None = None) -> dict[str, object]:
    """`s2s capture TREE --kernel KERNEL ... --compare-static -o MEP`: its exit status, the tail of what it printed, and
    the count of each verdict of capture/fidelity.json with its rows (the whole output also in `log`, when given)."""
    cmd = [sys.executable, "-m", "s2s", "capture", str(tree), "--kernel", kernel, "--build-cmd", build, "--run-cmd", run,
           "--compare-static", "-o", str(mep), "--timeout", str(int(timeout))]
    rec: dict[str, object] = {}
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=kill_after, cwd=ROOT)
        rec["rc"], said = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired:
        rec["rc"], said = "timeout", f"killed after {kill_after:g} s"
    rec["tail"] = said[-600:]
    if log is not None:
        log.write_text(f"$ {' '.join(cmd)}\n(exit {rec['rc']})\n{said}", encoding="utf-8")
    report = mep / "capture" / "fidelity.json"
    if report.exists():
        doc = json.loads(report.read_text())
        rows = doc.get("values", []) if isinstance(doc, dict) else []
        verdicts = [str(r.get("verdict", "")) for r in rows]
        rec.update(equal=verdicts.count("equal"), fill_in=verdicts.count("FILL-IN"), wrong=verdicts.count("wrong"),
                   unknown=verdicts.count("unknown"), values=rows)
    return rec


def capture_part(corpus: Path, per_program: int, deadline_s: float, only: list[str],
                 chosen: list[str] | None = None) -> dict[str, object]:
    """GPU machine: capture kernels of applications that build and run there, each compared with static inference.
    `chosen` (FILE:NAME, FILE relative to the program's tree): those kernels only, from CAPTURE_APPS and EXTRA_APPS."""
    results = []
    scratch = Path(tempfile.mkdtemp(prefix="s2s-fidcap-"))
    t0 = time.monotonic()
    queue: list[list[tuple[dict[str, str], Path, dict]]] = []  # type: ignore[type-arg]
    scanned: dict[Path, list[dict]] = {}  # type: ignore[type-arg]
    for app in CAPTURE_APPS + (EXTRA_APPS if chosen else []):
        if only and not any(o in app["program"] for o in only):
            continue
        tree = corpus / app["tree"]
        if tree not in scanned:
            scanned[tree] = scan_kernels(tree)
        kernels = [k for k in scanned[tree] if k["file"].startswith(app["files"]) and k["language"] == "cuda"]
        if chosen:
            kernels = [k for k in kernels if f"{k['file']}:{k['name']}" in chosen]
            if kernels:
                queue.append([(app, tree, k) for k in kernels])
            continue
        built = _built_files(tree, app["build"].replace("{corpus}", str(corpus.resolve())))
        if built:  # a file the build never compiles (NPB MG's mg-no-cast.cu) has kernels no run launches
            kernels = [k for k in kernels if k["file"] in built] or kernels
        queue.append([(app, tree, k) for k in kernels[:per_program]])
    if chosen:
        per_program = max((len(jobs) for jobs in queue), default=0)
    # round robin: every program's first kernel before any program's second, so a deadline cuts depth, not breadth
    order = [job for i in range(per_program) for jobs in queue for job in jobs[i:i + 1]]
    for app, tree, k in order:
        rec: dict[str, object] = {"program": app["program"], "kernel": k["name"], "file": k["file"]}
        left = deadline_s - (time.monotonic() - t0)
        if left < 30:
            rec["rc"] = "not run (deadline)"
            results.append(rec)
            continue
        rec.update(capture_compare(tree, f"{k['file']}:{k['name']}@{k['line']}",
                                   app["build"].replace("{corpus}", str(corpus.resolve())), app["run"],
                                   scratch / f"{len(results)}-{k['name']}", min(240, left - 10), min(300, left)))
        results.append(rec)
        print(json.dumps({k2: v for k2, v in rec.items() if k2 not in {"values", "tail"}}), flush=True)
    shutil.rmtree(scratch, ignore_errors=True)
    return {"captures": results}


def capture_markdown(doc: dict[str, object]) -> str:
    caps: list[dict[str, object]] = doc["captures"]  # type: ignore[assignment]
    tot = {k: sum(int(c.get(k, 0) or 0) for c in caps) for k in ("equal", "fill_in", "wrong", "unknown")}
    lines = [f"# Static values against captured ones ({doc['gpu']}, {doc['date']}, commit {doc['commit']})", "",
             f"All values: **{tot['equal']} equal, {tot['fill_in']} FILL-IN, {tot['wrong']} wrong**, {tot['unknown']} not "
             "recorded by the capture.", "", "| program | kernel | capture rc | equal | FILL-IN | wrong |", "|---|---|---|---|---|---|"]
    for c in caps:
        lines.append(f"| {c['program']} | {c['kernel']} | {c.get('rc')} | {c.get('equal', '')} | {c.get('fill_in', '')} | "
                     f"{c.get('wrong', '')} |")
    wrong = [(c, r) for c in caps for r in c.get("values", []) if r.get("verdict") == "wrong"]  # type: ignore[attr-defined]
    if wrong:
        lines += ["", "Wrong values:", ""] + [f"- {c['program']} {c['kernel']}: {r['value']} static {r['static']!r}, "
                                              f"captured {r['captured']!r}" for c, r in wrong]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default="/work/corpus")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    ap.add_argument("--stem", default="fidelity")
    ap.add_argument("--limit", type=int, default=25, help="at most this many kernels per application")
    ap.add_argument("--workers", type=int, default=max(1, min(8, (os.cpu_count() or 2))))
    ap.add_argument("--no-build", action="store_true", help="do not build the harness of MEPs with no FILL-IN")
    ap.add_argument("--only", action="append", default=[], help="applications whose name holds this text")
    ap.add_argument("--capture", action="store_true", help="GPU machine: compare static values with captured ones")
    ap.add_argument("--per-program", type=int, default=3, help="--capture: kernels per program")
    ap.add_argument("--deadline", type=float, default=420.0, help="--capture: start no capture after this many seconds")
    ap.add_argument("--kernels", action="append", default=[], metavar="FILE:NAME",
                    help="--capture: these kernels only (also of the programs in EXTRA_APPS); repeat or comma-separate")
    ap.add_argument("--pack", metavar="DIR", help="copy the trees --capture needs into DIR (e.g. .gpu/corpus) and stop")
    args = ap.parse_args()
    corpus, out = Path(args.corpus), Path(args.out)
    if args.pack:
        pack(corpus, Path(args.pack))
        return 0
    head = {"date": datetime.date.today().isoformat(), "commit": commit(), "corpus": str(corpus)}
    if args.capture:
        gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True).stdout.strip() if shutil.which("nvidia-smi") else ""
        chosen = [k.strip() for item in args.kernels for k in item.split(",") if k.strip()]
        doc = {**head, "gpu": gpu, **capture_part(corpus, args.per_program, args.deadline, args.only, chosen)}
        write_result(out, args.stem + "_capture", doc, capture_markdown(doc))
        print(capture_markdown(doc))
        return 0
    doc = {**head, **static_part(corpus, args.limit, args.workers, not args.no_build, args.only)}
    write_result(out, args.stem, doc, markdown(doc))
    print(markdown(doc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
