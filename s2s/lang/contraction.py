"""A contraction read off the kernel model: `ACC op= f(A(row, k), B(k, col))` over a loop, one thread per (row, col).

Whatever the operand layouts (`A[i*K+k]`, `A[k*M+i]`, `a[j*M+k]` for a symmetric update, `a[i][k]`): an operand
is on the row side when its index uses the row variable and k but not the column, and the other way round. The
accumulator is a local or an element of global memory indexed by row and column (`c[i*NJ+j] *= beta; for (k)
c[i*NJ+j] += alpha*a*b`). The kernel body is: the two thread-index declarations, a guard (`if (...) return;`, or
`if (...) { ... }` around the rest) bounding both, statements before the loop, the loop, statements after it.
`find_contraction` says why when a kernel is not of this kind.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from .affine import Poly
from .kernel_facts import THREAD_BUILTIN, idents
from .kernel_model import ArrayAccess, KernelModel, model_and_body
from .parsing import src

_JUMP = re.compile(r"\b(return|break|continue|goto|__syncthreads|barrier)\b")


@dataclass(frozen=True)
class Operand:
    text: str  # `a[i * M + k]`, as written
    array: str
    k_fast: bool  # neighbouring k are neighbouring elements (else the row or column index is the unit-stride one)
    spans: tuple[tuple[int, int], ...]  # where it stands in the accumulation statement (byte offsets in the file)


@dataclass(frozen=True)
class Contraction:
    row: str  # the thread variable along y
    col: str  # along x
    k: str
    lower: str  # the k loop's bounds (C text, the same for every thread)
    upper: str
    row_bound: str  # exclusive upper bounds the guard puts on row and col
    col_bound: str
    offsets: tuple[str, str]  # the mapping's constant offsets of row and col (" + 1"), "" for none
    inside: str  # the guard's condition for a thread that computes (C text)
    a: tuple[Operand, ...]  # the row side: each distinct operand once (`B2(i, k)`, `A2(i, k)` in a rank-2k update)
    b: tuple[Operand, ...]  # the column side
    target: str  # the accumulator: `sum` or `c[i * N + j]`
    target_decl: str  # "float " when the accumulator is a local declared before the loop, else ""
    target_array: str  # the array behind a global accumulator (`c` for `CM(i, j)`), "" for a local
    statement: tuple[int, int]  # the accumulation statement
    target_spans: tuple[tuple[int, int], ...]
    mapping: tuple[tuple[int, int], ...]  # the thread-index declarations
    rest: tuple[int, int]  # from the guard to the end of the body's last statement
    before: tuple[tuple[int, int, bool], ...]  # statements before the loop (start, end, is a declaration)
    after: tuple[tuple[int, int], ...]
    indent: str


def find_contraction(source: bytes, dialect: str, name: str | None = None) -> Contraction | str:
    got = model_and_body(source, dialect, name)
    if got is None:
        return "no kernel found"
    model, body = got
    return _Finder(source, model, body).find()


class _Finder:
    def __init__(self, data: bytes, model: KernelModel, body: Node) -> None:
        self.data, self.m, self.body = data, model, body

    def t(self, node: Node | None) -> str:
        return src(self.data, node) if node is not None else ""

    def find(self) -> Contraction | str:
        m = self.m
        row, col = m.var_for("y"), m.var_for("x")
        maps = {t.var: t for t in m.mapping}
        if not row or not col or "z" in m.axes:
            return "needs a 2-D thread mapping (col from x, row from y)"
        stmts = [c for c in self.body.named_children if c.type != "comment"]
        decls = [s for s in stmts if s.type == "declaration" and idents(self.t(s)) & {row, col} and THREAD_BUILTIN.search(self.t(s))]
        if stmts[: len(decls)] != decls or len(decls) != 2 or len(stmts) < 3:
            return f"the kernel must begin with the declarations of {row} and {col} alone"
        guard = stmts[2]
        g = next((x for x in m.guards if x.start == guard.start_byte), None)
        if guard.type != "if_statement" or g is None or guard.child_by_field_name("alternative") is not None:
            return "needs a guard bounding the row and the column right after their declarations"
        upper = dict(g.upper)
        if row not in upper or col not in upper or (upper[row].names | upper[col].names) & {row, col}:
            return f"the guard must bound {row} and {col} from above by sizes"
        if g.kind == "return":
            rest, inside = stmts[3:], f"!({g.condition.strip()})"
        else:
            cons = guard.child_by_field_name("consequence")
            rest = [c for c in cons.named_children if c.type != "comment"] if cons is not None and cons.type == "compound_statement" else []
            inside = g.condition.strip()
            if len(stmts) != 3:
                return "nothing may follow the guarded block"
        loops = [i for i, s in enumerate(rest) if s.type == "for_statement"]
        if len(loops) != 1 or len(m.loops) != 1:
            return "needs exactly one loop, a for loop, after the guard"
        loop, lp = rest[loops[0]], m.loops[0]
        before, after = rest[: loops[0]], rest[loops[0] + 1 :]
        for s in before + after:
            if _JUMP.search(self.t(s)) or THREAD_BUILTIN.search(self.t(s)) or s.type not in {"declaration", "expression_statement"}:
                return "the statements around the loop must be declarations or expressions without jumps or thread indices"
        if lp.step != 1 or lp.lower is None or lp.upper is None or (lp.lower.names | lp.upper.names) & {row, col, lp.var} \
                or lp.lower.names & set(maps):
            return f"the loop must count {lp.var} up by one between bounds every thread shares (not a triangular range)"
        stmt = _single(loop)
        red = next((r for r in m.reductions if stmt is not None and r.start >= stmt.start_byte and r.end <= stmt.end_byte), None)
        if stmt is None or red is None or red.over != lp.var:
            return f"the loop body must be one accumulation over {lp.var} (ACC += ...)"
        off = {x: "" if maps[x].offset.is_zero else f" + ({maps[x].offset.text()})" for x in (row, col)}
        return self._operands(row, col, lp.var, stmt, red.target, self._locals(), before, after, inside, upper, decls,
                              guard, rest, g.kind == "return", (lp.lower.text(), lp.upper.text()), (off[row], off[col]))

    def _operands(self, row: str, col: str, k: str, stmt: Node, target: str, locals_: set[str], before: list[Node],
                  after: list[Node], inside: str, upper: dict[str, Poly], decls: list[Node], guard: Node, rest: list[Node],
                  ret: bool, bounds: tuple[str, str], offsets: tuple[str, str]) -> Contraction | str:
        inner = [a for a in self.m.accesses if stmt.start_byte <= a.start and a.end <= stmt.end_byte]
        tgt = [a for a in inner if a.text.replace(" ", "") == target.replace(" ", "")]
        sides: dict[str, list[ArrayAccess]] = {"a": [], "b": []}
        for a in inner:
            if a in tgt:
                continue
            uses = {v for v in (row, col, k) if a.depends_on(v)}
            if not a.affine or uses not in ({row, k}, {col, k}) or not self.m.pointer(a.array):
                return f"{a.text} is not an operand A(row, k) or B(k, col)"
            sides["a" if row in uses else "b"].append(a)
        if not sides["a"] or not sides["b"] or any(len({a.text.replace(" ", "") for a in s}) > 4 for s in sides.values()):
            return "needs one to four row-side and column-side operands each"
        spans = [(a.start, a.end) for s in sides.values() for a in s] + [(a.start, a.end) for a in tgt]
        rest_text = "".join(c for i, c in enumerate(self.data[stmt.start_byte:stmt.end_byte].decode())
                            if not any(s <= stmt.start_byte + i < e for s, e in spans))
        free = idents(rest_text) - {target}
        if k in free or free & locals_ or any(idents(a.text) & (locals_ - {row, col, k}) for s in sides.values() for a in s):
            return f"the accumulated term may use {k} and locals only inside its two operands"
        target_decl = ""
        if not tgt:
            decl = next((s for s in before if s.type == "declaration" and re.fullmatch(rf"[\w\s]+\b{target}\s*=.*;", self.t(s), re.S)), None)
            if "[" in target or decl is None:
                return f"the accumulator {target} must be declared with a value before the loop"
            target_decl = self.t(decl)[: self.t(decl).index(target)]
            tspans = tuple((mm.start() + stmt.start_byte, mm.end() + stmt.start_byte)
                           for mm in re.finditer(rf"\b{target}\b", self.t(stmt)))
        else:
            declared = {x for s in before if s.type == "declaration" for x in idents(self.t(s).split("=")[0])}
            if tgt[0].depends_on(k) or idents(target) & (locals_ - {row, col} - declared):
                return "the accumulator's index must use only the row, the column and sizes"
            tspans = tuple((a.start, a.end) for a in tgt)
        return Contraction(
            row, col, k, bounds[0], bounds[1], upper[row].text(), upper[col].text(), offsets, inside,
            _group(sides["a"], k), _group(sides["b"], k),
            target, target_decl, tgt[0].array if tgt else "", (stmt.start_byte, stmt.end_byte), tspans,
            tuple((d.start_byte, d.end_byte) for d in decls), (guard.start_byte, rest[-1].end_byte if ret else guard.end_byte),
            tuple((s.start_byte, s.end_byte, s.type == "declaration") for s in before), tuple((s.start_byte, s.end_byte) for s in after),
            _indent(self.data, decls[0].start_byte))

    def _locals(self) -> set[str]:
        out = set()
        stack = [self.body]
        while stack:
            n = stack.pop()
            if n.type == "init_declarator" or (n.type == "declaration" and n.child_by_field_name("declarator") is not None):
                d = n.child_by_field_name("declarator")
                if d is not None and d.type == "identifier":
                    out.add(self.t(d))
            stack.extend(n.named_children)
        return out


def _group(side: list[ArrayAccess], k: str) -> tuple[Operand, ...]:
    """The side's distinct operands (by text), each with every place it stands."""
    keys: dict[str, list[ArrayAccess]] = {}
    for a in side:
        keys.setdefault(a.text.replace(" ", ""), []).append(a)
    return tuple(Operand(g[0].text, g[0].array, _k_fast(g[0], k), tuple((x.start, x.end) for x in g)) for g in keys.values())


def _single(loop: Node) -> Node | None:
    body = loop.child_by_field_name("body")
    while body is not None and body.type == "compound_statement":
        items = [c for c in body.named_children if c.type != "comment"]
        body = items[0] if len(items) == 1 else None
    return body if body is not None and body.type == "expression_statement" else None


def _k_fast(a: ArrayAccess, k: str) -> bool:
    """Whether k is the unit-stride index of the operand (from its last subscript's affine form)."""
    last = a.index[-1]
    return last is not None and last.coeff(k).constant() == 1


def _indent(data: bytes, at: int) -> str:
    line = data.rfind(b"\n", 0, at) + 1
    m = re.match(rb"[ \t]*", data[line:at])
    return m.group(0).decode() if m else ""
