"""The command line: parse arguments, call the library, print. Bad input ends in one line and exit 2."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from contextlib import nullcontext

from rich.console import Console

from . import __version__
from .errors import UserError

Handler = Callable[[argparse.Namespace, Console], int]
COMMANDS: dict[str, Handler] = {}


def command(name: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        COMMANDS[name] = fn
        return fn

    return register


@command("scan")
def _scan(args: argparse.Namespace, console: Console) -> int:
    from .ranking import profile_ranking, static_estimate
    from .scan import scan_tree
    from .scan_report import print_scan, scan_json

    progress = _progress_bar(console, "scanning") if not args.json and sys.stderr.isatty() else None
    with progress or nullcontext():
        index = scan_tree(args.tree, progress=_advance(progress) if progress else None)
    if args.profile:
        spots, unmatched = profile_ranking(index, args.profile)
    else:
        spots, unmatched = static_estimate(index), []
    if args.json:
        print(scan_json(index, spots, unmatched))
    else:
        print_scan(index, spots, unmatched, console)
    return 0


@command("extract")
def _extract(args: argparse.Namespace, console: Console) -> int:
    from .manifest import FILL_IN
    from .mep_writer import make_mep

    overrides = dict(_define(d) for d in args.define or [])
    out, manifest, ex = make_mep(args.tree, args.kernel, args.output, compile_commands=args.compile_commands,
                                 mode=args.mode, allow_missing=args.allow_missing, overrides=overrides)
    console.print(f"wrote MEP {out} for {ex.kernel.qualified} ({ex.mode} closure, {len(ex.items)} items)", highlight=False)
    for note in manifest.notes:
        console.print(f"[yellow]note[/] {note}", highlight=False)
    for entry in manifest.unfilled():
        console.print(f"[red]{FILL_IN}[/] {entry}", highlight=False)
    return 0


def _define(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.isidentifier():
        raise UserError(f"--define expects NAME=VALUE, got '{text}'")
    return name, value


@command("run")
def _run(args: argparse.Namespace, console: Console) -> int:
    from .run_report import run_command

    return run_command(args, console)


def _progress_bar(console: Console, what: str):  # type: ignore[no-untyped-def]
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn(what), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=Console(stderr=True), transient=True)


def _advance(progress):  # type: ignore[no-untyped-def]
    task = progress.add_task("files", total=None)

    def update(done: int, total: int) -> None:
        if done == 1 or done % 200 == 0 or done == total:
            progress.update(task, completed=done, total=total)

    return update


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="s2s", description="Extract, optimize and reintegrate GPU hotspots.")
    p.add_argument("--version", action="version", version=f"s2s {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("scan", help="list kernels and launch sites, ranked")
    s.add_argument("tree")
    s.add_argument("--profile", help="nsys, ncu or rocprofv3 CSV")
    s.add_argument("--compile-commands", help="compile_commands.json (default: found in the tree)")
    s.add_argument("--json", action="store_true")
    e = sub.add_parser("extract", help="write a kernel and its dependency closure as an MEP")
    e.add_argument("tree")
    e.add_argument("--kernel", required=True, help="NAME, ns::NAME or FILE:NAME; add @LINE for overloads in one file")
    e.add_argument("-o", "--output", default=None, help="MEP directory (default: mep-NAME)")
    e.add_argument("--compile-commands", help="compile_commands.json (default: found in the tree)")
    e.add_argument("--mode", choices=("auto", "clang", "names"), default="auto",
                   help="closure by libclang (needs compile flags), by names over the tree-sitter index, or auto")
    e.add_argument("--allow-missing", action="store_true", help="write the file even if a called function is not found")
    e.add_argument("-D", "--define", action="append", metavar="NAME=VALUE",
                   help="override a size macro or host variable for the MEP (e.g. -D MAT_N=4096)")
    for extra in EXTRA_PARSERS:
        extra(sub)
    return p


EXTRA_PARSERS: list[Callable[[argparse._SubParsersAction], None]] = []  # type: ignore[type-arg]


def _add_run_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from .run_report import add_run_parser

    add_run_parser(sub)


EXTRA_PARSERS.append(_add_run_parser)


def _passes_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("passes", help="list the rewrite passes with their options and before/after examples")
    p.add_argument("name", nargs="?", help="show only this pass")
    p.add_argument("--brief", action="store_true", help="names, options and applicability only")


EXTRA_PARSERS.append(_passes_parser)


@command("passes")
def _passes(args: argparse.Namespace, console: Console) -> int:
    import inspect

    from rich.markup import escape
    from rich.panel import Panel
    from rich.syntax import Syntax

    from .passes_registry import all_passes, example, get_pass, options_of

    names = all_passes()
    if args.name and args.name not in names:
        raise UserError(f"unknown pass '{args.name}'", hint=f"known: {', '.join(names)}")
    for name in [args.name] if args.name else names:
        cls = get_pass(name)
        opts = ", ".join(f"{o}: {t} = {d!r}" for o, t, d in options_of(cls)) or "no options"
        doc = (inspect.getmodule(cls).__doc__ or "").strip()  # type: ignore[union-attr]
        console.rule(f"[bold]{escape(name)}[/]  [dim]{escape(opts)}[/]")
        for para in doc.split("\n\n"):
            console.print(escape(" ".join(para.split())), highlight=False)
        if args.brief:
            continue
        try:
            before, after, dialect = example(name)
        except (ImportError, AttributeError):
            continue
        lexer = "c" if dialect == "opencl" else "cuda"
        console.print(Panel(Syntax(before.rstrip(), lexer), title="before", title_align="left"))
        console.print(Panel(Syntax(after.rstrip(), lexer), title="after", title_align="left"))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    console = Console()
    try:
        return COMMANDS[args.command](args, console)
    except UserError as err:
        print(err.one_line(), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())

from . import cli_capture as _capture  # noqa: E402,F401  (registers capture)
from . import cli_stages as _stages  # noqa: E402,F401  (registers optimize, verify, report, reintegrate, auto)
