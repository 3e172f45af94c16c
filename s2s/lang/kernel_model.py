"""The kernel model: what a kernel computes, by which thread, over which loops, touching memory how.

Built from the tree-sitter tree of one kernel: the thread-to-work mapping (`i = blockIdx.x*blockDim.x+threadIdx.x`,
`get_global_id(0)`), every array access as an affine form of thread indices, loop variables and parameters (or
marked non-affine), the loop nests with trip counts, reductions (`x += ...` over a loop, into a local or global
memory) and guards. From it: per access, coalesced, uniform or strided across a warp; which block dimensions share
it; the arithmetic intensity of the innermost loop; and, against a device, the launch's parallelism.
Plain frozen records with byte offsets into the kernel file; no parser node survives `kernel_model()`.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from tree_sitter import Node

from .affine import AXES, Poly, poly_of
from .cexpr import SIZEOF
from .kernel_facts import find_kernel
from .macros import Expansion, expand, function_macros
from .parsing import parse, src
from .target_device import H200, TargetDevice

_THREAD = tuple(f"threadIdx.{a}" for a in AXES)
_BLOCK = tuple(f"blockIdx.{a}" for a in AXES)
_FLOAT = {"float", "double", "half", "__half"}


@dataclass(frozen=True)
class ThreadMap:
    """`var = blockIdx.axis*blockDim.axis + threadIdx.axis + offset` (kind "global") or `threadIdx.axis + offset` ("local")."""

    var: str
    axis: str
    kind: str
    offset: Poly


@dataclass(frozen=True)
class LoopNest:
    var: str
    lower: Poly | None
    upper: Poly | None  # exclusive
    step: int | None
    depth: int  # 1 = outermost
    parent: int  # index into KernelModel.loops, -1 at the top
    start: int
    end: int

    @property
    def trip(self) -> Poly | None:
        """Iterations in terms of parameters and outer indices (unit step only)."""
        return self.upper - self.lower if self.step == 1 and self.lower is not None and self.upper is not None else None


@dataclass(frozen=True)
class ArrayAccess:
    array: str
    index: tuple[Poly | None, ...]  # one per subscript, over mapped thread variables; None where not affine
    threads: tuple[Poly | None, ...]  # the same with the mapped variables spelled as threadIdx/blockIdx
    text: str
    read: bool
    write: bool
    loops: tuple[str, ...]  # enclosing loop variables, outermost first
    start: int
    end: int
    element_bytes: int
    nest: tuple[int, ...] = ()  # the same loops as indices into KernelModel.loops (names repeat across nests)

    @property
    def affine(self) -> bool:
        return all(p is not None for p in self.index)

    @property
    def flat(self) -> Poly | None:
        """The one-dimensional index (only for a single subscript)."""
        return self.index[0] if len(self.index) == 1 else None

    def depends_on(self, name: str) -> bool:
        """Whether the index uses `name` (a variable, or a builtin such as threadIdx.y through the mapping)."""
        return any(p is None or name in p.names for p in self.index + self.threads)

    @property
    def lane_stride(self) -> Poly | None:
        """Elements between neighbouring lanes of a warp (along threadIdx.x), None when unknown."""
        if not self.affine or any(p is None for p in self.threads):
            return None
        *outer, last = self.threads
        if any(p is not None and p.coeff("threadIdx.x").terms for p in outer):
            return None
        assert last is not None
        return last.coeff("threadIdx.x")

    @property
    def pattern(self) -> str:
        """'uniform' (one address per warp), 'coalesced' (unit stride), 'strided' or 'unknown'."""
        s = self.lane_stride
        if s is None:
            return "unknown" if not self.affine or None in self.threads else "strided"
        return "uniform" if s.is_zero else "coalesced" if s.constant() in {1, -1} else "strided"

    def shared_by(self, axes: tuple[str, ...]) -> tuple[str, ...]:
        """The block dimensions whose threads all touch the same element (reuse across threads)."""
        return tuple(a for a in axes if self.affine and not self.depends_on(f"threadIdx.{a}"))


@dataclass(frozen=True)
class Reduction:
    target: str  # `sum` or `c[i*NJ+j]`
    into: str  # "local" | "global"
    op: str  # "+=", "-=", "= x +"
    over: str  # the loop variable it reduces over
    expr: str  # the added term
    start: int
    end: int


@dataclass(frozen=True)
class Guard:
    condition: str
    kind: str  # "return" (an early exit) or "block" (the guarded statements are the consequence)
    upper: tuple[tuple[str, Poly], ...]  # (var, exclusive upper bound) the guard lets through
    lower: tuple[tuple[str, Poly], ...]  # (var, inclusive lower bound)
    start: int
    end: int


@dataclass(frozen=True)
class KernelModel:
    name: str
    dialect: str
    params: tuple[tuple[str, str, bool], ...]  # (name, base type, pointer)
    mapping: tuple[ThreadMap, ...]
    loops: tuple[LoopNest, ...]
    accesses: tuple[ArrayAccess, ...]
    reductions: tuple[Reduction, ...]
    guards: tuple[Guard, ...]
    flops: int  # floating-point operations per iteration of the deepest loop (the whole body without loops)
    bytes: int  # bytes its global accesses move, without reuse
    values: tuple[tuple[str, Poly], ...] = ()  # affine single-assignment locals (`xx = x + dx`) over mapped variables
    shared: frozenset[str] = frozenset()  # arrays declared in shared memory (`__shared__`, OpenCL `__local`)

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes if self.bytes else 0.0

    @property
    def axes(self) -> tuple[str, ...]:
        return tuple(a for a in AXES if any(m.axis == a for m in self.mapping))

    def var_for(self, axis: str) -> str:
        return next((m.var for m in self.mapping if m.axis == axis and m.kind == "global"), "")

    def loop(self, var: str) -> LoopNest | None:
        return next((lp for lp in self.loops if lp.var == var), None)

    def pointer(self, name: str) -> bool:
        return any(n == name and p for n, _, p in self.params)


@functools.lru_cache(maxsize=32)
def kernel_model(source: bytes, dialect: str, name: str | None = None) -> KernelModel | None:
    """The model of kernel `name` (the first kernel when None) in a kernel file, None when there is none. Made once
    per text (the model is frozen through and through): the passes of a round, the cost model and the sequence
    analyses ask for the same text's model again and again."""
    found = find_kernel(parse(source, dialect).root_node, source, dialect, name)
    if found is None:
        return None
    fn = found[0]
    return _Builder(source, dialect, fn).model()


