"""The command line: parse arguments, call the library, print. Bad input ends in one line and exit 2.

Every subcommand module adds its parsers (`add_parsers`) and registers its handlers in `registry`.
"""
from __future__ import annotations

import argparse
import errno
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from rich.console import Console

from s2s import __version__
from s2s.base.errors import UserError

from . import capture, commands, sequence, stages
from .outputs import check_outputs
from .registry import COMMANDS


class Parser(argparse.ArgumentParser):
    """Bad arguments are bad input like any other: one line naming the option, exit 2 (no usage block)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {self.prog}: {message} (hint: `{self.prog} --help` lists the options)\n")


_PLACE_ERRORS = {errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM}


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="s2s", description="Extract, optimize and reintegrate GPU hotspots.")
    p.add_argument("--version", action="version", version=f"s2s {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    for module in (commands, capture, sequence, stages):  # the order of `s2s --help`
        module.add_parsers(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    from s2s.base.procs import Interrupted, signals_raise

    args = build_parser().parse_args(argv)
    console = Console()
    try:
        check_outputs(args)  # a wrong -o/--work/--diff is refused before any work
        if getattr(args, "mep", None) and not getattr(args, "restore", False):
            from s2s.reintegrate.splice import check_not_interrupted

            check_not_interrupted(Path(args.mep))
        with signals_raise():  # SIGTERM like Ctrl-C: child process groups are killed, in-place changes rolled back
            return COMMANDS[args.command](args, console)
    except UserError as err:
        print(err.one_line(), file=sys.stderr)
        return 2
    except BrokenPipeError:  # `s2s scan --json | head`: the reader left; say nothing more
        _quiet_stdout()
        return 141
    except OSError as err:
        if err.errno not in _PLACE_ERRORS:
            raise
        # a read-only MEP, a full disk, a quota, a file without permission: the place, named, not a traceback
        where = f"{err.filename}: " if err.filename else ""
        print(f"error: {where}{err.strerror or err} (hint: make it writable or free space, then run again)", file=sys.stderr)
        return 2
    except Interrupted as err:
        print(f"error: {err.message}", file=sys.stderr)
        return 128 + err.signo
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130


def _quiet_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's final flush does not fail on the closed pipe again."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


if __name__ == "__main__":
    sys.exit(main())
