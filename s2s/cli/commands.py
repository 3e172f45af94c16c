"""Subcommands for the first stages and the catalogue: scan, extract, run, passes. Thin: parse, call, print."""
from __future__ import annotations

import argparse
import sys
from contextlib import nullcontext
from pathlib import Path

from rich.console import Console

from s2s.base.errors import UserError

from .registry import advance, at_least_one, command, parse_define, progress_bar


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from .run_report import add_run_parser

    s = sub.add_parser("scan", help="list kernels and launch sites, ranked")
    s.add_argument("tree")
    s.add_argument("--profile", help="nsys, ncu or rocprofv3 CSV")
    s.add_argument("--compile-commands", help="compile_commands.json (default: found in the tree)")
    s.add_argument("--json", action="store_true")
    s.add_argument("--no-cache", action="store_true",
                   help="neither read nor write the scan cache ($S2S_CACHE_DIR, else $XDG_CACHE_HOME/s2s or ~/.cache/s2s)")
    s.add_argument("--jobs", "-j", type=at_least_one, default=None, help="worker processes (default: one per core)")
    e = sub.add_parser("extract", help="write a kernel and its dependency closure as an MEP")
    e.add_argument("tree")
    e.add_argument("--kernel", required=True, help="NAME, ns::NAME or FILE:NAME; add @LINE for overloads in one file")
    e.add_argument("-o", "--output", default=None, help="MEP directory (default: mep-NAME)")
    e.add_argument("--compile-commands", help="compile_commands.json (default: found in the tree)")
    e.add_argument("--build-cmd", help="the application's build command: without a compile_commands.json, the compiler "
                   "invocations of its dry run (make -n, in a scratch copy) give each unit's flags")
    e.add_argument("--mode", choices=("auto", "clang", "names"), default="auto",
                   help="closure by libclang (needs compile flags), by names over the tree-sitter index, or auto")
    e.add_argument("--allow-missing", action="store_true", help="write the file even if a called function is not found")
    e.add_argument("--force", action="store_true",
                   help="replace an existing non-empty -o directory (an MEP of another kernel: its history and variants go too)")
    e.add_argument("-D", "--define", action="append", metavar="NAME=VALUE",
                   help="override a size macro or host variable for the MEP (e.g. -D MAT_N=4096)")
    add_run_parser(sub)
    p = sub.add_parser("passes", help="list the rewrite passes with their options and before/after examples")
    p.add_argument("name", nargs="?", help="show only this pass")
    p.add_argument("--brief", action="store_true", help="names, options and applicability only")


@command("scan")
def _scan(args: argparse.Namespace, console: Console) -> int:
    import dataclasses
    import time

    from s2s.scan.cache import default_cache_dir
    from s2s.scan.ranking import profile_ranking, static_estimate
    from s2s.scan.tree import scan_tree

    from .scan_report import print_scan, scan_json

    start = time.perf_counter()
    if args.compile_commands:  # checked like extract checks it: a wrong file is named, never ignored
        from s2s.scan.compdb import find_compdb, load_compdb

        load_compdb(find_compdb(Path(args.tree), args.compile_commands))  # type: ignore[arg-type]
    progress = progress_bar(console, "scanning") if not args.json and sys.stderr.isatty() else None
    with progress or nullcontext():
        index = scan_tree(args.tree, progress=advance(progress) if progress else None,
                          cache_dir=None if args.no_cache else default_cache_dir(), jobs=args.jobs or None)
    if "warning" in index.extra:
        print(f"warning: {index.extra['warning']}", file=sys.stderr)  # one line, never wrapped
    if args.profile:
        spots, unmatched = profile_ranking(index, args.profile)
    else:
        spots, unmatched = static_estimate(index), []
    index = dataclasses.replace(index, seconds=time.perf_counter() - start)  # the whole command's time
    if args.json:
        print(scan_json(index, spots, unmatched))
    else:
        print_scan(index, spots, unmatched, console)
    return 0


@command("extract")
def _extract(args: argparse.Namespace, console: Console) -> int:
    from rich.markup import escape

    from s2s.extract.mep_writer import make_mep
    from s2s.mep.fill_in import summary as fill_in_summary
    from s2s.mep.manifest import FILL_IN

    overrides = dict(parse_define(d) for d in args.define or [])
    out, manifest, ex = make_mep(args.tree, args.kernel, args.output, compile_commands=args.compile_commands,
                                 mode=args.mode, allow_missing=args.allow_missing, overrides=overrides, force=args.force,
                                 build_cmd=args.build_cmd)
    console.print(f"wrote MEP {out} for {ex.kernel.qualified} ({ex.mode} closure, {len(ex.items)} items)", highlight=False)
    shown = 6  # one screen: the first notes, then what is FILL-IN and why
    for note in manifest.notes[:shown]:
        console.print(f"[yellow]note[/] {note}", highlight=False)
    if len(manifest.notes) > shown:
        console.print(f"[yellow]note[/] ... {len(manifest.notes) - shown} more in mep.toml [notes]", highlight=False)
    for line in fill_in_summary(manifest, width=max(60, console.width - len(FILL_IN))):
        if line.startswith("  "):
            console.print(f"[red]{FILL_IN}[/] {escape(line.strip())}", highlight=False)
        else:
            console.print(escape(line), highlight=False)
    return 0


@command("run")
def _run(args: argparse.Namespace, console: Console) -> int:
    from .run_report import run_command

    return run_command(args, console)


@command("passes")
def _passes(args: argparse.Namespace, console: Console) -> int:
    import inspect

    from rich.markup import escape
    from rich.panel import Panel
    from rich.syntax import Syntax

    from s2s.optimize.registry import all_passes, example, get_pass, options_of

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