class _Builder:
    def __init__(self, data: bytes, dialect: str, fn: Node) -> None:
        self.data, self.dialect, self.fn = data, dialect, fn
        self.params = _params(fn, data)
        self.env: dict[str, Poly | None] = {}  # single-assignment locals -> their polynomial (None: not affine)
        self.mapped: dict[str, ThreadMap] = {}  # thread-index locals: kept as names in `index`, expanded in `threads`
        self.expansion: dict[str, Poly] = {}
        self.counts: dict[str, int] = {}  # declarations count 1, assignments 2
        self.assigned: set[str] = set()  # locals assigned after their declaration: never substituted
        self.types: dict[str, str] = {n: t for n, t, _ in self.params}
        self.loops: list[LoopNest] = []
        self.accesses: list[ArrayAccess] = []
        self.reductions: list[Reduction] = []
        self.macros = function_macros(data)
        self.expanded: dict[str, Expansion | None] = {}
        self.guards: list[Guard] = []
        self.deepest: tuple[int, int, int] = (-1, 0, 0)  # (depth, flops, bytes) of the deepest loop body
        self.shared: set[str] = set()

    def model(self) -> KernelModel:
        body = self.fn.child_by_field_name("body")
        assert body is not None
        self._count(body)
        self._walk(body, [])
        mapping = tuple(self.mapped.values())
        flops, nbytes = self.deepest[1:] if self.deepest[0] >= 0 else self._cost(body)
        name = _function_name(self.fn, self.data)
        values = tuple((n, p) for n, p in self.env.items() if p is not None and n not in self.mapped)
        return KernelModel(name, self.dialect, self.params, mapping, tuple(self.loops), tuple(self.accesses),
                           tuple(self.reductions), tuple(self.guards), flops, nbytes, values, frozenset(self.shared))

    # -- names ---------------------------------------------------------------------------------------
    def _count(self, node: Node) -> None:
        for n in _nodes(node):
            if n.type == "init_declarator":
                d = n.child_by_field_name("declarator")
                if d is not None and d.type == "identifier":
                    self.counts[src(self.data, d)] = self.counts.get(src(self.data, d), 0) + 1
                    self.types[src(self.data, d)] = _decl_type(n, self.data)
            elif n.type == "declaration":  # `float acc[4];`, `__shared__ float As[32][33];`: element types of local arrays
                for d in n.children_by_field_name("declarator"):
                    while d is not None and d.type == "array_declarator":
                        d = d.child_by_field_name("declarator")
                    if d is not None and d.type == "identifier":
                        self.types.setdefault(src(self.data, d), src(self.data, n.child_by_field_name("type") or n))
                        if _in_shared(n, self.data):
                            self.shared.add(src(self.data, d))
            elif n.type in {"assignment_expression", "update_expression"}:
                target = n.child_by_field_name("left" if n.type == "assignment_expression" else "argument")
                if target is not None and target.type == "identifier":
                    self.counts[src(self.data, target)] = self.counts.get(src(self.data, target), 0) + 2
                    self.assigned.add(src(self.data, target))

    def _lookup(self, name: str) -> Poly | None:
        return self.env.get(name)

    def _varying(self) -> set[str]:
        """Names that differ between threads or iterations: thread/block indices and loop variables."""
        return {*_THREAD, *_BLOCK, *(lp.var for lp in self.loops)}

    def poly(self, node: Node | None, data: bytes | None = None) -> Poly | None:
        p = poly_of(node, self.data if data is None else data, self._lookup, self._call)
        if p is None:
            return None
        opaque = {n for n in p.names if n in self.counts and self.env.get(n) is None and not any(lp.var == n for lp in self.loops)}
        return None if opaque else p

    # -- the walk ------------------------------------------------------------------------------------
    def _walk(self, node: Node, stack: list[int]) -> None:
        t = node.type
        if t == "init_declarator":
            d = node.child_by_field_name("declarator")
            if d is not None and d.type == "identifier" and src(self.data, d) not in self.assigned:
                # bound at each declaration (a name declared again in another scope takes its new value from there on)
                var, value = src(self.data, d), self.poly(node.child_by_field_name("value"))
                once = self.counts.get(var) == 1
                tm = _thread_map(var, value) if value is not None and not stack and once else None
                if tm is not None and value is not None:
                    self.mapped[var], self.expansion[var] = tm, value
                self.env[var] = Poly.name(var) if tm is not None else value
        elif t == "for_statement":
            self._loop(node, stack)
            stack = stack + [len(self.loops) - 1]
        elif t == "if_statement":
            self._guard(node)
        elif t == "subscript_expression" and not _is_inner_subscript(node):
            self._access(node, stack)
        elif t == "call_expression" and (exp := expand(node, self.data, self.macros, self.expanded)) is not None:
            if exp.node.type == "subscript_expression":  # `AT(k, i)` standing for `A[(k) * M + (i)]`
                self._access(exp.node, stack, exp.data, node)
        elif t == "assignment_expression" and stack:
            self._reduction(node, stack)
        for c in node.named_children:
            if t == "for_statement" and c.type not in {"compound_statement", "expression_statement", "if_statement", "for_statement"}:
                self._walk_header(c, stack)
            else:
                self._walk(c, stack)
        if t == "for_statement" and (len(stack), 0) > (self.deepest[0], 0):
            body = node.child_by_field_name("body")
            if body is not None and not any(c.type == "for_statement" for c in _nodes(body)):
                self.deepest = (len(stack), *self._cost(body))

    def _walk_header(self, node: Node, stack: list[int]) -> None:
        for n in _nodes(node):
            if n.type == "subscript_expression" and not _is_inner_subscript(n):
                self._access(n, stack)

    def _loop(self, node: Node, stack: list[int]) -> None:
        init, cond, upd = (node.child_by_field_name(f) for f in ("initializer", "condition", "update"))
        var, lower = "", None
        if init is not None and init.type == "declaration":
            d = init.child_by_field_name("declarator")
            if d is not None and d.type == "init_declarator":
                var, lower = src(self.data, d.child_by_field_name("declarator") or d), self.poly(d.child_by_field_name("value"))
        elif init is not None and init.type == "assignment_expression":
            var, lower = src(self.data, init.child_by_field_name("left") or init), self.poly(init.child_by_field_name("right"))
        upper = None
        if cond is not None and cond.type == "binary_expression":
            op = src(self.data, cond.child_by_field_name("operator") or cond)
            left, right = cond.child_by_field_name("left"), cond.child_by_field_name("right")
            if left is not None and src(self.data, left) == var and op in {"<", "<="}:
                upper = self.poly(right)
                upper = upper + Poly.const(1) if upper is not None and op == "<=" else upper
            elif right is not None and src(self.data, right) == var and op in {">", ">="}:
                upper = self.poly(left)
                upper = upper + Poly.const(1) if upper is not None and op == ">=" else upper
        self.loops.append(LoopNest(var, lower, upper, _step(upd, var, self.data), len(stack) + 1, stack[-1] if stack else -1,
                                   node.start_byte, node.end_byte))

    def _call(self, node: Node, data: bytes) -> Poly | None:
        exp = expand(node, data, self.macros, self.expanded)
        return self.poly(exp.node, exp.data) if exp is not None else None

    def _access(self, node: Node, stack: list[int], data: bytes | None = None, at: Node | None = None) -> None:
        """An access `node`; from a macro's expansion (in `data`) it stands at the call `at` in the kernel's text."""
        data, at = (self.data, node) if data is None or at is None else (data, at)
        chain: list[Node | None] = []
        cur = node
        while cur.type == "subscript_expression":
            idx = cur.child_by_field_name("indices") or cur.child_by_field_name("index")
            chain.insert(0, idx)
            arg = cur.child_by_field_name("argument")
            if arg is None:
                return
            cur = arg
        while cur.type == "parenthesized_expression" and len(cur.named_children) == 1:  # `(a)[i]` from a macro's `a[i]`
            cur = cur.named_children[0]
        if cur.type != "identifier":
            return
        array = src(data, cur)
        index = tuple(self.poly(_unwrap(i), data) for i in chain)
        threads = tuple(self._expand(p) for p in index)
        node = at
        parent = node.parent
        assigned = parent is not None and parent.type == "assignment_expression" and parent.child_by_field_name("left") == node
        op = src(self.data, parent.child_by_field_name("operator") or parent) if assigned and parent is not None else ""
        write = assigned or (parent is not None and parent.type == "update_expression")
        read = not assigned or op != "="
        size = SIZEOF.get(self.types.get(array, ""), 4)
        self.accesses.append(ArrayAccess(array, index, threads, src(self.data, node), read, write,
                                         tuple(self.loops[i].var for i in stack), node.start_byte, node.end_byte, size, tuple(stack)))

    def _expand(self, p: Poly | None) -> Poly | None:
        """The index over thread builtins: a loop that starts at a thread-dependent value (`for (k = i; ...)`,
        `for (k = rowptr[i]; ...)`) moves its variable with the thread, by that value or unknowably."""
        for lp in reversed(self.loops):
            if p is None or lp.var not in p.names:
                continue
            start = self._expand(lp.lower) if lp.lower is not None else None
            if start is None:
                return None
            if start is not None and start.names & {*_THREAD, *_BLOCK} and p.affine_in({lp.var}):
                p = p.subst(lp.var, Poly.name(lp.var) + start)
        for var, value in self.expansion.items():
            p = p.subst(var, value) if p is not None and p.affine_in({var}) else None
        return p

    def _reduction(self, node: Node, stack: list[int]) -> None:
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        op = src(self.data, node.child_by_field_name("operator") or node)
        if left is None or right is None:
            return
        lhs = src(self.data, left)
        if op in {"+=", "-="}:
            expr = src(self.data, right)
        elif op == "=" and right.type == "binary_expression" and src(self.data, right.child_by_field_name("left") or right) == lhs \
                and src(self.data, right.child_by_field_name("operator") or right) == "+":
            op, expr = "= x +", src(self.data, right.child_by_field_name("right") or right)
        else:
            return
        names = {n.type == "identifier" and src(self.data, n) for n in _nodes(left)}
        over = next((self.loops[i].var for i in reversed(stack) if self.loops[i].var not in names), "")
        if left.type == "identifier" and over:
            self.reductions.append(Reduction(lhs, "local", op, over, expr, node.start_byte, node.end_byte))
        elif left.type in {"subscript_expression", "call_expression"} and over:
            data, base = self.data, left
            if left.type == "call_expression":  # CM(i, j) += ...: the array behind the macro
                exp = expand(left, self.data, self.macros, self.expanded)
                data, base = (exp.data, exp.node) if exp is not None else (self.data, left)
            while base.type == "subscript_expression":
                base = base.child_by_field_name("argument") or base
            if base.type == "identifier" and any(n == src(data, base) and p for n, _, p in self.params):
                self.reductions.append(Reduction(lhs, "global", op, over, expr, node.start_byte, node.end_byte))

    def _guard(self, node: Node) -> None:
        cond = node.child_by_field_name("condition")
        cons = node.child_by_field_name("consequence")
        if cond is None or cons is None:
            return
        returns = cons.type == "return_statement" or (cons.type == "compound_statement" and
                                                     [c.type for c in cons.named_children] == ["return_statement"])
        value = cond.named_children[-1] if cond.named_children else cond
        upper: list[tuple[str, Poly]] = []
        lower: list[tuple[str, Poly]] = []
        for term in _split(value, "||" if returns else "&&", self.data):
            self._bound(term, returns, upper, lower)
        if upper or lower:
            self.guards.append(Guard(src(self.data, value), "return" if returns else "block", tuple(upper), tuple(lower),
                                     node.start_byte, node.end_byte))

    def _bound(self, term: Node, negated: bool, upper: list[tuple[str, Poly]], lower: list[tuple[str, Poly]]) -> None:
        if term.type != "binary_expression":
            return
        op = src(self.data, term.child_by_field_name("operator") or term)
        left, right = term.child_by_field_name("left"), term.child_by_field_name("right")
        if left is None or right is None:
            return
        if left.type != "identifier" and right.type == "identifier":  # N > i as i < N
            left, right, op = right, left, {"<": ">", ">": "<", "<=": ">=", ">=": "<="}.get(op, op)
        if negated:  # the exit condition `i >= N` lets `i < N` through
            op = {"<": ">=", ">=": "<", ">": "<=", "<=": ">"}.get(op, "")
        bound = self.poly(right)
        if left.type != "identifier" or bound is None:
            return
        var, one = src(self.data, left), Poly.const(1)
        if op in {"<", "<="}:
            upper.append((var, bound + one if op == "<=" else bound))
        elif op in {">", ">="}:
            lower.append((var, bound + one if op == ">" else bound))

    def _cost(self, body: Node) -> tuple[int, int]:
        flops = 0
        for n in _nodes(body):
            if n.type == "binary_expression" and src(self.data, n.child_by_field_name("operator") or n) in "+-*/" \
                    and not _inside_index(n) and self._floating(n):
                flops += 1
            elif n.type == "assignment_expression" and src(self.data, n.child_by_field_name("operator") or n) in {"+=", "-=", "*=", "/="} \
                    and self._floating(n.child_by_field_name("left")):
                flops += 1
        seen = {(a.array, a.text) for a in self.accesses if body.start_byte <= a.start and a.end <= body.end_byte
                and self._pointer(a.array)}
        return flops, sum(SIZEOF.get(self.types.get(a, ""), 4) for a, _ in seen)

    def _pointer(self, name: str) -> bool:
        return any(n == name and p for n, _, p in self.params)

    def _floating(self, node: Node | None) -> bool:
        """Whether an expression involves a floating-point value (a float literal, local, parameter or element)."""
        for n in _nodes(node) if node is not None else ():
            if n.type == "number_literal" and any(ch in src(self.data, n) for ch in ".eEfF") and "x" not in src(self.data, n):
                return True
            if n.type == "identifier" and self.types.get(src(self.data, n), "") in _FLOAT:
                return True
        return False


