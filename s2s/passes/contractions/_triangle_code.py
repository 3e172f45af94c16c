"""contraction-triangle's tiled body: contraction-blocking's (s2s/passes/contractions/_blocking_code.py) on one side of the diagonal.

With `tri` ("lower": column tile <= row tile, "upper": the other way) the launched blocks, numbered in launch order,
take only the tiles on that side (row by row, each row's tiles clipped to the launched columns); the blocks left over
leave before any work. With `mirror` (a symmetric product over a square guard) each output's terms are summed from zero
and written twice, as (row, col) and as (col, row) outside the diagonal tiles: each place runs the statements before
the loop (its own beta term), adds the sum, then the statements after it.
"""
from __future__ import annotations

from s2s.lang.contraction import Contraction

from ._blocking_body import PAD, body
from ._blocking_code import TILE, BlockingCode

SMEM = 48 * 1024  # bytes of static shared memory a CUDA block may declare


def group_refusal(tile: int, groups: int, prefetch: bool, bk: int, operands: int, cl: bool) -> str:
    """Why `groups` k groups do not fit ("" when they do): each group's tiles and the array their sums meet in. CUDA
    only: on PoCL 3.1 the group tests after the blocks' early exits (before their barriers) read as uniform across the
    work-group (group 1 stores as group 0; tests/test_contraction_triangle_kgroups.py keeps the case)."""
    if groups not in {1, 2, 4}:
        return "kgroups must be 1, 2 or 4"
    if groups == 1:
        return ""
    if cl:
        return "kgroups is CUDA only (its OpenCL text gave wrong sums on PoCL: unverified there)"
    if tile != 64:
        return "kgroups needs tile=64 (the 8 x 8 sums of 256 threads would need 64 KB of shared memory to meet)"
    size = operands * groups * (2 if prefetch else 1) * bk * (tile + PAD) * 4 + 64 * (tile // 8) ** 2 * 4
    return f"{groups} k groups need {size} bytes of shared memory, over {SMEM}" if size > SMEM else ""


def bounds(tile: int, groups: int, prefetch: bool, operands: int) -> str:
    """__launch_bounds__: 128 registers a thread (2 blocks of 256 an SM, 8 of 64); twice that, no spills, for 64 a
    block prefetching or two operands a side (a rank-2k update); with k groups 512 threads an SM (256 for rank-2k)."""
    dim = tile // 8
    heavy = (prefetch and dim == 8) or operands > 2
    if groups > 1:
        return f"__launch_bounds__({dim * dim * groups}, {max(1, (256 if operands > 2 else 512) // (dim * dim * groups))}) "
    return f"__launch_bounds__({dim * dim}, {(256 if heavy else 512) // dim // dim}) "


class TriangleCode(BlockingCode):
    def __init__(self, bk: int, prefetch: bool, c: Contraction, n: dict[str, str], cl: bool, source: bytes,
                 tri: str, mirror: bool, size: int = TILE, groups: int = 1) -> None:
        super().__init__(bk, True, prefetch, c, n, cl, source, size, groups)
        self.tri, self.mirror = tri, mirror

    def lines(self) -> list[str]:
        """The body (s2s/passes/contractions/_blocking_body.py) with the triangle's tile origin and, with `mirror`, its stores."""
        gx, gy = ("get_group_id(0)", "get_group_id(1)") if self.cl else ("blockIdx.x", "blockIdx.y")
        # mirror: each output's sum from zero, the statements before the loop at the store
        return body(self, self.origin(gx, gy), [] if self.mirror else None, self.store() if self.mirror else None)

    def origin(self, gx: str, gy: str) -> list[str]:
        """row0 and col0 of the launch-order number's tile: along the major axis (rows for "lower") the triangle's rows
        hold 1, 2, ... tiles up to the launched count along the minor axis, then that many each."""
        n = self.n
        nx, ny = ("get_num_groups(0)", "get_num_groups(1)") if self.cl else ("gridDim.x", "gridDim.y")
        nmin, nmaj = (nx, ny) if self.tri == "lower" else (ny, nx)
        lin, tri, bmaj, bmin, lo, hi = n["lin"], n["tri"], n["bmaj"], n["bmin"], n["nmin"], n["nmaj"]
        sqrt = "sqrt" if self.cl else "sqrtf"
        row, col = (bmaj, bmin) if self.tri == "lower" else (bmin, bmaj)
        return [f"const int {lo} = {nmin}, {hi} = {nmaj}, {lin} = {gy} * {nx} + {gx}, {tri} = {lo} * ({lo} + 1) / 2;",
                f"int {bmaj}, {bmin};",
                f"if ({lin} < {tri}) {{",
                f"    {bmaj} = (int)(({sqrt}(8.0f * {lin} + 1.0f) - 1.0f) * 0.5f);",
                f"    while ({bmaj} > 0 && {bmaj} * ({bmaj} + 1) / 2 > {lin}) --{bmaj};",
                f"    while (({bmaj} + 1) * ({bmaj} + 2) / 2 <= {lin}) ++{bmaj};",
                f"    {bmin} = {lin} - {bmaj} * ({bmaj} + 1) / 2;",
                "} else {",
                f"    {bmaj} = {lo} + ({lin} - {tri}) / {lo};",
                f"    {bmin} = ({lin} - {tri}) % {lo};",
                "}",
                f"if ({bmaj} >= {hi}) return;  // past the last tile of the triangle: the whole block, before any barrier",
                f"const int {n['row0']} = {row} * {self.size}, {n['col0']} = {col} * {self.size};"]

    def store(self) -> list[str]:
        """The outputs (mirror) at (row, col) and at (col, row)."""
        c, n = self.c, self.n
        place = [f"    if ({c.inside}) {{", *("        " + self.txt(s, e) for s, e, _ in c.before), f"        {c.target} += {n['acc']}[{n['m']}];",
                 *("        " + self.txt(s, e) for s, e in c.after), "    }", "}"]
        return [*self.each(), *place, f"if ({n['row0']} != {n['col0']}) {{",  # the diagonal tiles hold both places
                *("    " + s for s in self.each(swap=True) + place), "}"]
