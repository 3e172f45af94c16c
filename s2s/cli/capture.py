"""`s2s capture TREE --kernel NAME --build-cmd CMD --run-cmd CMD [--into MEP]`: an MEP with the data of a real run."""
from __future__ import annotations

import argparse

from rich.console import Console

from .registry import at_least_one, command, parse_define, positive


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    c = sub.add_parser("capture", help="extract a kernel into an MEP with the inputs and outputs of a real run")
    c.add_argument("tree", help="the application's directory (copied; the copy is instrumented, built and run)")
    c.add_argument("--kernel", required=True, help="NAME, ns::NAME or FILE:NAME; add @LINE for overloads in one file")
    c.add_argument("--build-cmd", required=True, help="shell command that builds the application, run in the copy")
    c.add_argument("--run-cmd", required=True, help="shell command that runs the application, run in the copy")
    which = c.add_mutually_exclusive_group()
    which.add_argument("--launch", type=at_least_one, default=None, metavar="N", help="record the Nth launch of the kernel (default 1)")
    which.add_argument("--first", type=at_least_one, default=None, metavar="N", help="record the first N launches")
    c.add_argument("--max-bytes", default="2G", help="largest amount of buffer data one launch may write (default 2G)")
    where = c.add_mutually_exclusive_group()
    where.add_argument("-o", "--output", default=None, help="MEP directory (default: mep-NAME)")
    where.add_argument("--into", metavar="MEP", default=None,
                       help="attach the data to this existing MEP of the same kernel, keeping its history and variants")
    c.add_argument("--compile-commands", help="compile_commands.json (default: found in the tree)")
    c.add_argument("--mode", choices=("auto", "clang", "names"), default="auto", help="closure mode, as for extract")
    c.add_argument("-D", "--define", action="append", metavar="NAME=VALUE", help="as for extract")
    c.add_argument("--timeout", type=positive, default=1800.0, help="seconds before the build or run command is killed")
    c.add_argument("--keep-copy", metavar="DIR", help="instrument the copy in DIR and keep it (for debugging)")
    c.add_argument("--compare-static", action="store_true",
                   help="also compare every statically inferred value with the captured one (capture/fidelity.json)")



@command("capture")
def _capture(args: argparse.Namespace, console: Console) -> int:
    from s2s.capture import capture, parse_bytes

    overrides = dict(parse_define(d) for d in args.define or [])
    got = capture(args.tree, args.kernel, args.build_cmd, args.run_cmd, launch=args.launch, first=args.first,
                  max_bytes=parse_bytes(args.max_bytes), output=args.output, timeout=args.timeout,
                  compile_commands=args.compile_commands, mode=args.mode, overrides=overrides, keep_copy=args.keep_copy,
                  into=args.into, compare_static=args.compare_static)
    m = got.manifest
    sets = m.capture.get("sets", [])
    what = f"attached to MEP {got.mep}" if args.into else f"wrote MEP {got.mep}"
    console.print(f"{what} for {m.kernel} with captured data of launch(es) {', '.join(map(str, sets))} "
                  f"(of {got.launches_seen} launches; instrumented {', '.join(got.sites)})", highlight=False)
    for note in got.notes:
        console.print(f"[yellow]note[/] {note}", highlight=False)
    if got.fidelity is not None:
        from s2s.capture.fidelity import summary_lines

        for line in summary_lines(got.fidelity):
            console.print(line, highlight=False, markup=False)
        console.print(f"per value: {got.mep}/capture/fidelity.json", highlight=False)
    if args.into:
        console.print(f"check the optimized variants on it with `s2s verify {got.mep}`", highlight=False)
    else:
        console.print(f"check it with `s2s run {got.mep}`: the reference must reproduce the captured outputs", highlight=False)
    return 0
