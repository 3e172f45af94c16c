"""The row walks of a thread-per-row kernel read for warp-rows: one or more loops over the row's elements, one after
another (softmax: max, then sum, then normalize; layer norm: mean, then variance, then scale), each body made of

- reductions into a scalar declared before the loop: sums (`s += e`, `s -= e`, `s = s + e`) and selections (`m = max(m, e)`,
  `fmaxf`, `fminf`, `min`, `m = (m < e) ? e : m`, `if (e > m) m = e;`), under any condition that does not read them;
- stores to the row's elements `out[base + j] op= e`, each element of the loop's variable `j` stored by one iteration
  (the variable one additive term of the index) and read in that loop only at the same index;
- locals declared inside the body, and `continue`.

The lanes of a row split the iterations (lane l takes s + l, s + l + lanes, ...); after a loop every lane holds the whole
reduction (a butterfly of `__shfl_xor_sync` combining with the loop's own update), so the code between and inside later
loops reads it unchanged; a loop that stores is followed by `__syncwarp` so later code may read any element of it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from tree_sitter import Node

from s2s.lang.kernel_facts import idents

from ..common.tree import statements, text, walk
from ._row_scalars import compared, select, strip


@dataclass
class Reduction:
    name: str
    kind: str  # "sum" (combine by +, lanes other than 0 start at 0) or "select" (max / min: combine by the update itself)
    update: Node  # the statement (sum: unused) whose text, with `value` replaced, combines two lanes' values
    value: str  # the element term of a select (`e` of `m = max(m, e)`)


@dataclass
class RowLoop:
    node: Node
    reductions: dict[str, Reduction] = field(default_factory=dict)
    stores: bool = False


def _terms(node: Node) -> list[Node]:
    """The terms of a top-level `+` chain."""
    node = strip(node) or node
    if node.type == "binary_expression" and node.child_by_field_name("operator") is not None \
            and node.child_by_field_name("operator").type == "+":  # type: ignore[union-attr]
        return [*_terms(node.child_by_field_name("left")), *_terms(node.child_by_field_name("right"))]  # type: ignore[arg-type]
    return [node]


def _index(source: bytes, sub: Node) -> Node | None:
    idx = sub.child_by_field_name("indices") or sub.child_by_field_name("index")
    if idx is not None and idx.type == "subscript_argument_list":
        return idx.named_children[0] if len(idx.named_children) == 1 else None
    return idx


def unit_step(source: bytes, sub: Node, var: str) -> bool:
    """Whether the subscript's index is `base + var` (var one additive term of it, alone): consecutive iterations
    touch adjacent elements."""
    idx = _index(source, sub)
    terms = _terms(idx) if idx is not None else []
    hits = [t for t in terms if var in idents(text(source, t))]
    return len(hits) == 1 and hits[0].type == "identifier"


class _Reader:
    def __init__(self, source: bytes, var: str, outer: set[str]) -> None:
        self.source, self.var, self.outer = source, var, outer  # outer: scalars declared outside the loop
        self.loop = RowLoop(node=None)  # type: ignore[arg-type]
        self.locals: set[str] = set()
        self.stores: dict[str, str] = {}  # array -> index text stored at
        self.guards: list[str] = []  # conditions read (must not read a reduction)

    def read(self, node: Node) -> str | None:
        s, t = self.source, node.type
        if t == "compound_statement":
            return next((r for c in statements(node) if (r := self.read(c)) is not None), None)
        if t in {"continue_statement", "comment", "empty_statement"}:
            return None
        if t == "else_clause":
            return next((r for c in node.named_children if (r := self.read(c)) is not None), None)
        if t == "declaration":
            for d in node.children_by_field_name("declarator"):
                name = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
                if name is None or name.type != "identifier":
                    return f"unexpected declaration {text(s, node)!r} in the row loop"
                self.locals.add(text(s, name))
            return None
        if t == "if_statement":
            cond = strip(node.child_by_field_name("condition"))
            cons, alt = node.child_by_field_name("consequence"), node.child_by_field_name("alternative")
            if alt is None and self._ifselect(node, cond, cons) is not None:
                return None
            self.guards.append(text(s, cond))
            why = self.read(cons) if cons is not None else None
            return why if why is not None or alt is None else self.read(alt)
        if t == "expression_statement" and len(node.named_children) == 1:
            return self._expression(node, node.named_children[0])
        return f"{text(s, node).splitlines()[0][:60]!r}: a row loop may hold only reductions, stores to the row, locals and ifs"

    def _ifselect(self, node: Node, cond: Node | None, cons: Node | None) -> str | None:
        """`if (e > m) m = e;` (braces or not): a select of m."""
        body = statements(cons) if cons is not None and cons.type == "compound_statement" else [cons] if cons else []
        if len(body) != 1 or body[0].type != "expression_statement" or not body[0].named_children:
            return None
        a = body[0].named_children[0]
        left, right = a.child_by_field_name("left"), a.child_by_field_name("right")
        if a.type != "assignment_expression" or left is None or right is None or left.type != "identifier" \
                or text(self.source, a.child_by_field_name("operator")) != "=":
            return None
        acc = text(self.source, left)
        value = compared(self.source, acc, cond, {acc, text(self.source, right)})
        if value is None or acc not in self.outer or acc in self.locals:
            return None
        return value if self._note(acc, "select", node, value) is None else None

    def _note(self, acc: str, kind: str, update: Node, value: str) -> str | None:
        had = self.loop.reductions.get(acc)
        if had is not None and (had.kind != kind or kind == "select"):
            return f"{acc} is reduced twice in one loop"
        self.loop.reductions[acc] = Reduction(acc, kind, update, value)
        return None

    def _expression(self, stmt: Node, e: Node) -> str | None:
        s = self.source
        left = e.child_by_field_name("left") if e.type == "assignment_expression" else None
        right = e.child_by_field_name("right") if left is not None else None
        if left is None or right is None:
            if e.type == "call_expression":
                return f"{text(s, e)[:60]!r}: calls in a row loop"
            return f"{text(s, e)[:60]!r}: a row loop may hold only reductions, stores to the row, locals and ifs"
        op = text(s, e.child_by_field_name("operator"))
        if left.type == "identifier":
            name = text(s, left)
            if name in self.locals:
                return None
            if name == self.var or name not in self.outer:
                return f"{name} is assigned in the row loop but declared outside the kernel body's statements"
            if op in {"+=", "-="}:
                return self._note(name, "sum", stmt, "")
            r = strip(right) or right
            if op == "=" and r.type == "binary_expression" and text(s, r.child_by_field_name("operator")) in {"+", "-"} \
                    and text(s, r.child_by_field_name("left")) == name and name not in idents(text(s, r.child_by_field_name("right"))):
                return self._note(name, "sum", stmt, "")
            value = select(s, name, right) if op == "=" else None
            if value is None:
                return f"{text(s, e)[:60]!r} is not a sum or a max / min of {name}"
            return self._note(name, "select", stmt, value)
        if left.type == "subscript_expression":
            idx = _index(s, left)
            if idx is None or not unit_step(s, left, self.var):
                return f"{text(s, left)!r}: a row loop stores only at `base + {self.var}` (one element an iteration)"
            array = text(s, left.child_by_field_name("argument"))
            if self.stores.setdefault(array, text(s, idx)) != text(s, idx):
                return f"{array} is stored at two indices in one row loop"
            self.loop.stores = True
            return None
        return f"{text(s, e)[:60]!r}: stores only to scalars and row elements"


def row_loop(source: bytes, loop: Node, var: str, outer: set[str]) -> RowLoop | str:
    """The reductions and stores of one row loop `for (j = ...; j < n; ++j) body`, or why it is not one."""
    body = loop.child_by_field_name("body")
    if body is None:
        return "empty loop"
    r = _Reader(source, var, outer)
    r.loop.node = loop
    why = r.read(body)
    if why is not None:
        return why
    names = set(r.loop.reductions)
    for g in r.guards:
        if names & idents(g):
            return f"the condition {g!r} reads a reduction of its loop"
    for n in walk(body):  # a reduction read anywhere but its own update
        if n.type == "identifier" and text(source, n) in names:
            red = r.loop.reductions[text(source, n)]
            if not (red.update.start_byte <= n.start_byte < red.update.end_byte):
                return f"{text(source, n)} is read in its loop outside its update"
    for red in r.loop.reductions.values():  # the update mentions the reduction only as its own operand
        own = text(source, red.update)
        if red.kind == "sum" and len(re.findall(rf"\b{re.escape(red.name)}\b", own)) > 2:
            return f"{own!r} reads {red.name} again"
    for n in walk(body):  # a stored array read in its loop only at the stored element
        if n.type == "subscript_expression":
            array = text(source, n.child_by_field_name("argument"))
            idx = _index(source, n)
            if array in r.stores and (idx is None or text(source, idx) != r.stores[array]):
                return f"{array} is stored and read at another element in one row loop"
    return r.loop


def combine(source: bytes, red: Reduction, other: str) -> str:
    """The statement that folds another lane's value `other` into the reduction."""
    if red.kind == "sum":
        return f"{red.name} += {other};"
    update = text(source, red.update)
    out = re.sub(rf"(?<![\w.]){re.escape(red.value)}(?![\w])" if re.fullmatch(r"\w+", red.value) else re.escape(red.value),
                 lambda _: other, update)
    return out if out.rstrip().endswith((";", "}")) else out + ";"
