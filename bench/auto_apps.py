"""`s2s auto APP --build-cmd ... --run-cmd ...` end to end on real applications (copied by bench/prepare_gpu_apps.sh
into .gpu/apps/), and a capture + replay of samples/particles_struct_cuda (a struct of device pointers by value).

    python3 bench/auto_apps.py --out DIR [--apps struct,npb-cg,...] [--deadline S]   on the GPU machine
    python3 bench/auto_apps.py --check [--apps ...]                                   here: the instrumented copies
                                                                                     (profile and capture) build
Writes DIR/auto_apps.json and DIR/auto_apps.md (GPU, date, commit; per application the measured profile, per kernel
the MEP and speedup, wall time before/after, output unchanged?). Each application's whole log is DIR/<app>.log.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
APPS = REPO / ".gpu" / "apps"
ARCH = "-gencode arch=compute_90,code=sm_90"
NPB = f'make {{bm}} CLASS=S COMPUTE_CAPABILITY="{ARCH}"'
def parboil(bm: str, version: str = "cuda") -> str:
    """Parboil's build of benchmark `bm` (version cuda or cuda_base) without its Python-2 driver, for sm_90 and CUDA 13."""
    build = "cuda_default" if version == "cuda" else version
    return (f"make -C benchmarks/{bm} default -f $PWD/common/mk/Makefile SRCDIR=src/{version} BUILDDIR=build/{build} "
            f"BIN=build/{build}/{bm} PARBOIL_ROOT=$PWD PLATFORM=default BUILD={version} "
            + ("APP_CUDACFLAGS= " if version != "cuda" else "")
            + 'CUDACC="nvcc -forward-unknown-to-host-compiler" '
            'PLATFORM_CUDACFLAGS="-arch=sm_90 -DcudaThreadSynchronize=cudaDeviceSynchronize"')


CLOSE = f"python3 {REPO}/bench/numbers_close.py"



def apps() -> dict[str, dict[str, str]]:
    deps = APPS / "_deps" / "nvml"
    return {
        "npb-ep": {"tree": "npb-ep", "build": NPB.format(bm="ep"), "run": "./bin/ep.S"},
        "npb-cg": {"tree": "npb-cg", "build": NPB.format(bm="cg"), "run": "./bin/cg.S"},
        "npb-mg": {"tree": "npb-mg", "build": NPB.format(bm="mg"), "run": "./bin/mg.S"},
        "npb-is": {"tree": "npb-is", "build": NPB.format(bm="is"), "run": "./bin/is.S"},
        "babelstream": {"tree": "babelstream",
                        "build": (f"nvcc -O3 -std=c++17 -arch=sm_90 --extended-lambda -DCUDA -DDEFAULT -DGRID_STRIDE "
                                  f"-DUNROLL_FACTOR=4 -I{deps}/include -Isrc -Isrc/cuda src/main.cpp src/cuda/CUDAStream.cu "
                                  f"-L{deps}/stub -lnvidia-ml -o cuda-stream"),
                        "run": "./cuda-stream -s 4194304 -n 20"},
        "parboil-sgemm": {"tree": "parboil-sgemm", "build": parboil("sgemm"),
                          "run": "benchmarks/sgemm/build/cuda_default/sgemm -i input/A.txt,input/BT.txt,input/BT.txt -o C.txt",
                          "check": f'{CLOSE} "$S2S_BEFORE_DIR/C.txt" C.txt --rtol 1e-3'},
        "parboil-stencil": {"tree": "parboil-stencil", "build": parboil("stencil"),
                            "run": "benchmarks/stencil/build/cuda_default/stencil -i input/in.bin -o out.bin 128 128 32 100",
                            "check": f'{CLOSE} "$S2S_BEFORE_DIR/out.bin" out.bin --f32 --skip 4 --rtol 1e-4'},
        "parboil-mri-q": {"tree": "parboil-mri-q", "build": parboil("mri-q"),
                          "run": "benchmarks/mri-q/build/cuda_default/mri-q -i input/in.bin -o out.bin",
                          "check": f'{CLOSE} "$S2S_BEFORE_DIR/out.bin" out.bin --f32 --skip 4 --rtol 1e-3 --atol 0.05'},
        # Parboil's cuda_base versions: the authors' straightforward ports
        "parboil-sgemm-base": {"tree": "parboil-sgemm-base", "build": parboil("sgemm", "cuda_base"),
                               "run": "benchmarks/sgemm/build/cuda_base/sgemm -i input/A.txt,input/BT.txt,input/BT.txt -o C.txt",
                               "check": f'{CLOSE} "$S2S_BEFORE_DIR/C.txt" C.txt --rtol 1e-3'},
        "parboil-stencil-base": {"tree": "parboil-stencil-base", "build": parboil("stencil", "cuda_base"),
                                 "run": "benchmarks/stencil/build/cuda_base/stencil -i input/in.bin -o out.bin 256 256 64 100",
                                 "check": f'{CLOSE} "$S2S_BEFORE_DIR/out.bin" out.bin --f32 --skip 4 --rtol 1e-4'},
        "parboil-cp-base": {"tree": "parboil-cp-base", "build": parboil("cp", "cuda_base"),
                            "run": "benchmarks/cp/build/cuda_base/cp -o energy.txt",
                            # cp prints its energies with 4 significant digits (%.4g): one float ulp flips a last digit
                            "check": f'{CLOSE} "$S2S_BEFORE_DIR/energy.txt" energy.txt --rtol 1e-3 --atol 1e-3'},
    }


