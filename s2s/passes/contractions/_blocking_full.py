"""contraction-blocking's text for a full block: every output of its 128 x 128 inside the sizes, every k slice whole,
every operand's float4 check passed. Such a block (all but the last row and column of blocks, and all of them at
sizes that are multiples of 128) runs a copy of the loop with no guard on a load, a slice or a store, and no early-exit
test (its two barriers); the other blocks run the guarded text. The test is the same for every thread of a block,
and the copy adds the same terms in the same order: the results are the guarded text's bit for bit.
"""
from __future__ import annotations

from s2s.lang.kernel_model import Guard

from ._blocking_code import BlockingCode


def rectangle(guard: Guard | None, row: str, col: str) -> bool:
    """Whether the guard says no more than `row < R && col < C` (or its early-exit form): then a block whose last row
    and last column pass it passes it everywhere. Any other term (a diagonal, a flag) keeps the guarded text only."""
    if guard is None or guard.lower or sorted(v for v, _ in guard.upper) != sorted([row, col]):
        return False
    return _terms(guard.condition, "||" if guard.kind == "return" else "&&") == 2


def _terms(text: str, op: str) -> int:
    depth, count, i = 0, 1, 0
    while i < len(text):
        ch = text[i]
        depth += (ch in "([") - (ch in ")]")
        if depth == 0 and text.startswith(op, i):
            count, i = count + 1, i + len(op)
            continue
        i += 1
    return count


def full_test(code: BlockingCode) -> str:
    """`full`: the block's last row and column inside the bounds, a k range of whole slices (not empty: the first
    slice is loaded before the loop) and every operand's float4 flag set."""
    c, n, last = code.c, code.n, code.size - 1
    (ro, co), flags = c.offsets, " && ".join(n[f"v{side}{i}"] for side, i, _ in code.ops)
    return (f"const int {n['full']} = {n['row0']} + {last}{ro} < ({c.row_bound}) && {n['col0']} + {last}{co} < ({c.col_bound}) && "
            f"({c.upper}) > ({c.lower}) && (({c.upper}) - ({c.lower})) % {code.bk} == 0 && {flags};")


def fast_path(code: BlockingCode, first: list[str], redeclared: list[str], main: list[str]) -> list[str]:
    """The full block's body: the statements before the loop for all 64 outputs, the unguarded loop, the stores."""
    c, n = code.c, code.n
    acc = f"{n['acc']}[{n['m']}]"
    start = [*code.each(), *("    " + s for s in first), "}"]
    scalar = [*code.each(), *("    " + s for s in redeclared), f"    {c.target_decl}{c.target} = {acc};",
              *("    " + code.txt(s, e) for s, e in c.after), "}"]
    return start + main + (vector_stores(code, redeclared, scalar) if code.stores else scalar)


def _at(code: BlockingCode, m: str) -> str:
    """The declarations of row and col at the thread's output m (the places `each` gives)."""
    c, n, half = code.c, code.n, code.size // 2
    (ro, co) = c.offsets
    return (f"int {c.row} = {n['row0']} + {n['ty']} * 4 + ({m}) / 8 % 4 + ({m}) / 32 * {half}{ro}; "
            f"int {c.col} = {n['col0']} + {n['tx']} * 4 + ({m}) % 4 + ({m}) % 8 / 4 * {half}{co};")


def vector_stores(code: BlockingCode, redeclared: list[str], scalar: list[str]) -> list[str]:
    """The one store after the loop, four neighbouring columns of a row at a time as one float4 where a uniform check
    allows it (the place 16-byte aligned at the tile's origin and one row down, one column along is the next float);
    each of the four values computed as the original computes it; else `scalar`."""
    c, n, m, w, vc, p0 = code.c, code.n, code.n["m"], code.n["w"], code.n["vc"], code.n["p0"]
    assert code.stores is not None
    place, value = code.stores
    addr = f"(size_t)&({place})" if code.cl else f"(size_t)(void*)&({place})"
    row0, col0 = n["row0"], n["col0"]
    (ro, co) = c.offsets

    def put(r: str, k: str) -> str:
        return f"int {c.row} = {r}{ro}; int {c.col} = {k}{co};"

    checks = [f"int {vc} = 1;", f"{{ {put(row0, col0)} {vc} = {vc} && ({addr} % 16 == 0); }}",
              f"{{ {put(row0 + ' + 1', col0)} {vc} = {vc} && ({addr} % 16 == 0); }}",
              f"{{ {put(row0, col0)} const size_t {p0} = {addr}; {{ {put(row0, col0 + ' + 1')} {vc} = {vc} && ({addr} == {p0} + 4); }} }}"]
    comps = []
    for q, x in enumerate("xyzw"):
        acc = f"{n['acc']}[{m} + {q}]"
        what = [f"{c.target_decl}{c.target} = {acc};", f"{w}.{x} = {value};"] if value else [f"{w}.{x} = {acc};"]
        comps.append(f"    {{ {_at(code, f'{m} + {q}')} {' '.join(redeclared + what)} }}")
    store = f"vstore4({w}, 0, &({place}));" if code.cl else f"*(float4*)&({place}) = {w};"
    return [*checks, f"if ({vc}) {{", "    #pragma unroll", f"    for (int {m} = 0; {m} < 64; {m} += 4) {{",
            f"        float4 {w};", *("    " + s for s in comps), f"        {{ {_at(code, m)} {store} }}", "    }", "} else {",
            *("    " + s for s in scalar), "}"]
