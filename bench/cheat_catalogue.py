"""The catalogue of broken and cheating variants (issue 12, FIELD_NOTES "How kernel optimizers get fooled"): every
entry must be caught, with the verdict and the message it names here.

One small kernel (written for this catalogue) in a neutral spelling that becomes OpenCL or CUDA; each entry edits
it (a variant) or the MEP (bad input). CI runs every entry on PoCL (tests/test_cheats.py); on a GPU:

    python3 bench/cheat_catalogue.py --backend cuda --out OUT     # JSON + markdown with the GPU, date, commit
    python3 bench/cheat_catalogue.py --backend cuda --dry         # builds every variant with nvcc, runs nothing
    python3 bench/cheat_catalogue.py --backend opencl --out OUT   # the same on any OpenCL device (PoCL here)
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

N = 1000  # elements; the size scalar n (its smaller-size set runs n = 500)
BAD_INPUT = "bad-input"  # evaluate raised UserError naming mep.toml (s2s run: one line, exit 2)

BASE = r'''
KERNEL void cat(GLOBAL const double* x, GLOBAL const double* y, GLOBAL double* out, GLOBAL const int* k, GLOBAL int* iout,
                const double alpha, const int n)
{
    int i = GID;
    if (i < n) {
        out[i] = alpha * x[i] + y[i] * sqrt(fabs(x[i]));
        if (k[i] % 5 != 0)
            iout[i] = (k[i] % 7 == 0) ? -1 : k[i] * 3;
    }
}
'''
OUT_LINE = "        out[i] = alpha * x[i] + y[i] * sqrt(fabs(x[i]));"
OUT_EXPR = "alpha * x[i] + y[i] * sqrt(fabs(x[i]))"
IOUT_LINES = "        if (k[i] % 5 != 0)\n            iout[i] = (k[i] % 7 == 0) ? -1 : k[i] * 3;"

DIALECTS = {
    "opencl": {"KERNEL": "__kernel", "GLOBAL": "__global", "GID": "(int)get_global_id(0)", "DEVGLOBAL": "__global",
               "PRE": ""},
    "cuda": {"KERNEL": "__global__", "GLOBAL": "", "GID": "(int)(blockIdx.x * blockDim.x + threadIdx.x)",
             "DEVGLOBAL": "__device__", "PRE": "#include <cuda_runtime.h>\n#include <math.h>\n"},
}


def spell(neutral: str, dialect: str) -> str:
    d = DIALECTS[dialect]
    text = neutral
    for key in ("DEVGLOBAL", "KERNEL", "GLOBAL", "GID"):
        text = text.replace(key + " ", d[key] + " " if d[key] else "").replace(key, d[key])
    return d["PRE"] + text


def _sub(old: str, new: str) -> Callable[[str], str]:
    def edit(src: str) -> str:
        assert old in src, old
        return src.replace(old, new)
    return edit


def _first(*edits: Callable[[str], str]) -> Callable[[str], str]:
    def edit(src: str) -> str:
        for e in edits:
            src = e(src)
        return src
    return edit


@dataclass(frozen=True)
class Case:
    name: str
    trick: str  # what the variant does, or what is wrong with the MEP
    catches: str  # the check that catches it
    buffer: str  # the output (or mep.toml parameter) the verdict names
    words: tuple[str, ...]  # one of them is in that output's message (the bad-input message)
    edit: Callable[[str], str] | None = None  # the variant, from the reference (neutral spelling)
    verdict: str = "wrong-output"
    mep: dict[str, Any] = field(default_factory=dict)  # bad input: {"count": {param: n}} / {"value": {param: v}}
    timed: bool = False  # caught only by the check after the timing


CASES: tuple[Case, ...] = (
    Case("sentinel_overwritten", "writes 0 where the reference writes the int sentinel -1 (all 0xFF bytes, like the poison)",
         "two poisons: a -1 the reference writes is known written and checked", "iout", ("differ beyond tolerance",),
         _sub("? -1 :", "? 0 :")),
    Case("sentinel_left_unwritten", "leaves unwritten the elements where the reference writes -1",
         "two poisons: the second run (over 0x00) shows the variant did not write them", "iout", ("left unwritten",),
         _sub("iout[i] = (k[i] % 7 == 0) ? -1 : k[i] * 3;", "if (k[i] % 7 != 0) iout[i] = k[i] * 3;")),
    Case("writes_nothing", "computes nothing and hopes the reference's result is still in the output (stale output)",
         "outputs poisoned before every run", "out", ("left unwritten",),
         _sub(OUT_LINE + "\n" + IOUT_LINES, "")),
    Case("size_specialized", "specialized to the one size in mep.toml (the bound n replaced by 1000)",
         "the smaller-size set (n = 500)", "out", ("smaller size",), _sub("if (i < n)", "if (i < 1000)")),
    Case("skip_last", "skips the last element", "poison: the element is left unwritten", "out", ("left unwritten",),
         _sub("if (i < n)", "if (i < n - 1)")),
    Case("keeps_stale_output", "returns early when the output already holds a value (a result of an earlier launch)",
         "a set whose outputs are pre-filled with the previous set's results", "out",
         ("pre-filled with the previous set's results",),
         _sub("    if (i < n) {", "    if (i < n && out[i] == out[i] && out[i] != 0) return;\n    if (i < n) {")),
    Case("constant", "the same value everywhere", "constant-output check", "out", ("constant (0.75)",),
         _sub(OUT_EXPR, "0.75")),
    Case("zeros", "zeros everywhere", "all-zero check (and tolerance)", "out", ("all zero",), _sub(OUT_EXPR, "0.0")),
    Case("nan", "NaN in one element", "NaN/Inf where the reference is finite", "out", ("NaN/Inf",),
         _sub(OUT_EXPR, "(i == 7 ? sqrt(-1.0 - fabs(x[i])) : " + OUT_EXPR + ")")),
    Case("inf", "+Inf in one element", "NaN/Inf where the reference is finite", "out", ("NaN/Inf",),
         _sub(OUT_EXPR, "(i == 3 ? 1.0 / (x[i] - x[i]) : " + OUT_EXPR + ")")),
    Case("caches_between_launches", "computes once and serves later launches from a cache in device memory",
         "several fresh input sets", "out", ("input set 2", "input set 3", "smaller size"),
         _first(_sub("KERNEL void cat", "DEVGLOBAL double s2s_cache[1000];\nDEVGLOBAL int s2s_seen[1000];\nKERNEL void cat"),
                _sub(OUT_LINE, "        if (s2s_seen[i] == 0) { s2s_cache[i] = " + OUT_EXPR + "; s2s_seen[i] = 1; }\n"
                               "        out[i] = s2s_cache[i];"))),
    Case("detects_warmup", "correct while checked, skips the work once it has been launched a dozen times (timing)",
         "the check with a fresh input set after the timing", "out", ("after timing",),
         _first(_sub("KERNEL void cat", "DEVGLOBAL int s2s_launches[1000];\nKERNEL void cat"),
                _sub("    if (i < n) {", "    if (i < n && ++s2s_launches[i] > 12) return;\n    if (i < n) {")), timed=True),
    Case("writes_input", "writes into an input (so that a reference run after it would compute on garbage)",
         "inputs compared with the reference's, byte for byte", "x", ("modified this input",),
         _sub(OUT_LINE, OUT_LINE + "\n        ((GLOBAL double*)x)[i] = 0.0;")),
    Case("precision_downgrade", "single precision where the reference computes in double",
         "relative tolerance (1e-9 here)", "out", ("differ beyond tolerance",),
         _sub(OUT_EXPR, "(double)((float)alpha * (float)x[i] + (float)y[i] * sqrt(fabs((float)x[i])))")),
    Case("out_of_bounds_write", "writes one element past the end of the output", "guard region after every buffer",
         "out", ("past the end",), _sub(OUT_LINE, OUT_LINE + "\n        if (i == n - 1) out[i + 1] = 0.0;")),
    Case("reads_past_end", "reads one element past the end of an input", "guard bytes read as values differ",
         "out", ("differ beyond tolerance", "NaN/Inf"), _sub("alpha * x[i] +", "alpha * x[i == n - 1 ? i + 1 : i] +")),
    Case("writes_where_reference_does_not", "writes every element, also those the reference leaves untouched",
         "two poisons: the reference's unwritten elements are known", "iout", ("leaves untouched",),
         _sub("        if (k[i] % 5 != 0)\n", "")),
    Case("int_off_by_one", "an integer off by one in one element", "integers compared exactly", "iout",
         ("differ beyond tolerance", "leaves untouched"), _sub("k[i] * 3;", "k[i] * 3 + (i == 5);")),
    Case("depends_on_poison", "writes the output only where it finds the 0xFF poison (NaN)",
         "the second run over 0x00", "out", ("second run",),
         _sub(OUT_LINE, "        if (out[i] != out[i]) out[i] = " + OUT_EXPR + ";")),
    Case("reversed", "writes each result to the mirrored element", "tolerance", "out", ("differ beyond tolerance",),
         _sub("        out[i] = ", "        out[n - 1 - i] = ")),
    Case("even_only", "does half of the work", "poison: half the elements left unwritten", "out", ("left unwritten",),
         _sub("    if (i < n) {", "    if (i < n && i % 2 == 0) {")),
    Case("race_on_neighbour", "also writes its neighbour's element with its own value (a race between threads)",
         "tolerance on both runs", "out", ("differ beyond tolerance", "second run"),
         _sub(OUT_LINE, OUT_LINE + "\n        if (i + 1 < n && i % 3 == 0) out[i + 1] = out[i];")),
    # the MEP itself is wrong: bad input naming the parameter (s2s run: one line, exit 2)
    Case("count_too_small_read", "mep.toml gives x 16 elements, the kernel reads 1000",
         "bounds probe: the reference's results change with what lies past x", "x", ("params.x.count",),
         verdict=BAD_INPUT, mep={"count": {"x": 16}}),
    Case("count_too_small_write", "mep.toml gives out 500 elements, the kernel writes 1000",
         "bounds probe / guard: the reference writes past out", "out", ("params.out.count",),
         verdict=BAD_INPUT, mep={"count": {"out": 500}}),
    Case("reference_writes_nothing", "n = 0: the reference writes nothing, so every variant would pass",
         "refused: nothing to hold a variant to", "params", ("writes nothing",), verdict=BAD_INPUT, mep={"value": {"n": 0}}),
    # a correct rewrite must pass (no false alarm)
    Case("correct_rewrite", "a correct rewrite (fma, branch folded)", "passes every check", "", (),
         _first(_sub(OUT_EXPR, "fma(alpha, x[i], y[i] * sqrt(fabs(x[i])))"),
                _sub(IOUT_LINES, "        int kk = k[i];\n        if (kk % 5 != 0) iout[i] = kk % 7 == 0 ? -1 : 3 * kk;")),
         verdict="ok"),
)


def manifest(dialect: str) -> Any:
    from s2s.mep.manifest import LaunchSpec, Manifest, ParamSpec

    glob = "global" if dialect == "opencl" else ""
    params = [
        ParamSpec("x", "const double*", "in", "double", count=N, space=glob, low=-4.0, high=4.0),
        ParamSpec("y", "const double*", "in", "double", count=N, space=glob),
        ParamSpec("out", "double*", "out", "double", count=N, space=glob),
        ParamSpec("k", "const int*", "in", "int", count=N, space=glob, low=0, high=1_000_000),
        ParamSpec("iout", "int*", "out", "int", count=N, space=glob),
        ParamSpec("alpha", "const double", "scalar", "double", value=1.5, space="private" if glob else ""),
        ParamSpec("n", "const int", "scalar", "int", value=N, space="private" if glob else ""),
    ]
    launch = LaunchSpec(grid=(1024, 1, 1), block=(64, 1, 1)) if dialect == "opencl" else LaunchSpec(grid=(4, 1, 1), block=(256, 1, 1))
    return Manifest(kernel="cat", backend=dialect, kernel_file="kernel.cl" if dialect == "opencl" else "kernel.cu",
                    origin={"file": "cheat_catalogue"}, params=params, launch=launch,
                    flags=["-cl-std=CL2.0"] if dialect == "opencl" else [], rtol=1e-9, atol=0.0, repetitions=4, warmup=1,
                    timeout_s=60.0)


def _patched(m: Any, case: Case) -> Any:
    counts, values = case.mep.get("count", {}), case.mep.get("value", {})
    params = [replace(p, count=counts.get(p.name, p.count), value=values.get(p.name, p.value)) for p in m.params]
    return replace(m, params=params)


def write_meps(root: Path, dialect: str, cases: tuple[Case, ...] = CASES) -> dict[str, tuple[Path, str | None]]:
    """Case name -> (MEP directory, variant id or None for a bad-input MEP run against itself)."""
    from s2s.mep.manifest import save

    base = spell(BASE, dialect)
    m = manifest(dialect)
    out: dict[str, tuple[Path, str | None]] = {}
    main = root / "catalogue"
    main.mkdir(parents=True, exist_ok=True)
    (main / m.kernel_file).write_text(base)
    save(m, main)
    for c in cases:
        if c.verdict == BAD_INPUT:
            d = root / c.name
            d.mkdir(parents=True, exist_ok=True)
            (d / m.kernel_file).write_text(base)
            save(_patched(m, c), d)
            out[c.name] = (d, None)
            continue
        assert c.edit is not None
        vdir = main / "variants" / c.name
        vdir.mkdir(parents=True, exist_ok=True)
        (vdir / m.kernel_file).write_text(spell(c.edit(BASE), dialect))
        out[c.name] = (main, c.name)
    return out


def judge(case: Case, verdict: str, messages: list[str], outputs: dict[str, str]) -> tuple[bool, str]:
    """(caught as the catalogue says, the message that shows it)."""
    if verdict != case.verdict:
        return False, f"verdict {verdict}, expected {case.verdict}: {' | '.join(messages[-2:])}"
    if case.verdict == "ok":
        return True, "ok"
    text = " ".join(messages) if case.verdict == BAD_INPUT else outputs.get(case.buffer, "")
    hit = next((w for w in case.words if w in text), None)
    return hit is not None, text[:300]


def run_case(case: Case, where: tuple[Path, str | None], built: Any = None) -> dict[str, Any]:
    from s2s.base.errors import UserError
    from s2s.mep.evaluate import evaluate, run_built

    mep, variant = where
    t0 = time.monotonic()
    try:
        if built is not None:
            m = run_built(built, time=case.timed)
        else:
            m = evaluate(mep, variant, time=case.timed)
        verdict, messages = m.verdict, list(m.messages)
        outputs = {o.name: o.message for o in m.outputs if not o.ok}
        device, seed = m.device, m.seed
    except UserError as exc:
        verdict, messages, outputs, device, seed = BAD_INPUT, [str(exc)], {}, "", None
    caught, shown = judge(case, verdict, messages, outputs)
    return {"case": case.name, "trick": case.trick, "caught_by": case.catches, "expected": case.verdict, "verdict": verdict,
            "buffer": case.buffer, "caught": caught, "message": shown, "device": device, "seed": seed,
            "seconds": round(time.monotonic() - t0, 2)}


def markdown(doc: dict[str, Any]) -> str:
    rows = doc["cases"]
    lines = [f"# Cheat catalogue on {doc['device']} ({doc['backend']}; {doc['date']}, commit {doc['commit']})", "",
             f"**{sum(r['caught'] for r in rows)} of {len(rows)} entries caught as expected** "
             f"({sum(r['expected'] != 'ok' for r in rows)} broken or cheating, the rest must pass).", "",
             "| entry | trick | expected | verdict | caught by | as expected |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['case']} | {r['trick']} | {r['expected']} | {r['verdict']} | {r['caught_by']} | "
                     f"{'yes' if r['caught'] else '**NO**: ' + r['message'][:120].replace('|', '/')} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    ap.add_argument("--backend", choices=sorted(DIALECTS), default="cuda")
    ap.add_argument("--out", default=None, help="where cheat_catalogue_<backend>.json/.md go")
    ap.add_argument("--work", default=None, help="where the MEPs are written (default: a temporary directory)")
    ap.add_argument("--dry", action="store_true", help="build every variant (nvcc for cuda), run nothing")
    ap.add_argument("--only", default="", help="comma-separated entries")
    args = ap.parse_args(argv)
    import tempfile

    from provenance import commit, write_result

    from s2s.mep.evaluate import build_many

    cases = tuple(c for c in CASES if not args.only or c.name in args.only.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.work or tmp)
        where = write_meps(root, args.backend, cases)
        variants = [c.name for c in cases if c.verdict != BAD_INPUT]
        builds = dict(zip(variants, build_many(root / "catalogue", variants))) if variants else {}
        if args.dry:
            bad = [n for n, b in builds.items() if not b.ok]
            for n in bad:
                print(f"{n}: build failed: {builds[n].log[-400:]}")
            print(f"{len(builds) - len(bad)} of {len(builds)} variants built ({args.backend}, nothing run)")
            return 1 if bad else 0
        rows = []
        for c in cases:
            r = run_case(c, where[c.name], builds.get(c.name))
            rows.append(r)
            print(f"{c.name:32s} {r['verdict']:14s} {'caught' if r['caught'] else 'NOT CAUGHT: ' + r['message'][:200]}", flush=True)
    device = next((r["device"] for r in rows if r["device"]), "?")
    doc = {"backend": args.backend, "device": device, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "commit": commit(), "caught": sum(r["caught"] for r in rows), "entries": len(rows), "cases": rows}
    md = markdown(doc)
    if args.out:
        write_result(Path(args.out), f"cheat_catalogue_{args.backend}", doc, md)
    print(md)
    return 0 if all(r["caught"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