def gpu_name() -> str:
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True,
                              timeout=30).stdout.strip().splitlines()[0]
    except (OSError, IndexError, subprocess.SubprocessError):
        return "no GPU"


def s2s(*args: str, timeout: float, log: Path) -> int:
    t0 = time.time()
    try:
        proc = subprocess.run([sys.executable, "-m", "s2s", *args], capture_output=True, text=True, timeout=timeout,
                              cwd=REPO)
        rc, out = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as exc:
        rc, out = 124, f"killed after {timeout:g} s\n{exc.stdout or ''}{exc.stderr or ''}"
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(f"$ s2s {' '.join(args)}   (exit {rc}, {time.time() - t0:.1f} s)\n{out}\n")
    return rc


def run_struct(out: Path, work: Path, timeout: float) -> dict[str, object]:
    """Capture + replay of the struct-of-pointers sample: the reference must reproduce the application's outputs."""
    log = out / "struct.log"
    mep = work / "struct-mep"
    shutil.rmtree(mep, ignore_errors=True)
    rc = s2s("capture", str(REPO / "samples" / "particles_struct_cuda"), "--kernel", "advance", "--build-cmd", "make",
             "--run-cmd", "./particles 100000 20", "--launch", "5", "-o", str(mep), "--compare-static", timeout=timeout, log=log)
    res: dict[str, object] = {"app": "particles_struct_cuda (struct of device pointers by value)", "capture_rc": rc}
    if rc == 0:
        proc = subprocess.run([sys.executable, "-m", "s2s", "run", str(mep), "--json"], capture_output=True, text=True,
                              timeout=timeout, cwd=REPO)
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(f"$ s2s run {mep} --json  (exit {proc.returncode})\n{proc.stdout}{proc.stderr}\n")
        try:
            got = json.loads(proc.stdout)
            res.update(run_rc=proc.returncode, verdict=got.get("verdict"),
                       reproduces=any("reproduces the application's outputs" in m for m in got.get("messages", [])),
                       messages=got.get("messages", [])[:6])
        except ValueError:
            res.update(run_rc=proc.returncode, verdict="no JSON")
        fid = mep / "capture" / "fidelity.json"
        if fid.is_file():
            res["fidelity"] = json.loads(fid.read_text())["summary"]
        res["struct_args"] = _struct_args(mep)
    return res


