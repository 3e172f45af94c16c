"""Helpers of triangular-solve-blocking: the memory check on the kernel model, and statement texts renamed and re-indented."""
from __future__ import annotations

from tree_sitter import Node

from s2s.lang.affine import Poly
from s2s.lang.kernel_model import ArrayAccess

from ..common.tree import indent_of, text, walk


def check_memory(accesses: tuple[ArrayAccess, ...], start: int, end: int, inner: tuple[int, int], c: str, i: str, k: str) -> str:
    """"" when the loop at [start, end) writes one array X only at (i, c), reads it at (k, c) in the inner loop and at
    (i, c) outside it, with the column's stride one, and the inner loop reads other arrays without c; else why not.
    X is then the one array `accesses` write."""
    inside = [a for a in accesses if start <= a.start and a.end <= end]
    written = {a.array for a in accesses if a.write}
    if len(written) != 1 or not {a.array for a in inside if a.write}:
        return f"needs exactly one array written, in the row loop (written: {', '.join(sorted(written)) or 'none'})"
    x = next(iter(written))
    pitch: set[tuple[Poly, Poly]] = set()
    for a in inside:
        in_k = inner[0] <= a.start and a.end <= inner[1]
        p = a.flat
        if a.array != x:
            if in_k and a.depends_on(c):
                return f"{a.text}: the inner loop reads {a.array} by column (only the solved {x} may be)"
            continue
        if p is None or not p.affine_in({c, i, k}):
            return f"{a.text}: the index of {x} is not affine in {c}, {i} and {k}"
        if p.coeff(c) != Poly.const(1):
            return f"{a.text}: the column {c} must have stride one (is {p.coeff(c)})"
        r, other = (k, i) if in_k else (i, k)
        if a.write and in_k or not p.coeff(other).is_zero:
            return f"{a.text}: {x} must be read at row {k} inside the inner loop, at row {i} outside it, written at row {i}"
        stride = p.coeff(r)
        if stride.is_zero or stride.names & {c, i, k} or (stride.constant() is not None and stride.constant() < 2):  # type: ignore[operator]
            return f"{a.text}: the row stride of {x} must be a row length"
        pitch.add((stride, p.drop({c, i, k})))
    if len(pitch) != 1:
        return f"{x} is read or written with two different layouts: another column than {c} would be touched"
    return ""


def renamed(source: bytes, node: Node, names: dict[str, str], swaps: tuple[tuple[int, int, str], ...] = ()) -> str:
    """The text of `node` with the identifiers in `names` spelled as it says, and the byte ranges of `swaps` (start, end,
    text) replaced."""
    subs = {n.start_byte: (n.end_byte, names[text(source, n)]) for n in walk(node) if n.type == "identifier" and text(source, n) in names}
    for s, e, repl in swaps:
        subs = {at: v for at, v in subs.items() if not s <= at < e}
        subs[s] = (e, repl)
    out, at = "", node.start_byte
    for s, (e, repl) in sorted(subs.items()):
        out, at = out + source[at:s].decode() + repl, e
    return out + source[at:node.end_byte].decode()


def own_rows(source: bytes, nodes: tuple[Node, Node, Node, Node, Node], i: str, acc: str, i0: str, inside: str,
             store: str, owns: list[str], accs: list[str], step: int, ity: str, row: str) -> list[str]:
    """Phase one with each thread on len(owns) rows `step` apart (i0 + row + j * step): one loop over k below the block
    whose body sums every row's term, so the solved column's element is loaded once for all of them. A row past the
    end is clamped to i0 (a row that exists; its partial sum is never read). `nodes`: the accumulator's declaration,
    the inner loop, its bound's node, its one statement and the loop's condition; `store` formats (j-th row, acc)."""
    decl, inner, kright, kbody, cond = nodes
    lines = []
    for j, own in enumerate(owns):
        lines += [f"{ity} {own} = {i0} + {row}{f' + {j * step}' if j else ''};", f"if (!({renamed(source, cond, {i: own})}))",
                  f"    {own} = {i0};"]
    terms = [renamed(source, kbody, {i: own, acc: a}) for own, a in zip(owns, accs)]
    ind = indent_of(source, inner.start_byte)
    bare = inner.child_by_field_name("body") == kbody and kbody.prev_sibling is not None
    at = kbody.prev_sibling.end_byte if bare else kbody.start_byte  # type: ignore[union-attr]
    body = (" {\n" + "".join(f"{ind}    {t}\n" for t in terms) + ind + "}") if bare else ("\n" + indent_of(source, kbody.start_byte)).join(terms)
    loop = renamed(source, inner, {}, ((kright.start_byte, kright.end_byte, i0), (at, kbody.end_byte, body)))
    inner_lines = [*(ln for own, a in zip(owns, accs) for ln in block_lines(source, decl, 1, renamed(source, decl, {i: own, acc: a}))),
                   *block_lines(source, inner, 1, loop), *(f"    {store.format(j, a)}" for j, a in enumerate(accs))]
    return [*lines, f"if ({inside}) {{", *inner_lines, "}"]


def block_lines(source: bytes, node: Node, depth: int, body: str | None = None) -> list[str]:
    """The statement's lines (its own text, or `body`) re-indented to `depth` levels below the kernel's statements."""
    own = indent_of(source, node.start_byte)
    lines = (body if body is not None else text(source, node)).split("\n")
    out = ["    " * depth + lines[0]]
    for ln in lines[1:]:
        out.append("    " * depth + (ln[len(own):] if ln.startswith(own) else ln.lstrip()))
    return out