def _thread_map(var: str, p: Poly) -> ThreadMap | None:
    for axis in AXES:
        tid, bid, bdim = f"threadIdx.{axis}", f"blockIdx.{axis}", f"blockDim.{axis}"
        if p.coeff(tid) != Poly.const(1):
            continue
        rest = p - Poly.name(tid)
        glob = rest.coeff(bid) == Poly.name(bdim)
        offset = rest - Poly.name(bid) * Poly.name(bdim) if glob else rest
        if offset.names & {*_THREAD, *_BLOCK}:
            return None
        return ThreadMap(var, axis, "global" if glob else "local", offset)
    return None


_SHARED = re.compile(rb"(?:^|[^\w])(?:__shared__|__local|local)\s")


def _in_shared(decl: Node, data: bytes) -> bool:
    """Whether a declaration is in shared memory: a `__shared__` qualifier, or OpenCL's `__local`/`local` (blanked
    before parsing, so read from the text on its line before the type)."""
    if any(c.type == "type_qualifier" and src(data, c) == "__shared__" for c in decl.children):
        return True
    before = re.split(rb"[;{}]", data[data.rfind(b"\n", 0, decl.start_byte) + 1:decl.start_byte])[-1]
    return bool(_SHARED.search(before + data[decl.start_byte:decl.end_byte].split(b"[", 1)[0]))


