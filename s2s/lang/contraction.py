"""A contraction read off the kernel model: `ACC op= f(A(row, k), B(k, col))` over a loop, one thread per (row, col).

Whatever the operand layouts (`A[i*K+k]`, `A[k*M+i]`, `a[j*M+k]` for a symmetric update, `a[i][k]`): an operand
is on the row side when its index uses the row variable and k but not the column, and the other way round. The
accumulator is a local or an element of global memory indexed by row and column (`c[i*NJ+j] *= beta; for (k)
c[i*NJ+j] += alpha*a*b`). The kernel body is: the two thread-index declarations (declarations that use no thread
index may stand before and among them), a guard (`if (...) return;`, or `if (...) { ... }` around the rest) bounding
both, or none at all (the launch covers the outputs exactly: `guarded` is False and the bounds are the grid's),
statements before the loop, the loop, statements after it. The loop body is the accumulation, optionally after
declarations that load its operands into locals (`float a = A[m + i*lda]; float b = B[...]; c += a * b;`): each
such local stands for its load. `find_contraction` says why when a kernel is not of this kind.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

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
    guarded: bool = True  # False: no guard, every launched thread computes its output (row_bound/col_bound are "")
    start: int = -1  # the first statement of the body (the declarations before the index ones start there)
    body: tuple[int, int] = (0, 0)  # from the first statement to the end of the last: the original work, as written


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
        if len(decls) != 2 or len(stmts) < 3:
            return f"the kernel must declare {row} and {col} once each, at the top of its body"
        last = stmts.index(decls[-1])
        pre = [s for s in stmts[: last + 1] if s not in decls]
        if any(s.type != "declaration" or THREAD_BUILTIN.search(self.t(s)) or _JUMP.search(self.t(s))
               or idents(self.t(s)) & {row, col} for s in pre):
            return f"only declarations that use no thread index may stand before and among the declarations of {row} and {col}"
        guard = stmts[last + 1] if last + 1 < len(stmts) else None
        g = next((x for x in m.guards if guard is not None and x.start == guard.start_byte), None)
        if (guard is None or guard.type != "if_statement") and m.guards:
            return "needs a guard bounding the row and the column right after their declarations"
        if guard is not None and guard.type == "if_statement" and (g is None or guard.child_by_field_name("alternative") is not None):
            return "needs a guard bounding the row and the column right after their declarations"
        upper = dict(g.upper) if g is not None else {row: Poly.const(0), col: Poly.const(0)}
        if row not in upper or col not in upper or (upper[row].names | upper[col].names) & {row, col}:
            return f"the guard must bound {row} and {col} from above by sizes"
        if guard is None or g is None:  # no guard: the launch covers the outputs exactly
            rest, inside = stmts[last + 1 :], ""
        elif g.kind == "return":
            rest, inside = stmts[last + 2 :], f"!({g.condition.strip()})"
        else:
            cons = guard.child_by_field_name("consequence")
            rest = [c for c in cons.named_children if c.type != "comment"] if cons is not None and cons.type == "compound_statement" else []
            inside = g.condition.strip()
            if len(stmts) != last + 2:
                return "nothing may follow the guarded block"
        if not rest:
            return "needs a loop after the declarations"
        loops = [i for i, s in enumerate(rest) if s.type == "for_statement"]
        if len(loops) != 1 or len(m.loops) != 1:
            return "needs exactly one loop, a for loop, after the guard"
        loop, lp = rest[loops[0]], m.loops[0]
        before, after = pre + rest[: loops[0]], rest[loops[0] + 1 :]
        for s in before + after:
            if _JUMP.search(self.t(s)) or THREAD_BUILTIN.search(self.t(s)) or s.type not in {"declaration", "expression_statement"}:
                return "the statements around the loop must be declarations or expressions without jumps or thread indices"
        if lp.step != 1 or lp.lower is None or lp.upper is None or (lp.lower.names | lp.upper.names) & {row, col, lp.var} \
                or lp.lower.names & set(maps):
            return f"the loop must count {lp.var} up by one between bounds every thread shares (not a triangular range)"
        got = _accumulation(loop, self.data, self.m)
        if isinstance(got, str):
            return got
        stmt, loads = got
        red = next((r for r in m.reductions if stmt is not None and r.start >= stmt.start_byte and r.end <= stmt.end_byte), None)
        if stmt is None or red is None or red.over != lp.var:
            return f"the loop body must be one accumulation over {lp.var} (ACC += ...)"
        off = {x: "" if maps[x].offset.is_zero else f" + ({maps[x].offset.text()})" for x in (row, col)}
        found = self._operands(row, col, lp.var, stmt, red.target, self._locals(), before, after, inside, upper, decls,
                               guard if g is not None else None, rest, g is not None and g.kind == "return",
                               (lp.lower.text(), lp.upper.text()), (off[row], off[col]), loads)
        if isinstance(found, str):
            return found
        first = stmts[0].start_byte
        return replace(found, guarded=g is not None, start=first, body=(first, stmts[-1].end_byte),
                       row_bound=found.row_bound if g is not None else "", col_bound=found.col_bound if g is not None else "")

    def _operands(self, row: str, col: str, k: str, stmt: Node, target: str, locals_: set[str], before: list[Node],
                  after: list[Node], inside: str, upper: dict[str, Poly], decls: list[Node], guard: Node | None, rest: list[Node],
                  ret: bool, bounds: tuple[str, str], offsets: tuple[str, str],
                  loads: dict[str, tuple[ArrayAccess, tuple[tuple[int, int], ...]]]) -> Contraction | str:
        inner = [a for a in self.m.accesses if stmt.start_byte <= a.start and a.end <= stmt.end_byte]
        # an operand loaded into a local first stands wherever the local does in the accumulation
        inner += [replace(acc, start=s0, end=e0) for acc, places in loads.values() for s0, e0 in places]
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
            tuple((d.start_byte, d.end_byte) for d in decls),
            (guard.start_byte, rest[-1].end_byte if ret else guard.end_byte) if guard is not None else (rest[0].start_byte, rest[-1].end_byte),
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


def _accumulation(loop: Node, data: bytes, m: KernelModel) -> tuple[Node, dict[str, tuple[ArrayAccess, tuple[tuple[int, int], ...]]]] | str:
    """The loop body's accumulation statement, and the operands it loads into locals first: name -> (load, places in it)."""
    body = loop.child_by_field_name("body")
    items = [body] if body is not None else []
    while len(items) == 1 and items[0].type == "compound_statement":
        items = [c for c in items[0].named_children if c.type != "comment"]
    if not items or items[-1].type != "expression_statement":
        return f"the loop body must be one accumulation over {m.loops[0].var} (ACC += ...)"
    stmt, loads = items[-1], {}
    elem = {n: t for n, t, _ in m.params}
    for d in items[:-1]:
        inits = [c for c in d.named_children if c.type == "init_declarator"]
        name = inits[0].child_by_field_name("declarator") if len(inits) == 1 else None
        value = inits[0].child_by_field_name("value") if len(inits) == 1 else None
        load = next((a for a in m.accesses if value is not None and (a.start, a.end) == (value.start_byte, value.end_byte)), None)
        if d.type != "declaration" or name is None or name.type != "identifier" or load is None or load.write:
            return "before the accumulation, the loop body may only load operands into locals (float a = A[..];)"
        ty_node = d.child_by_field_name("type")
        ty = src(data, ty_node).strip() if ty_node is not None else ""
        if ty != elem.get(load.array) or len(d.named_children) != 2:
            return "an operand loaded into a local must keep its element type (float a = A[..] for a float A)"
        loads[src(data, name)] = (load, tuple((stmt.start_byte + x.start(), stmt.start_byte + x.end())
                                              for x in re.finditer(rf"\b{re.escape(src(data, name))}\b", src(data, stmt))))
    return stmt, loads


def _k_fast(a: ArrayAccess, k: str) -> bool:
    """Whether k is the unit-stride index of the operand (from its last subscript's affine form)."""
    last = a.index[-1]
    return last is not None and last.coeff(k).constant() == 1


def _indent(data: bytes, at: int) -> str:
    line = data.rfind(b"\n", 0, at) + 1
    m = re.match(rb"[ \t]*", data[line:at])
    return m.group(0).decode() if m else ""