def _struct_args(mep: Path) -> object:
    try:
        import tomllib

        return tomllib.loads((mep / "mep.toml").read_text()).get("capture", {}).get("struct_args")
    except Exception as exc:  # noqa: BLE001 - a report, not a check
        return str(exc)


def run_app(name: str, spec: dict[str, str], out: Path, work: Path, timeout: float, args: argparse.Namespace) -> dict[str, object]:
    tree = APPS / spec["tree"]
    log = out / f"{name}.log"
    w = work / name
    shutil.rmtree(w, ignore_errors=True)
    cmd = ["auto", str(tree), "--build-cmd", spec["build"], "--run-cmd", spec["run"], "--top", str(args.top),
           "--max-evals", str(args.max_evals), "--rounds", str(args.rounds), "--runs", str(args.runs), "--work", str(w),
           "--diff", str(out / f"{name}.diff"), "--cmd-timeout", str(min(timeout, 300)), "--no-profile"]
    if spec.get("check"):
        cmd += ["--check-cmd", spec["check"]]
    t0 = time.time()
    rc = s2s(*cmd, timeout=timeout, log=log)
    res: dict[str, object] = {"app": name, "rc": rc, "seconds": round(time.time() - t0, 1), "build": spec["build"],
                              "run": spec["run"]}
    report = w / "auto-report.json"
    if report.is_file():  # its "app" (the before/after comparison) kept as "app_run": "app" is the application's name
        got = json.loads(report.read_text())
        got["app_run"] = got.pop("app", {})
        res.update(got)
    else:
        tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-3:] if log.is_file() else []
        res["error"] = " | ".join(tail)
    return res


def check_builds(names: list[str]) -> int:
    """Here (nvcc, no GPU): each application's profile-instrumented copy and each top kernel's capture-instrumented
    copy build with the application's own build command."""
    sys.path.insert(0, str(REPO))
    from s2s.capture.instrument import instrument
    from s2s.capture.profile import instrument_all
    from s2s.extract.mep_writer import make_mep
    from s2s.scan.ranking import static_estimate
    from s2s.scan.tree import scan_tree

    bad = 0
    for name in names:
        spec = apps()[name]
        tree = APPS / spec["tree"]
        tmp = Path(f"/tmp/s2s-auto-apps-check/{name}")
        shutil.rmtree(tmp, ignore_errors=True)
        index = scan_tree(tree)
        root, sites, notes, backend = instrument_all(tree, tmp / "profile", list(index.launches))
        proc = subprocess.run(spec["build"], shell=True, cwd=root, capture_output=True, text=True, timeout=900)
        print(f"{name}: profile copy ({len(sites)} launch sites timed) build rc={proc.returncode}"
              + ("" if proc.returncode == 0 else f": {(proc.stdout + proc.stderr).strip().splitlines()[-1:]}"))
        bad += proc.returncode != 0
        for h in static_estimate(index)[:2]:
            spec_k = f"{h.kernel.file}:{h.kernel.name}"
            try:
                _o, m, ex = make_mep(str(tree), spec_k, str(tmp / f"mep-{h.kernel.name}"))
                ins = instrument(tree, tmp / f"cap-{h.kernel.name}", m, list(ex.launches))
            except Exception as exc:  # noqa: BLE001 - report and go on
                print(f"  {spec_k}: capture instrumentation refused: {str(exc)[:200]}")
                continue
            proc = subprocess.run(spec["build"], shell=True, cwd=ins.root, capture_output=True, text=True, timeout=900)
            print(f"  {spec_k}: capture copy ({', '.join(ins.sites)}) build rc={proc.returncode}"
                  + ("" if proc.returncode == 0 else f": {(proc.stdout + proc.stderr).strip().splitlines()[-2:]}"))
            bad += proc.returncode != 0
    return 1 if bad else 0