def _nodes(node: Node) -> list[Node]:
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(reversed(n.named_children))
    return out


def _unwrap(idx: Node | None) -> Node | None:
    if idx is not None and idx.type == "subscript_argument_list":
        inner = [c for c in idx.named_children if c.type != "comment"]
        return inner[0] if len(inner) == 1 else None
    return idx


def _is_inner_subscript(node: Node) -> bool:
    p = node.parent
    return p is not None and p.type == "subscript_expression" and p.child_by_field_name("argument") == node


def _inside_index(node: Node) -> bool:
    p = node.parent
    while p is not None and p.type not in {"expression_statement", "declaration", "compound_statement"}:
        if p.type == "subscript_argument_list":
            return True
        p = p.parent
    return False


def _split(node: Node, op: str, data: bytes) -> list[Node]:
    while node.type == "parenthesized_expression" and len(node.named_children) == 1:
        node = node.named_children[0]
    if node.type == "binary_expression" and src(data, node.child_by_field_name("operator") or node) == op:
        return _split(node.child_by_field_name("left") or node, op, data) + _split(node.child_by_field_name("right") or node, op, data)
    return [node]


def _step(upd: Node | None, var: str, data: bytes) -> int | None:
    if upd is None:
        return None
    text = src(data, upd).replace(" ", "")
    if text in {f"++{var}", f"{var}++"}:
        return 1
    if text.startswith(f"{var}+=") and text[len(var) + 2:].isdigit():
        return int(text[len(var) + 2:])
    return None


