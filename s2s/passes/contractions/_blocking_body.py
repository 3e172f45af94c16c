"""The assembled body of contraction-blocking's tiled kernel (the pieces are `BlockingCode`'s, s2s/passes/contractions/_blocking_code.py).

With `groups` > 1 (contraction-triangle's `kgroups`) the block holds that many copies of the 16 x 16 (8 x 8 at tile 64)
threads along z, each with its own shared tiles, taking every groups-th k slice: the same outputs with more threads an
SM where the grid is too small to fill the GPU (a triangle of 64-wide tiles: 8 warps an SM at 64 threads a block). All
groups run the same number of rounds (a slice past the end loads zeros and multiplies nothing), so every thread reaches
every barrier; at the end groups 1.. add their sums into group 0's in ascending order through one shared array, and
group 0 alone runs the statements before the loop and the stores.
"""
from __future__ import annotations

from ._blocking_code import BlockingCode
from ._blocking_full import fast_path, full_test

PAD = 4  # floats of padding a shared row: a warp's transposed stores on distinct banks


def body(code: BlockingCode, origin: list[str] | None = None, start: list[str] | None = None,
         tail: list[str] | None = None) -> list[str]:
    """The body; `origin` (row0, col0), `start` (inside the guard) and `tail` (the stores) replace the defaults."""
    c, n, bk, gs = code.c, code.n, code.bk, code.groups
    space, sync = ("__local", "barrier(CLK_LOCAL_MEM_FENCE);") if code.cl else ("__shared__", "__syncthreads();")
    lx, ly, lz, gx, gy = ("get_local_id(0)", "get_local_id(1)", "get_local_id(2)", "get_group_id(0)", "get_group_id(1)") \
        if code.cl else ("threadIdx.x", "threadIdx.y", "threadIdx.z", "blockIdx.x", "blockIdx.y")
    bufs = ("[2]" if code.prefetch else "") if gs == 1 else f"[{gs}]" + ("[2]" if code.prefetch else "")
    decls = [f"{space} float4 {n[f's{side}{i}']}{bufs}[{bk}][{(code.size + PAD) // 4}];" for side, i, _ in code.ops]
    if gs > 1:
        decls.append(f"{space} float {n['red']}[{64 * code.threads}];")
    acc = f"{n['acc']}[{n['m']}]"
    live, alive = n["live"], n["alive"]
    first = start if start is not None else [*(code.txt(s, e) for s, e, _ in c.before), f"{acc} = {c.target};"]
    if gs > 1 and first:  # the statements before the loop and the accumulator's start: once, in group 0
        first = [f"if ({n['grp']} == 0) {{", *("    " + s for s in first), "}"]
    head = [*decls, f"{space} int {alive};", f"float {n['acc']}[64];",
            f"const int {n['tx']} = {lx}, {n['ty']} = {ly}, {n['tid']} = {n['ty']} * {code.dim} + {n['tx']};",
            *([f"const int {n['grp']} = {lz};"] if gs > 1 else []),
            *(origin or [f"const int {n['row0']} = {gy} * {code.size}, {n['col0']} = {gx} * {code.size};"]), f"int {live} = 0;",
            *code.each(), f"    {acc} = 0;", f"    if ({c.inside}) {{", *("        " + s for s in first),
            f"        {live} = 1;", "    }", "}",
            # a block none of whose outputs passes the guard (above the diagonal of a triangular one) leaves at
            # once, all its threads together: every thread that stays reaches every barrier
            f"if ({n['tid']} == 0 && {n['grp']} == 0) {alive} = 0;" if gs > 1 else f"if ({n['tid']} == 0) {alive} = 0;",
            sync, f"if ({live}) {alive} = 1;", sync, f"if (!{alive}) return;", *code.checks()]
    redeclared = [code.txt(s, e) for s, e, d in c.before if d and not (c.target_decl and c.target in code.txt(s, e).split("=")[0])]
    tail = tail or [*code.each(), f"    if ({c.inside}) {{", *("        " + s for s in redeclared), f"        {c.target_decl}{c.target} = {acc};",
                    *("        " + code.txt(s, e) for s, e in c.after), "    }", "}"]
    if gs > 1:
        tail = [*reduction(code, sync), f"if ({n['grp']} == 0) {{", *("    " + s for s in tail), "}"]
    main = loop(code, sync)
    if not code.full or gs > 1:
        return head + main + tail
    # blocks wholly inside the sizes, their operands float4-aligned: the same sums without a guard (s2s/passes/contractions/_blocking_full.py)
    cut = head.index(f"int {live} = 0;")
    checks = code.checks()
    rest = head[cut:len(head) - len(checks)]
    fast = fast_path(code, first, redeclared, loop(code, sync, fast=True))
    return [*head[:cut], *checks, full_test(code), f"if ({n['full']}) {{", *("    " + s for s in fast), "} else {",
            *("    " + s for s in rest + main + tail), "}"]