def markdown(doc: dict[str, object]) -> str:
    lines = [f"# s2s auto, capture first, on real applications ({doc['gpu']}, {doc['date']}, commit {doc['commit']})", "",
             "| application | kernels timed (top 3: GPU ms, launches) | per kernel: captured launch, MEP speedup, status |"
             " wall before -> after (s) | output unchanged |", "|---|---|---|---|---|"]
    for r in doc["results"]:  # type: ignore[attr-defined]
        if "capture_rc" in r:
            continue
        prof = ", ".join(f"{k['kernel']} {k['total_ms']:.2f} ms x{k['launches']}" for k in r.get("profile", [])[:3])
        ks = "; ".join(f"{k['kernel']} @{k['launch']}: {k['speedup'] or '-'}x {k['status'][:60]}" for k in r.get("kernels", []))
        app = r.get("app_run") if isinstance(r.get("app_run"), dict) else {}
        wall = (f"{app.get('median_before_s')} -> {app.get('median_after_s')}" if app and "median_before_s" in app
                else str(app.get("why") or app.get("error") or "-"))
        same = ("yes" if app.get("output_unchanged") else "NO") if app and "output_unchanged" in app else "-"
        cells = [str(r["app"]), prof or str(r.get("error", r.get("skipped", "-")))[:300], ks or "-", wall, same]
        lines.append("| " + " | ".join(c.replace("|", "/").replace("\n", " ") for c in cells) + " |")
    for r in doc["results"]:  # type: ignore[attr-defined]
        if "capture_rc" in r:
            lines += ["", f"Struct sample (capture + replay): capture rc {r['capture_rc']}, verdict {r.get('verdict')}, "
                          f"reference reproduces the application's outputs: {r.get('reproduces')}; "
                          f"static vs captured: {r.get('fidelity')}"]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "/tmp/auto_apps")))
    ap.add_argument("--work", type=Path, default=Path("/tmp/s2s-auto-apps"))
    ap.add_argument("--apps", default="struct,npb-cg,npb-mg,npb-ep,parboil-sgemm,parboil-stencil,babelstream")
    ap.add_argument("--deadline", type=float, default=460.0, help="seconds for everything; later apps are skipped")
    ap.add_argument("--per-app", type=float, default=200.0, help="seconds one application may take")
    ap.add_argument("--top", type=int, default=1)
    ap.add_argument("--max-evals", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--check", action="store_true", help="only check here that the instrumented copies build")
    args = ap.parse_args()
    names = [a for a in args.apps.split(",") if a]
    if not APPS.is_dir() and any(n != "struct" for n in names):
        print(f"{APPS} is missing: run bash bench/prepare_gpu_apps.sh first", file=sys.stderr)
        return 2
    if args.check:
        return check_builds([n for n in names if n != "struct"])
    from provenance import commit, write_result

    args.out.mkdir(parents=True, exist_ok=True)
    args.work.mkdir(parents=True, exist_ok=True)
    start = time.time()
    doc: dict[str, object] = {"gpu": gpu_name(), "date": datetime.date.today().isoformat(), "commit": commit(),
                              "settings": {"top": args.top, "max_evals": args.max_evals, "rounds": args.rounds,
                                           "runs": args.runs}, "results": []}
    results: list[dict[str, object]] = doc["results"]  # type: ignore[assignment]
    for name in names:
        left = args.deadline - (time.time() - start)
        if left < 40:
            results.append({"app": name, "skipped": f"deadline ({args.deadline:g} s) reached"})
            continue
        budget = min(args.per_app, left - 10)
        print(f"== {name} (up to {budget:.0f} s)", flush=True)
        r = run_struct(args.out, args.work, budget) if name == "struct" else run_app(name, apps()[name], args.out, args.work,
                                                                                       budget, args)
        results.append(r)
        write_result(args.out, "auto_apps", doc, markdown(doc))  # after every app: a killed run keeps what it had
        print(json.dumps({k: v for k, v in r.items() if k in ("app", "rc", "capture_rc", "verdict", "seconds")}), flush=True)
    write_result(args.out, "auto_apps", doc, markdown(doc))
    print((args.out / "auto_apps.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
