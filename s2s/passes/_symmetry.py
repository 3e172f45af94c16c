"""What contraction-triangle reads off a contraction: which side of the diagonal its guard keeps, whether its product
is symmetric (the same element of one array on both sides, the row and column exchanged), fresh names."""
from __future__ import annotations

from tree_sitter import Node

from s2s.lang.affine import Poly
from s2s.lang.contraction import Contraction
from s2s.lang.kernel_facts import KernelFacts
from s2s.lang.kernel_model import ArrayAccess, Guard, KernelModel
from s2s.lang.parsing import parse, src

from ._common import fresh


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
    if len(c.a) != 1 or len(c.b) != 1 or c.a[0].array != c.b[0].array:
        return "needs one operand array read on both sides"
    a, b = (_access(model, o.text, o.array) for o in (c.a[0], c.b[0]))
    if a is None or b is None or len(a.index) != len(b.index) or \
            any(_swap(x, row, col) != y for x, y in zip(a.index, b.index, strict=True)):
        return f"{c.a[0].text} and {c.b[0].text} are not the same element with {row} and {col} exchanged"
    written = {x.array for x in model.accesses if x.write}
    if c.a[0].array in written:
        return f"{c.a[0].array} is written by the kernel"
    out = [x for x in model.accesses if x.array in written]
    if any(not x.affine or x.index != out[0].index for x in out):
        return "the kernel reads or writes its output at more than the output element"
    red = next((r for r in model.reductions if c.statement[0] <= r.start and r.end <= c.statement[1]), None)
    if red is None or red.op != "+=":
        return "the accumulation must be ACC += term"
    if not _product_of(source, facts, c):
        return "the accumulated term must be a product of the two operands (and factors that use neither index)"
    return ""


def _access(model: KernelModel, text: str, array: str) -> ArrayAccess | None:
    key = text.replace(" ", "")
    return next((x for x in model.accesses if x.array == array and x.text.replace(" ", "") == key), None)


def _product_of(source: bytes, facts: KernelFacts, c: Contraction) -> bool:
    """The statement's right-hand side is a chain of `*` whose factors include both operands' places."""
    root = parse(source, facts.dialect).root_node
    stmt = root.descendant_for_byte_range(*c.statement)
    while stmt is not None and stmt.type != "assignment_expression":
        stmt = stmt.named_children[0] if stmt.named_children else None
    right = stmt.child_by_field_name("right") if stmt is not None else None
    if right is None:
        return False
    factors: list[Node] = []
    stack = [right]
    while stack:
        node = stack.pop()
        if node.type == "parenthesized_expression" and node.named_children:
            stack.append(node.named_children[0])
        elif node.type == "binary_expression" and src(source, node.child_by_field_name("operator") or node) == "*":
            stack += [x for x in (node.child_by_field_name("left"), node.child_by_field_name("right")) if x is not None]
        else:
            factors.append(node)
    places = {(f.start_byte, f.end_byte) for f in factors}
    ops = [s for o in (*c.a, *c.b) for s in o.spans]
    return len(ops) == 2 and all(s in places for s in ops)