def _decl_type(init: Node, data: bytes) -> str:
    decl = init.parent
    ty = decl.child_by_field_name("type") if decl is not None else None
    return src(data, ty) if ty is not None else ""


def _params(fn: Node, data: bytes) -> tuple[tuple[str, str, bool], ...]:
    d = fn.child_by_field_name("declarator")
    while d is not None and d.type != "function_declarator":
        d = d.child_by_field_name("declarator")
    plist = d.child_by_field_name("parameters") if d is not None else None
    out = []
    for p in plist.named_children if plist is not None else ():
        if p.type != "parameter_declaration":
            continue
        ty, decl = p.child_by_field_name("type"), p.child_by_field_name("declarator")
        pointer = False
        while decl is not None and decl.type in {"pointer_declarator", "array_declarator", "abstract_pointer_declarator"}:
            pointer, decl = True, decl.child_by_field_name("declarator")
        if decl is not None and ty is not None:
            out.append((src(data, decl), src(data, ty), pointer))
    return tuple(out)


def _function_name(fn: Node, data: bytes) -> str:
    d = fn.child_by_field_name("declarator")
    while d is not None and d.type != "function_declarator":
        d = d.child_by_field_name("declarator")
    inner = d.child_by_field_name("declarator") if d is not None else None
    return src(data, inner).split("::")[-1] if inner is not None else ""


