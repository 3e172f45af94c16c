"""`s2s sequence TREE --build-cmd CMD --run-cmd CMD [--function F] [--skip N] [--window N] [-o DIR] [--run]`: a host
loop's window of launches captured into a sequence MEP (and, with --run, replayed original and as CUDA Graphs)."""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rich.console import Console

from .registry import at_least_one, command, count_from_zero, positive


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    c = sub.add_parser("sequence", help="capture a host loop's launches into a sequence MEP; replay it as a CUDA Graph")
    c.add_argument("tree", help="the application's directory (copied; the copy is profiled, instrumented, built and run)")
    c.add_argument("--build-cmd", required=True, help="shell command that builds the application, run in the copy")
    c.add_argument("--run-cmd", required=True, help="shell command that runs the application, run in the copy")
    c.add_argument("--function", help="the host function whose loop to capture (NAME or FILE:NAME, its loop with the most "
                                      "GPU time; FILE:NAME@LINE, the loop nest at LINE; default: the launch-bound loop "
                                      "with the most GPU time)")
    c.add_argument("--skip", type=count_from_zero, default=0, metavar="N", help="launches of the loop before the window")
    c.add_argument("--window", type=at_least_one, default=None, metavar="N",
                   help="launches in the window (default: all the loop made, at most 100000)")
    c.add_argument("-o", "--output", default="seq-mep", help="sequence MEP directory (default: seq-mep)")
    c.add_argument("--timeout", type=positive, default=1800.0, help="seconds before the build or run command is killed")
    c.add_argument("--run", action="store_true", help="then build and run the harness (needs nvcc and a GPU)")
    c.add_argument("--reps", type=at_least_one, default=15, help="timed repetitions of each mode with --run (default 15)")
    c.add_argument("--diff", metavar="FILE", help="with --run: write the host-code diff that makes the loop a CUDA Graph "
                                                   "(of one body period, launched per body, or of the whole loop) or one "
                                                   "cooperative launch per batch of iterations (persistent), the form "
                                                   "whose time with its setup beat the original's fastest run by the "
                                                   "most, when every check passed")


@command("sequence")
def _sequence(args: argparse.Namespace, console: Console) -> int:
    from s2s.base.errors import UserError
    from s2s.sequence.capture import capture_sequence

    if args.diff and not args.run:
        raise UserError("--diff needs --run: the loop is graphed only where the graph measured faster")
    got = capture_sequence(args.tree, args.build_cmd, args.run_cmd, args.output, function=args.function,
                           window=args.window, skip=args.skip, timeout=args.timeout)
    v = got.variation
    console.print(f"wrote sequence MEP {got.mep}: {len(got.window.launches)} launches of {', '.join(got.sequence.kernels)} "
                  f"from {got.sequence.file}:{got.sequence.function} ({v.iterations} iterations of {len(v.body_sites)} "
                  f"launches; {len(got.window.buffers)} buffers)", highlight=False)
    for line in v.as_dict()["arguments"]:  # type: ignore[attr-defined]
        console.print(f"  {line}", highlight=False, markup=False)
    persistent = json.loads((got.mep / "sequence.json").read_text()).get("persistent", {})
    if persistent.get("applies"):
        console.print(f"  persistent form: the {persistent['iterations']} iterations as one cooperative launch of "
                      f"{persistent['threads']}-thread blocks, a grid barrier between launches", highlight=False)
    else:
        console.print(f"  persistent form: not planned, {persistent.get('reason', '?')}", highlight=False, markup=False)
    for note in got.notes:
        console.print(f"[yellow]note[/] {note}", highlight=False)
    if not args.run:
        console.print(f"replay it with `make -C {got.mep} && (cd {got.mep} && ./harness)`", highlight=False)
        return 0
    from s2s.sequence.replay import replay

    result = replay(got.mep, args.reps)
    console.print(json.dumps(result), highlight=False, markup=False, soft_wrap=True)
    ok = result.get("verdict") == "ok"
    if args.diff:
        write_graph_diff(got.mep, result, args.diff, console)
    return 0 if ok else 1


def write_graph_diff(mep: Path, result: dict[str, Any], diff: str, console: Console) -> None:
    from s2s.base.fsutil import atomic_write
    from s2s.sequence.choice import FORMS, choose_form, estimated_runs, with_graph_run
    from s2s.sequence.host_graph import graph_diff
    from s2s.sequence.host_persistent import persistent_diff

    manifest = json.loads((Path(mep) / "sequence.json").read_text())
    window = manifest.get("window", {})
    # a whole run of a loop the application runs again and again: a kept graph's instantiation is shared by its runs
    runs = estimated_runs(float(manifest.get("origin", {}).get("profiled_launches", 0)), int(window.get("launches", 0)),
                          bool(window.get("whole_run")))
    form, why = choose_form(with_graph_run(result, runs), forms=(*FORMS, "graph_run"))
    if not form:
        console.print(f"no diff written: {why}", highlight=False)
        return
    atomic_write(Path(diff), persistent_diff(mep) if form == "persistent" else graph_diff(mep, form))
    console.print(f"wrote {diff}: the loop as {form} ({why})", highlight=False)
