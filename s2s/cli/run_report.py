"""`s2s run MEP [--variant ID]`: the command's arguments, and its table or JSON."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from s2s.mep.measure import OK, Measurement, Timing


def add_run_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    r = sub.add_parser("run", help="build, check and time a variant against the reference kernel")
    r.add_argument("mep", help="the MEP directory (holds mep.toml)")
    r.add_argument("--variant", default=None,
                   help="variants/ID/, or `best` for the optimization's verified winner (default: the reference against itself)")
    r.add_argument("--json", action="store_true", help="one JSON object on stdout")
    r.add_argument("--sanitize", action="store_true", help="also run under compute-sanitizer memcheck (CUDA/HIP)")
    r.add_argument("--no-time", action="store_true", help="check correctness only")


def resolve_variant(mep: Path, variant: str | None) -> str | None:
    """`best`: the fastest verified variant in the MEP's history (a UserError when there is none); else as given."""
    if variant != "best":
        return variant
    from s2s.base.errors import UserError
    from s2s.mep.history import best_of

    row = best_of(Path(mep))
    if row is None:
        raise UserError("--variant best: no verified variant in this MEP's history", file=str(mep),
                        hint="run `s2s optimize` first, or name a variant id")
    return row.id


def run_command(args: argparse.Namespace, console: Console) -> int:
    from s2s.mep.evaluate import UnfilledError, evaluate

    try:
        m = evaluate(Path(args.mep), resolve_variant(Path(args.mep), args.variant), time=not args.no_time, sanitize=args.sanitize)
    except UnfilledError as err:
        for entry in err.entries:
            print(f"error: {err.file}: FILL-IN: {entry}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(m.to_json()))
    else:
        print_measurement(m, console)
    return 0 if m.verdict == OK else 1


def _timing(t: Timing | None) -> str:
    if not t:
        return "-"
    batch = f" x {t.batch} launches" if t.batch > 1 else ""
    return (f"{t.median_us:.2f} µs  (IQR {t.spread_us:.2f}, p10-p90 {t.p10_us:.2f}-{t.p90_us:.2f}; "
            f"{t.samples} samples{batch}" + (f" after {t.warmup} warm-up" if t.warmup else "") + ")")


def _tol(v: float | None) -> str:
    """A tolerance cell; None: an input (held unchanged), or a record older than per-output tolerances."""
    return "-" if v is None else f"{v:g}"


def print_measurement(m: Measurement, console: Console) -> None:
    colour = "green" if m.ok else "red"
    t = Table(title=f"{m.kernel}: {('variant ' + m.variant) if m.variant else 'the reference against itself'}",
              title_justify="left", show_header=False, box=None, padding=(0, 2))
    t.add_column(style="bold")
    t.add_column()
    t.add_row("backend", m.backend)
    t.add_row("device", m.device or "-")
    t.add_row("build", f"{m.build_seconds:.1f} s")
    t.add_row("reference", _timing(m.ref))
    t.add_row("variant", _timing(m.var))
    t.add_row("speedup", f"{m.speedup:.3f}x" if m.speedup else "-")
    t.add_row("checked", f"{m.input_sets} input set(s)")
    t.add_row("verdict", f"[{colour}]{m.verdict}[/]")
    console.print(t)
    if m.outputs:
        o = Table(show_header=True, box=None, padding=(0, 2))
        for col in ("buffer", "role", "check", "max abs err", "max rel err", "rtol", "atol", "unwritten"):
            o.add_column(col)
        for c in m.outputs:
            o.add_row(c.name, c.role, "[green]ok[/]" if c.ok else "[red]FAIL[/]", f"{c.max_abs_err:.3g}", f"{c.max_rel_err:.3g}",
                      _tol(c.rtol), _tol(c.atol), str(c.unwritten))
        console.print(o)
        for c in m.outputs:
            if c.message:
                console.print(f"  [red]{c.name}[/]: {c.message}", highlight=False)
    if m.speedup and m.speedup > 10 and m.ok:
        console.print("[yellow]note[/] speedup above 10x: worth a second look", highlight=False)
    for msg in m.messages:
        console.print(f"  {msg}", highlight=False, markup=False)
