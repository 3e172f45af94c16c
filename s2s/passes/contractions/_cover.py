"""Tiled code for a contraction without a guard, at its own launch (contraction-tiling, register-blocking).

A kernel with no guard is exact only where its launch covers the outputs exactly, and every launch site may
have another size or block. So the launch is kept: the bounds are the grid's (gridDim * blockDim, the outputs
the original computes), the blocks take the tiles in turn (a grid-stride loop over tiles; blocks left over exit
at once), only the loads are guarded, and a launch whose block does not hold the threads the tiled code is
written for runs the original body instead (blockDim is the same for every thread: no barrier is split).
"""
from __future__ import annotations

import re

from s2s.lang.contraction import Contraction
from s2s.lang.kernel_facts import KernelFacts


def builtins(cl: bool) -> dict[str, str]:
    if cl:
        return {"bx": "get_local_size(0)", "by": "get_local_size(1)", "bz": "get_local_size(2)", "gx": "get_num_groups(0)",
                "gy": "get_num_groups(1)", "lx": "get_local_id(0)", "ly": "get_local_id(1)", "gx_id": "get_group_id(0)",
                "gy_id": "get_group_id(1)"}
    return {"bx": "blockDim.x", "by": "blockDim.y", "bz": "blockDim.z", "gx": "gridDim.x", "gy": "gridDim.y", "lx": "threadIdx.x",
            "ly": "threadIdx.y", "gx_id": "blockIdx.x", "gy_id": "blockIdx.y"}


def linear(b: dict[str, str]) -> str:
    """The thread's index in its block."""
    return f"({b['ly']} * {b['bx']} + {b['lx']})"


def cover(source: bytes, c: Contraction, n: dict[str, str], parts: tuple[list[str], str, list[str]], threads: int, tile: int,
          b: dict[str, str]) -> list[str]:
    """`parts` = (declarations, the line that gives each thread its place in the tile, the code for one tile at row0, col0)."""
    head, place, tiled = parts
    original = source[c.body[0]:c.body[1]].decode().replace("\n" + c.indent, "\n" + c.indent + "    ")
    per_row = f"(({n['rows']} + {tile - 1}) / {tile})"
    return [
        *head,
        f"if ({b['bx']} * {b['by']} != {threads} || {b['bz']} != 1) {{  // a block this variant was not written for",
        f"    {original}", "    return;", "}",
        f"const int {n['cols']} = {b['gx']} * {b['bx']}, {n['rows']} = {b['gy']} * {b['by']};  // the outputs the launch covers",
        f"const int {n['tiles']} = ({n['cols']} + {tile - 1}) / {tile};",
        place,
        f"for (int {n['tile']} = {b['gy_id']} * {b['gx']} + {b['gx_id']}; {n['tile']} < {n['tiles']} * {per_row}; "
        f"{n['tile']} += {b['gx']} * {b['gy']}) {{",
        f"    const int {n['row0']} = {n['tile']} / {n['tiles']} * {tile}, {n['col0']} = {n['tile']} % {n['tiles']} * {tile};",
        *("    " + line for line in tiled), "}",
    ]


def product_inputs(source: bytes, facts: KernelFacts, c: Contraction) -> tuple[dict[str, str], tuple[str, str, str], list[str], list[str]] | str:
    """For register-blocking: (the index types, the element types of A, B and the accumulator, the statements before
    the loop, those after it with the declarations they may use) when the accumulation is `ACC += A * B` alone."""
    if len(c.a) != 1 or len(c.b) != 1 or c.lower.strip() != "0":
        return "needs one operand on each side and a loop from 0"
    marks = sorted([(s, e, "@T") for s, e in c.target_spans] + [(s, e, "@A") for s, e in c.a[0].spans]
                   + [(s, e, "@B") for s, e in c.b[0].spans])
    shape, at = "", c.statement[0]
    for s, e, mark in marks:
        shape, at = shape + source[at:s].decode() + mark, e
    shape = re.sub(r"\s+", "", shape + source[at:c.statement[1]].decode())
    if shape not in {"@T+=@A*@B;", "@T+=@B*@A;"}:
        return "the accumulation must be ACC += A * B (one product, nothing else)"
    a_p, b_p, held = facts.param(c.a[0].array), facts.param(c.b[0].array), facts.param(c.target_array)
    if a_p is None or b_p is None or a_p.written or b_p.written:
        return "both factors must be kernel parameters the kernel never writes"
    acc_ty = c.target_decl.strip() or (held.base_type if held is not None else "")
    types = {}
    for s, e in c.mapping:
        m = re.match(r"\s*((?:const\s+)?(?:unsigned\s+)?\w+)\s+(\w+)\s*=", source[s:e].decode())
        if m is None:
            return "the index declarations must declare one variable each"
        types[m.group(2)] = m.group(1).replace("const ", "")
    if set(types) != {c.row, c.col} or not acc_ty:
        return "the index declarations must declare one variable each"
    text = [source[s:e].decode() for s, e, _ in c.before]
    kept = [t for (s, e, decl), t in zip(c.before, text) if decl and not (c.target_decl and c.target in t.split("=")[0])]
    return types, (a_p.base_type, b_p.base_type, acc_ty), text, kept + [source[s:e].decode() for s, e in c.after]
