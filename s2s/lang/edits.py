"""The one way to change kernel text: byte-range edits, checked for overlap and re-parsed.

An edit that would break the file is an outcome (`Failure`), never an exception: passes and LLM
proposals go through the same gate, and the caller decides what to do with a refusal.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .cexpr import try_evaluate
from .parsing import count_errors, first_error, parse


@dataclass(frozen=True)
class Edit:
    """Replace source[start:end] (byte offsets in the kernel file) by `text`; start == end inserts."""

    start: int
    end: int
    text: str

    @staticmethod
    def insert(at: int, text: str) -> Edit:
        return Edit(at, at, text)


@dataclass(frozen=True)
class Success:
    text: bytes


@dataclass(frozen=True)
class Failure:
    reason: str


Result = Success | Failure


def apply_edits(source: bytes, edits: Iterable[Edit], dialect: str) -> Result:
    """Apply all edits at once; reject overlaps, out-of-range offsets and new parse errors."""
    ordered = sorted(edits, key=lambda e: (e.start, e.end))
    for e in ordered:
        if not 0 <= e.start <= e.end <= len(source):
            return Failure(f"edit {e.start}..{e.end} lies outside the source (0..{len(source)})")
    for a, b in zip(ordered, ordered[1:]):
        # Insertions at one point keep the order they were given in (the sort is stable).
        if b.start < a.end:
            return Failure(f"overlapping edits at bytes {a.start}..{a.end} and {b.start}..{b.end}")
    pieces: list[bytes] = []
    cursor = 0
    for e in ordered:
        pieces.append(source[cursor : e.start])
        pieces.append(e.text.encode())
        cursor = e.end
    pieces.append(source[cursor:])
    out = b"".join(pieces)
    before = count_errors(parse(source, dialect).root_node)
    root = parse(out, dialect).root_node
    after = count_errors(root)
    if after > before:
        node = first_error(root)
        where = f" at line {node.start_point[0] + 1}" if node is not None else ""
        snippet = out[node.start_byte : node.end_byte][:40].decode("utf-8", "replace") if node is not None else ""
        return Failure(f"edited text does not parse{where}: near '{snippet}'")
    return Success(out)


@dataclass(frozen=True)
class LaunchChange:
    """How a rewrite changes the launch, as a rule over the old launch (so no problem size is needed here).

    Rules, with g = old grid * old block per dimension (the old global thread counts):
      same            grid unchanged, block = `block`
      same-coverage   grid = ceil(g / block) per dimension (same global threads, new block shape)
      tile            grid = ceil(g / tile) per dimension, block = (tile, tile, 1): same arithmetic as same-coverage
      rows-per-warp   grid.x = ceil(g.x * per_item / block.x): `per_item` threads cooperate on each old thread's row
      swap-xy         block and grid with x and y exchanged (`block` is None)
      threads-for-elements  1-D grid = ceil(g.x * g.y * g.z / block.x)
      tile-coarse     grid = ceil(g / per_item) in x and y, ceil(g.z / block.z) in z: each block covers a
                      per_item x per_item tile of the old threads with fewer threads (each computes several)
      coarsen-x|y|z   grid along that axis = ceil(ceil(g / per_item) / block): each thread computes per_item points
      coarsen-xy:C    coarsen-x by C and coarsen-y by per_item at once (C x per_item points a thread)
      coarsen-x-blocks-y:N  coarsen-x by per_item, and N blocks along y (one thread-block cluster sharing each sum)
      square-xy       grid = (ceil(g.x / block.x), ceil(g.x / block.y), 1): a second axis as long as the first (a loop
                      over the same range as the threads becomes the y axis)
      stream-z        grid = ceil(g / block) in x and y, ceil(g.z / per_item) in z, block.z = 1: each thread marches
                      along per_item points of z (2.5-D blocking)
      chunks-z:N      x coarsened by per_item (as coarsen-x), y as same-coverage, grid.z = N: the old launch must be 2-D
                      (each block along z walks one N-th of a loop's range)
      extent:X|Y|Z    grid = ceil((X, Y, Z) / block), X, Y, Z C expressions over the kernel's scalar parameters evaluated
                      with the launch's `values` (a 1-D index split into 2-D or 3-D: the old grid does not give the sizes)
    """

    block: tuple[int, int, int] | None
    grid_from: str
    per_item: int = 1

    def resolve(self, grid: tuple[int, int, int], block: tuple[int, int, int],
                values: Mapping[str, object] | None = None) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        g = tuple(a * b for a, b in zip(grid, block))
        new = self.block or block
        if self.grid_from.startswith("extent:"):
            sizes = extents(self.grid_from, values or {})
            if sizes is None:
                raise ValueError(f"launch rule '{self.grid_from}' needs the values of its sizes")
            cover = _ceil3(sizes, new)
            if max(cover[1:]) > 65535:  # CUDA's limit on grid.y and grid.z
                raise ValueError(f"a grid of {cover} blocks exceeds 65535 along y or z")
            return cover, new
        if self.grid_from == "same":
            return grid, new
        if self.grid_from in {"same-coverage", "tile"}:
            return _ceil3(g, new), new
        if self.grid_from == "rows-per-warp":
            return (_ceil(g[0] * self.per_item, new[0]), _ceil(g[1], new[1]), _ceil(g[2], new[2])), new
        if self.grid_from == "swap-xy":
            return (grid[1], grid[0], grid[2]), (block[1], block[0], block[2])
        if self.grid_from == "threads-for-elements":
            return (_ceil(g[0] * g[1] * g[2], new[0]), 1, 1), new
        if self.grid_from in {"coarsen-x", "coarsen-y", "coarsen-z"}:
            d = "xyz".index(self.grid_from[-1])
            out = list(grid)
            out[d] = _ceil(_ceil(g[d], self.per_item), new[d])
            return (out[0], out[1], out[2]), new
        if self.grid_from.startswith("coarsen-xy:"):  # x by the number after the colon, y by per_item
            cx = int(self.grid_from.split(":", 1)[1])
            return (_ceil(_ceil(g[0], cx), new[0]), _ceil(_ceil(g[1], self.per_item), new[1]), grid[2]), new
        if self.grid_from.startswith("coarsen-x-blocks-y:"):
            return (_ceil(_ceil(g[0], self.per_item), new[0]), int(self.grid_from.split(":", 1)[1]), grid[2]), new
        if self.grid_from == "tile-coarse":
            return (_ceil(g[0], self.per_item), _ceil(g[1], self.per_item), _ceil(g[2], new[2])), new
        if self.grid_from == "square-xy":
            return (_ceil(g[0], new[0]), _ceil(g[0], new[1]), 1), new
        if self.grid_from.startswith("chunks-z:"):
            if g[2] != 1:
                raise ValueError("the launch is 3-D: its z is not free for the loop's chunks")
            return (_ceil(_ceil(g[0], self.per_item), new[0]), _ceil(g[1], new[1]), int(self.grid_from.split(":", 1)[1])), new
        if self.grid_from == "stream-z":
            return (_ceil(g[0], new[0]), _ceil(g[1], new[1]), _ceil(g[2], self.per_item)), (new[0], new[1], 1)
        raise ValueError(f"unknown launch rule '{self.grid_from}'")


LAUNCH_RULES = ("same", "same-coverage", "tile", "rows-per-warp", "swap-xy", "threads-for-elements", "tile-coarse",
                "coarsen-x", "coarsen-y", "coarsen-z", "square-xy", "stream-z", "coarsen-x-blocks-y",
                "chunks-z")


def extents(rule: str, values: Mapping[str, object]) -> tuple[int, int, int] | None:
    """The global thread counts an `extent:X|Y|Z` rule asks for at these scalar values; None when one is not a positive integer."""
    def number(name: str) -> int | None:
        v = values.get(name)
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    out = [try_evaluate(e, number) for e in (rule.split(":", 1)[1].split("|") + ["1", "1"])[:3]]
    if not all(isinstance(v, int) and v > 0 for v in out):
        return None
    return (int(out[0]), int(out[1]), int(out[2]))  # type: ignore[arg-type]


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _ceil3(g: tuple[int, ...], b: tuple[int, int, int]) -> tuple[int, int, int]:
    return (_ceil(g[0], b[0]), _ceil(g[1], b[1]), _ceil(g[2], b[2]))


@dataclass(frozen=True)
class Rewrite:
    """What a pass proposes: edits to the kernel file, an optional launch change, and a one-line note."""

    edits: tuple[Edit, ...]
    launch: LaunchChange | None = None
    note: str = ""


@dataclass(frozen=True)
class Refused:
    """A pass that does not apply, or would not be safe here, says why."""

    reason: str


def indent_of(source: bytes, at: int) -> str:
    """The blanks that open the line holding byte `at` (new lines inserted there line up with it)."""
    line_start = source.rfind(b"\n", 0, at) + 1
    m = re.match(rb"[ \t]*", source[line_start:at])
    return m.group(0).decode() if m else ""