SM_SPREAD = 0.16  # how much an underfilled launch gains from spreading its warps over more SMs (see `parallelism`)


@dataclass(frozen=True)
class Parallelism:
    threads: int
    blocks: int
    resident: int  # threads the device holds at once with this block size
    fill: float  # the share of the device the launch keeps busy: occupancy x sm_fill ** SM_SPREAD; below ~0.5 it underfills
    occupancy: float = 1.0  # threads resident at once / the device's thread slots
    sm_fill: float = 1.0  # the share of the SMs that get at least one block

    @property
    def underfilled(self) -> bool:
        return self.fill < 0.5


def parallelism(grid: tuple[int, int, int], block: tuple[int, int, int], device: TargetDevice = H200) -> Parallelism:
    """The launch (grid in blocks, block in threads) against the device: how much of it the launch can keep busy.

    occupancy: the threads resident at once over the device's thread slots; a block too small to reach the SM's thread
    limit under its block limit (32 threads: 32 blocks x 32 = 1024 of 2048) holds fewer, whatever the launch's size.
    sm_fill: min(blocks, SMs) / SMs. An underfilled launch is latency-bound, and an SM without a block lends it none of
    its issue slots, L1 or memory pipeline: the same warps spread over more SMs run faster. The gain is weak, not
    proportional (fill = occupancy x sm_fill ** SM_SPREAD): on the H200, trsm_cols's 8192 threads as 64 blocks of 128
    ran 1.25x faster than as 16 blocks of 512 (4181 µs vs 0.80x), which is (64/16) ** 0.16. A launch with a block on
    every SM keeps fill = occupancy."""
    per_block = block[0] * block[1] * block[2]
    blocks = grid[0] * grid[1] * grid[2]
    per_sm = min(device.blocks_per_sm, device.threads_per_sm // max(per_block, 1)) * per_block
    resident = device.sms * max(per_sm, 1)
    threads = blocks * per_block
    occupancy = min(1.0, min(threads, resident) / (device.sms * device.threads_per_sm))
    sm_fill = min(blocks, device.sms) / device.sms
    return Parallelism(threads, blocks, resident, occupancy * sm_fill ** SM_SPREAD, occupancy, sm_fill)


def model_and_body(source: bytes, dialect: str, name: str | None = None) -> tuple[KernelModel, Node] | None:
    """The kernel's model and the tree-sitter node of its body, for the finders that read both (contraction, reduction)."""
    model = kernel_model(source, dialect, name)
    found = find_kernel(parse(source, dialect).root_node, source, dialect, name)
    if model is None or found is None:
        return None
    body = found[0].child_by_field_name("body")
    return (model, body) if body is not None else None
