"""`s2s capture --compare-static`: every value static inference gave for the kernel, against the captured truth.

Per value (buffer counts, scalars and struct fields, grid, block, shared memory, template arguments):
`equal`, `FILL-IN` (static inference said it did not know), `wrong` (it gave another value: the defect to
drive to zero), or `unknown` (the capture does not record it). Written to the MEP's capture/fidelity.json.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from s2s.mep.manifest import FILL_IN, Manifest

from .deduce import builtin_spelling

EQUAL, FILLIN, WRONG, UNKNOWN = "equal", "FILL-IN", "wrong", "unknown"


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return bool(a) == bool(b)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if isinstance(a, int) and isinstance(b, int):
            return a == b
        return abs(float(a) - float(b)) <= 1e-6 * max(1.0, abs(float(a)), abs(float(b)))
    return str(a).strip() == str(b).strip()


def _is_fill_in(v: Any) -> bool:
    return v == FILL_IN or (isinstance(v, (list, tuple)) and FILL_IN in v)


def _verdict(static: Any, truth: Any) -> str:
    if _is_fill_in(static):
        return FILLIN
    if isinstance(static, (list, tuple)) and isinstance(truth, (list, tuple)):
        return EQUAL if len(static) == len(truth) and all(_same(a, b) for a, b in zip(static, truth)) else WRONG
    return EQUAL if _same(static, truth) else WRONG


def _row(what: str, static: Any, truth: Any, verdict: str | None = None) -> dict[str, Any]:
    return {"value": what, "static": static, "captured": truth, "verdict": verdict or _verdict(static, truth)}


# a CUDA typedef and the type the compiler names (C's long and short forms are deduce.builtin_spelling)
_CUDA_ALIASES = {"half": "__half", "nv_half": "__half", "nv_bfloat16": "__nv_bfloat16"}
_BUILTIN = {"unsigned", "signed", "short", "long", "int", "char", "float", "double", "bool"}


def _one_targ(a: str) -> str:
    a = " ".join(a.replace("std::", "").split())
    if a and set(a.split()) <= _BUILTIN:
        a = builtin_spelling(a.split())
    a = _CUDA_ALIASES.get(a, a)
    m = re.fullmatch(r"\(?\s*(?:\w+\s*\))?\s*(-?\d+)[uUlL]*", a)  # 256u, (int)256, (unsigned int)256
    return m.group(1) if m else a


def same_template_args(static: str, truth: str, aliases: dict[str, str] | None = None) -> bool:
    """`half, 256u` and `__half, 256`: one instance, spelled by the source and by the compiler; `aliases` (a tree's
    typedefs, name -> type) resolve the source's own names (`uchar_misaligned` for `unsigned char`)."""
    from .deduce import split_args

    def norm(t: str) -> str:
        t = _one_targ(t)
        for _ in range(8):  # typedefs of typedefs
            if t not in (aliases or {}):
                break
            t = _one_targ((aliases or {})[t])
        return t

    a, b = split_args(static), split_args(truth)
    return len(a) == len(b) and all(norm(x) == norm(y) for x, y in zip(a, b))


def tree_typedefs(tree: Path | None, limit: int = 400) -> dict[str, str]:
    """The typedefs and `using` aliases of a tree's sources (s2s.lang.typedefs: name -> type), for telling one type's
    names apart from two types; a name given two types is left out."""
    from s2s.lang.typedefs import typedefs

    found: dict[str, set[str]] = {}
    if tree is None or not Path(tree).is_dir():
        return {}
    files = [f for f in sorted(Path(tree).rglob("*")) if f.suffix in {".h", ".hpp", ".cuh", ".cu", ".cpp", ".cc", ".c", ".hip"}]
    for f in files[:limit]:
        try:
            source = f.read_bytes().decode("utf-8", errors="replace")
        except OSError:
            continue
        for name, types in typedefs(source).items():
            found.setdefault(name, set()).update(types)
    return {k: next(iter(v)) for k, v in found.items() if len(v) == 1}


