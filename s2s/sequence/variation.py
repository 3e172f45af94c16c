"""How a window's launches vary from one loop iteration to the next: the argument-variation analysis.

    variation(launches) -> Variation

The loop body is the shortest run of launch sites that repeats over the whole window (`step, source, step, source,
...` has a body of two). Each argument at each body position is then, over the iterations:
  fixed     the same value or the same pointer every time;
  rotating  pointers that cycle with a period (ping-pong buffers swapped after each step: period 2);
  periodic  a value that cycles with a period;
  affine    an integer that moves by a constant step (a time index `t`, `2 * t + 1`);
  varying   anything else (a float time accumulated step by step, data-dependent sizes).
The body period is the number of iterations after which every fixed, rotating and periodic argument repeats (the least
common multiple of their periods); a graph of that many iterations, launched once per period, replays the window with
only the nodes whose arguments still change (affine, varying) updated between launches (`updated_nodes`).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .window import Launch

MAX_PERIOD = 8  # iterations in one graph of the body at most


@dataclass(frozen=True)
class ArgVariation:
    position: int  # in the body of one iteration
    site: str
    index: int  # the argument's position in the launch
    kind: str  # "fixed" | "rotating" | "periodic" | "affine" | "varying"
    period: int = 1
    start: int | None = None  # affine: the first iteration's value and the step
    step: int | None = None

    def describe(self) -> str:
        what = f"{self.site} argument {self.index}"
        if self.kind == "affine":
            return f"{what}: affine in the iteration ({self.start} + {self.step}*i)"
        if self.kind in {"rotating", "periodic"}:
            return f"{what}: {self.kind} with period {self.period}"
        return f"{what}: {self.kind}"


@dataclass(frozen=True)
class Variation:
    body_sites: tuple[str, ...]  # the sites of one iteration, in order
    iterations: int
    remainder: int  # launches after the last whole iteration
    period: int  # iterations in one body graph
    args: tuple[ArgVariation, ...]
    updated_nodes: tuple[int, ...]  # launches of the body graph whose arguments or configuration change between bodies

    @property
    def body_launches(self) -> int:
        return len(self.body_sites) * self.period

    def as_dict(self) -> dict[str, object]:
        return {"body_sites": list(self.body_sites), "iterations": self.iterations, "remainder": self.remainder,
                "period": self.period, "body_launches": self.body_launches, "updated_nodes": list(self.updated_nodes),
                "arguments": [a.describe() for a in self.args if a.kind != "fixed"]}


def _shortest_period(items: Sequence[object], limit: int) -> int | None:
    """The least p <= limit with items[k] == items[k - p] for every k (None: none)."""
    for p in range(1, min(limit, len(items)) + 1):
        if all(items[k] == items[k - p] for k in range(p, len(items))):
            return p
    return None


def body_length(sites: Sequence[str]) -> int:
    """The sites of one iteration: the shortest period of the window's site sequence that repeats at least twice
    (the whole window when none does)."""
    p = _shortest_period(sites, len(sites) // 2)
    return p if p is not None else len(sites)


def _as_int(hex_bytes: str) -> int | None:
    if len(hex_bytes) not in (8, 16):
        return None
    return int.from_bytes(bytes.fromhex(hex_bytes), "little", signed=True)


def _classify(position: int, site: str, index: int, series: list[tuple[str, int, str, int, int]]) -> ArgVariation:
    if all(s == series[0] for s in series):
        return ArgVariation(position, site, index, "fixed")
    kind = series[0][0]
    p = _shortest_period(series, min(MAX_PERIOD, len(series) // 2))
    if p is not None and all(s[0] == kind for s in series):
        return ArgVariation(position, site, index, "rotating" if kind == "ptr" else "periodic", period=p)
    if kind == "value" and all(s[0] == "value" for s in series):
        ints = [_as_int(s[2]) for s in series]
        if all(v is not None for v in ints) and len(ints) > 1:
            vals = [int(v) for v in ints if v is not None]
            step = vals[1] - vals[0]
            if all(b - a == step for a, b in zip(vals, vals[1:])):
                return ArgVariation(position, site, index, "affine", start=vals[0], step=step)
    return ArgVariation(position, site, index, "varying")


def _launch_key(la: Launch) -> tuple[object, ...]:
    return (la.site, la.grid, la.block, la.shmem, tuple(a.key for a in la.args))


def variation(launches: Sequence[Launch]) -> Variation:
    sites = [la.site for la in launches]
    length = body_length(sites)
    iterations = len(launches) // length
    args: list[ArgVariation] = []
    for j in range(length):
        at = [launches[k * length + j] for k in range(iterations)]
        for i in range(len(at[0].args)):
            args.append(_classify(j, at[0].site, i, [la.args[i].key if i < len(la.args) else ("", 0, "", 0, 0) for la in at]))
    periodic = [a.period for a in args if a.kind in {"rotating", "periodic"}]
    period = math.lcm(*periodic) if periodic else 1
    if period > MAX_PERIOD or period > max(1, iterations):
        period = 1
    body = length * period
    whole = len(launches) // body
    updated = tuple(n for n in range(body)
                    if any(_launch_key(launches[r * body + n]) != _launch_key(launches[n]) for r in range(1, whole)))
    return Variation(body_sites=tuple(sites[:length]), iterations=iterations, remainder=len(launches) - iterations * length,
                     period=period, args=tuple(args), updated_nodes=updated)
