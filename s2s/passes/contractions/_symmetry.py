"""What contraction-triangle reads off a contraction: which side of the diagonal its guard keeps, whether its product
is symmetric (the same element of one array on both sides, the row and column exchanged), fresh names."""
from __future__ import annotations

from tree_sitter import Node

from s2s.lang.affine import Poly
from s2s.lang.contraction import Contraction, Operand
from s2s.lang.kernel_facts import KernelFacts
from s2s.lang.kernel_model import ArrayAccess, Guard, KernelModel
from s2s.lang.parsing import parse, src

from ..common.tree import fresh


def fresh_names(taken: dict[str, str], source: bytes, facts: KernelFacts, want: str) -> str:
    name, i = fresh(facts, source, want), 1
    while name in taken.values():
        name, i = fresh(facts, source, f"{want}{i}"), i + 1
    return name


def triangle(g: Guard, row: str, col: str) -> str:
    """"lower" when the guard lets through only col <= row + d (d <= 0), "upper" for row <= col + d, else ""."""
    found = set()
    for var, bound in g.upper:  # var < bound (exclusive)
        for a, b, side in ((col, row, "lower"), (row, col, "upper")):
            e = (bound - Poly.name(b)).constant()
            if var == a and e is not None and e <= 1:
                found.add(side)
    for var, bound in g.lower:  # var >= bound
        for a, b, side in ((row, col, "lower"), (col, row, "upper")):
            e = (bound - Poly.name(b)).constant()
            if var == a and e is not None and e >= 0:
                found.add(side)
    return found.pop() if len(found) == 1 else ""


def _swap(p: Poly | None, row: str, col: str) -> Poly | None:
    if p is None:
        return None
    hold = Poly.name("__s2s_swap")
    return p.subst(row, hold).subst(col, Poly.name(row)).subst("__s2s_swap", Poly.name(col))


def symmetric(source: bytes, facts: KernelFacts, model: KernelModel, g: Guard, c: Contraction) -> str:
    """Why the contraction is not a symmetric product over a square guard, "" when it is."""
    row, col = c.row, c.col
    bounds = [(v, b) for v, b in g.upper] + [(v, b) for v, b in g.lower]
    swapped = {(("u" if i < len(g.upper) else "l"), {row: col, col: row}.get(v, v), _swap(b, row, col)) for i, (v, b) in enumerate(bounds)}
    own = {(("u" if i < len(g.upper) else "l"), v, b) for i, (v, b) in enumerate(bounds)}
    terms = g.condition.count("&&") + g.condition.count("||") + 1
    if swapped != own or terms != len(bounds):
        return f"the guard ({g.condition.strip()}) does not bound {row} and {col} alike"
    products = _products(source, facts, c)
    if products is None:
        return "the accumulated term must be a sum of products of one row-side and one column-side operand each"
    keys, mirrored = [], []
    for (ao, bo), rest in products:
        a, b = _access(model, ao.text, ao.array), _access(model, bo.text, bo.array)
        if a is None or b is None:
            return f"{ao.text} * {bo.text} is not the same product with {row} and {col} exchanged"
        keys.append((a.array, a.index, b.array, b.index, rest))
        mirrored.append((b.array, tuple(_swap(x, row, col) for x in b.index), a.array, tuple(_swap(x, row, col) for x in a.index), rest))
    if sorted(map(repr, keys)) != sorted(map(repr, mirrored)):
        (ao, bo), _ = products[next(i for i, k in enumerate(mirrored) if k not in keys)]
        return f"{ao.text} * {bo.text} is not the same product with {row} and {col} exchanged"
    written = {x.array for x in model.accesses if x.write}
    if any(o.array in written for o in (*c.a, *c.b)):
        return f"{next(o.array for o in (*c.a, *c.b) if o.array in written)} is written by the kernel"
    out = [x for x in model.accesses if x.array in written]
    if any(not x.affine or x.index != out[0].index for x in out):
        return "the kernel reads or writes its output at more than the output element"
    red = next((r for r in model.reductions if c.statement[0] <= r.start and r.end <= c.statement[1]), None)
    if red is None or red.op != "+=":
        return "the accumulation must be ACC += term"
    return ""


def _access(model: KernelModel, text: str, array: str) -> ArrayAccess | None:
    key = text.replace(" ", "")
    return next((x for x in model.accesses if x.array == array and x.text.replace(" ", "") == key), None)


def _products(source: bytes, facts: KernelFacts, c: Contraction) -> list[tuple[tuple[Operand, Operand], str]] | None:
    """The statement's right-hand side as a sum of products, each (its row-side and column-side operand, the text of
    its other factors sorted); None unless every term is a chain of `*` holding one place of each side."""
    root = parse(source, facts.dialect).root_node
    stmt = root.descendant_for_byte_range(*c.statement)
    while stmt is not None and stmt.type != "assignment_expression":
        stmt = stmt.named_children[0] if stmt.named_children else None
    right = stmt.child_by_field_name("right") if stmt is not None else None
    if right is None:
        return None
    side = {sp: (0, o) for o in c.a for sp in o.spans} | {sp: (1, o) for o in c.b for sp in o.spans}
    out = []
    for term in _chain(source, right, "+"):
        factors = _chain(source, term, "*")
        ops = [side[(f.start_byte, f.end_byte)] for f in factors if (f.start_byte, f.end_byte) in side]
        if sorted(k for k, _ in ops) != [0, 1]:
            return None
        rest = " ".join(sorted(src(source, f).replace(" ", "") for f in factors if (f.start_byte, f.end_byte) not in side))
        out.append(((ops[0][1], ops[1][1]) if ops[0][0] == 0 else (ops[1][1], ops[0][1]), rest))
    return out if len(out) == len({sp for o in (*c.a, *c.b) for sp in o.spans}) // 2 else None


def _chain(source: bytes, node: Node, op: str) -> list[Node]:
    """The operands of a chain of `op` (through parentheses), left to right."""
    while node.type == "parenthesized_expression" and node.named_children:
        node = node.named_children[0]
    if node.type == "binary_expression" and src(source, node.child_by_field_name("operator") or node) == op:
        return [x for side in ("left", "right") if (n := node.child_by_field_name(side)) is not None for x in _chain(source, n, op)]
    return [node]