def _template_args_at(tree: Path | None, site: str, kernel: str) -> str | None:
    """The explicit template arguments at the recorded launch site (`k<float, 256><<<...>>>`), else None."""
    if tree is None or ":" not in site:
        return None
    file, _, line = site.rpartition(":")
    try:
        text = (tree / file).read_text(encoding="utf-8", errors="replace").splitlines()[int(line) - 1]
    except (OSError, ValueError, IndexError):
        return None
    short = re.escape(kernel.split("::")[-1])
    m = re.search(short + r"\s*<((?:[^<>]|<[^<>]*>)*)>\s*<<<", text)
    return " ".join(m.group(1).split()) if m else None


def compare(static: Manifest, captured: Manifest, tree: Path | None = None) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    truth = {p.name: p for p in captured.params}
    for p in static.params:
        c = truth.get(p.name)
        if c is None:
            continue
        if p.role != "scalar":
            rows.append(_row(f"params.{p.name}.count", p.count, c.count))
        elif isinstance(c.value, dict):
            if isinstance(p.value, dict):
                rows += [_row(f"params.{p.name}.{k}", v, c.value[k]) for k, v in p.value.items() if k in c.value]
                if not p.value:
                    rows.append(_row(f"params.{p.name}", "random fields", "captured bytes", UNKNOWN))
            else:
                rows.append(_row(f"params.{p.name}.value", p.value, c.value))
        else:
            rows.append(_row(f"params.{p.name}.value", p.value, c.value))
    rows.append(_row("launch.grid", list(static.launch.grid), list(captured.launch.grid)))
    rows.append(_row("launch.block", list(static.launch.block), list(captured.launch.block)))
    if captured.backend != "opencl":
        rows.append(_row("launch.shared_mem", static.launch.shared_mem, captured.launch.shared_mem))
    if static.template_args or "<" in static.kernel:
        # the truth: the instance the launch ran, as collect solved it from what the runtime recorded (the site's
        # arguments named by the instance, or deduced from the argument types); the site's text only where the
        # capture solved nothing (in a template host function the text names the host's own parameters: `k<T, BS>`)
        solved = bool(captured.capture.get("template_args_from")) and captured.template_args not in ("", FILL_IN)
        targs = captured.template_args if solved and "?" not in captured.template_args else None
        if targs is None:
            site = str(captured.capture.get("from", "")).partition(" at ")[2].partition(",")[0]
            targs = _template_args_at(tree, site, static.kernel)
        if targs is None:
            rows.append(_row("template_args", static.template_args, "not recorded", UNKNOWN))
        else:
            verdict = FILLIN if _is_fill_in(static.template_args) else (
                EQUAL if same_template_args(static.template_args, targs)
                or same_template_args(static.template_args, targs, tree_typedefs(tree)) else WRONG)
            rows.append(_row("template_args", static.template_args, targs, verdict))
    summary = {k: sum(r["verdict"] == k for r in rows) for k in (EQUAL, FILLIN, WRONG, UNKNOWN)}
    return {"schema": 1, "kernel": static.kernel, "backend": static.backend, "capture": captured.capture.get("from", ""),
            "summary": summary, "values": rows}


def write(mep: Path, report: dict[str, Any]) -> Path:
    path = Path(mep) / "capture" / "fidelity.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1, default=str) + "\n", encoding="utf-8")
    return path


def summary_lines(report: dict[str, Any]) -> list[str]:
    s = report["summary"]
    out = [f"static inference against the capture: {s[EQUAL]} equal, {s[FILLIN]} FILL-IN, {s[WRONG]} wrong"
           + (f", {s[UNKNOWN]} not recorded" if s[UNKNOWN] else "")]
    for r in report["values"]:
        if r["verdict"] in (WRONG, FILLIN):
            out.append(f"  {r['verdict']:7} {r['value']}: static {r['static']!r}, captured {r['captured']!r}")
    return out