def loop(code: BlockingCode, sync: str, fast: bool = False) -> list[str]:
    """The loop over k slices (`fast`: without the guards of a full block)."""
    c, n, bk, gs = code.c, code.n, code.bk, code.groups
    t = n["t"]
    # this group's first slice, the loop's end and the next slice: the same trip count for every group
    lo, hi, nxt = (c.lower, c.upper, f"{t} + {bk}") if gs == 1 else \
        (f"{c.lower} + {n['grp']} * {bk}", f"{c.upper} + {n['grp']} * {bk}", f"{t} + {gs * bk}")
    loop = f"for (int {t} = {lo}; {t} < {hi}; {t} += {gs * bk}) {{"
    if not code.prefetch:
        return [loop, *("    " + s for side, i, o in code.ops for s in code.load(side, i, o, t, "smem", fast)),
                f"    {sync}", *("    " + s for s in code.compute(t, "", fast)), f"    {sync}", "}"]
    # double buffering: slice t multiplied out of buffer buf while the group's next slice waits in registers
    regs = {(side, i): n[f"p{side}{i}"] for side, i, _ in code.ops}
    per = code.size * bk // code.threads
    return [f"int {n['buf']} = 0;", *(s for side, i, o in code.ops for s in code.load(side, i, o, lo, "smem", fast)), sync, loop,
            *(f"    float {regs[(side, i)]}[{per}];" for side, i, _ in code.ops),
            f"    if ({nxt} < {c.upper}) {{",
            *("        " + s for side, i, o in code.ops for s in code.load(side, i, o, nxt, regs[(side, i)], fast)),
            "    }",
            *("    " + s for s in code.compute(t, f"[{n['buf']}]", fast)),
            f"    if ({nxt} < {c.upper}) {{",
            *("        " + s for side, i, o in code.ops for s in code.spill(side, i, o, regs[(side, i)], f"1 - {n['buf']}")),
            f"        {n['buf']} = 1 - {n['buf']};", "    }", f"    {sync}", "}"]


def reduction(code: BlockingCode, sync: str) -> list[str]:
    """Groups 1.. add their 64 sums into group 0's, one group at a time in ascending order (a fixed order: the same
    result every run), through one shared array laid out [output][thread] (a warp's 32 stores on 32 banks)."""
    n, m, h, red = code.n, code.n["m"], code.n["h"], code.n["red"]
    at = f"{red}[{m} * {code.threads} + {n['tid']}]"
    return [f"for (int {h} = 1; {h} < {code.groups}; ++{h}) {{",
            f"    if ({n['grp']} == {h}) {{", "        #pragma unroll", f"        for (int {m} = 0; {m} < 64; ++{m}) {at} = {n['acc']}[{m}];", "    }",
            f"    {sync}",
            f"    if ({n['grp']} == 0) {{", "        #pragma unroll", f"        for (int {m} = 0; {m} < 64; ++{m}) {n['acc']}[{m}] += {at};", "    }",
            f"    {sync}", "}"]
