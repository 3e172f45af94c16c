"""The command table (each subcommand module registers its handlers here) and the options' helpers they share."""
from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from rich.console import Console

from s2s.base.errors import UserError

Handler = Callable[[argparse.Namespace, Console], int]
COMMANDS: dict[str, Handler] = {}


def command(name: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        COMMANDS[name] = fn
        return fn

    return register


def _number(text: str, kind: type) -> float:
    import math

    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {'an integer' if kind is int else 'a number'}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text}: must be a finite number")
    return value  # type: ignore[no-any-return]


def _bounded(kind: type, least: float, *, strict: bool = False) -> Callable[[str], Any]:
    """The one argparse type of every numeric option: a finite `kind` >= `least` (> `least` when `strict`); a bad
    value is argparse's one line naming the option, exit 2, before any work."""
    def parse(text: str) -> Any:
        value = _number(text, kind)
        if value < least or (strict and value == least):
            raise argparse.ArgumentTypeError(f"{text}: must be {'>' if strict else '>='} {least:g}")
        return value

    return parse


# a count (--top, --rounds, --max-evals, --workers, --jobs): an integer >= 1
at_least_one: Callable[[str], int] = _bounded(int, 1)
# a time or size (--time-budget, --cmd-timeout, --timeout): a finite number > 0
positive: Callable[[str], float] = _bounded(float, 0, strict=True)
# a tolerance (--output-rtol): a finite number >= 0
at_least_zero: Callable[[str], float] = _bounded(float, 0)
# a count where 0 means none or the default (--gpus-per-job, --max-retries, scan --jobs)
count_from_zero: Callable[[str], int] = _bounded(int, 0)


def parse_define(text: str) -> tuple[str, str]:
    """`-D NAME=VALUE` as a pair; anything else is bad input."""
    name, sep, value = text.partition("=")
    if not sep or not name.isidentifier():
        raise UserError(f"--define expects NAME=VALUE, got '{text}'")
    return name, value


def progress_bar(console: Console, what: str):  # type: ignore[no-untyped-def]
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn(what), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=Console(stderr=True), transient=True)


def advance(progress):  # type: ignore[no-untyped-def]
    task = progress.add_task("files", total=None)

    def update(done: int, total: int) -> None:
        if done == 1 or done % 200 == 0 or done == total:
            progress.update(task, completed=done, total=total)

    return update
