"""allpairs-bodies{skip=...}: the pair body's `if (j == i) continue;` without a branch.

select: every sum `a -= e;` becomes `a -= (j == i) ? 0.0f : (e);` (e is computed and dropped on the skipped pair: the
same sums bit for bit, whatever e is there). subtract: the test goes, the loop adds the j == i term too, and after the
loop (after allpairs-lanes' shuffles, where it runs later) the body is evaluated once at j = i, its tiles read from the
arrays they were loaded from, and its sums undone (`a += e` there). That term must be finite (an n-body kernel's
softened 1/r at r = 0): the MEP's check decides; the sums differ in the last bits (the term is added, then removed).
"""
from __future__ import annotations

import re

from tree_sitter import Node

from ..common.tree import indent_of, text

SKIPS = ("branch", "select", "subtract")


def without_skip(source: bytes, pb: Node, j: str, i: str, accs: list[str], skip: str, tiles: dict[str, str],
                 t: str, shared: set[str]) -> tuple[str, list[str]] | str:
    """The pair body's text without its leading `if (j == i) continue;` (each line after a newline, as the body's own
    lines stand) and, for subtract, the statements that undo the j == i term; or why the body does not fit."""
    stmts = [s for s in pb.named_children if s.type != "comment"] if pb.type == "compound_statement" else []
    first = stmts[0] if stmts else None
    cond = first.child_by_field_name("condition") if first is not None and first.type == "if_statement" else None
    cons = first.child_by_field_name("consequence") if first is not None else None
    if first is None or cond is None or first.child_by_field_name("alternative") is not None or \
            not re.fullmatch(rf"\(\s*(?:{j}\s*==\s*{i}|{i}\s*==\s*{j})\s*\)", text(source, cond)) or \
            not re.fullmatch(r"\{?\s*continue\s*;\s*\}?", text(source, cons)) or len(stmts) < 2:
        return f"skip={skip} needs a pair body that begins with `if ({j} == {i}) continue;`"
    kept, undo = [], []
    for s in stmts[1:]:
        st = text(source, s)
        m = re.fullmatch(rf"({'|'.join(map(re.escape, accs))})\s*([+-])=\s*(.+);", st, re.S) if s.type == "expression_statement" else None
        if s.type == "declaration":
            kept.append(st)
            undo.append(st)
        elif m is not None:
            a, op, e = m.groups()
            kept.append(f"{a} {op}= ({j} == {i}) ? 0.0f : ({e});" if skip == "select" else st)
            undo.append(f"{a} {'-' if op == '+' else '+'}= {e};")
        else:
            return f"skip={skip}: after the skip the pair body may only declare locals and add to its sums: {st.splitlines()[0]}"
    if any(re.search(r"\b(continue|break|return|goto)\b", k) for k in kept):
        return f"skip={skip}: a second way out of the pair body"
    pad = indent_of(source, stmts[1].start_byte)
    chunk = "".join(f"\n{pad}{k}" for k in kept)
    if skip == "select":
        return chunk, []
    for tile, array in tiles.items():
        undo = [re.sub(rf"(?<![\w.])(?<!->){tile}\s*\[\s*{j}\s*-\s*{t}\s*\]", f"{array}[{j}]", u) for u in undo]
    for name in shared:
        if any(re.search(rf"(?<![\w.])(?<!->){name}\b", u) for u in undo):
            return (f"skip=subtract: the term reads {name} other than as a tile `{name}[l] = A[{t} + l]` at [{j} - {t}] "
                    "(allpairs-pack goes after allpairs-bodies)")
    return chunk, [f"const int {j} = {i};", *undo]
