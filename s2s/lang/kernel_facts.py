"""Facts about one kernel in a kernel file, computed from tree-sitter: what passes decide applicability from.

Everything is plain data with byte offsets into the kernel file; no parser node survives the call.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from s2s.base.errors import UserError

from .access import param_access, reference_params
from .params import make_param
from .parsing import MAX_NESTING, nesting, parse, src
from .target_device import H200, TargetDevice

THREAD_BUILTIN = re.compile(r"\b(threadIdx|blockIdx|blockDim|gridDim)\.([xyz])\b|\b(get_global_id|get_local_id|get_group_id)\s*\(\s*([012])\s*\)")
_AXES = {"0": "x", "1": "y", "2": "z", "x": "x", "y": "y", "z": "z"}
_IDENT = re.compile(r"\b[A-Za-z_]\w*\b")
_ATOMIC = re.compile(r"^(atomic\w*|atom_\w*)$")
LOOPS = {"for_statement", "while_statement", "do_statement"}


@dataclass(frozen=True)
class ParamFact:
    name: str
    type: str
    base_type: str
    pointer: bool
    const: bool
    restrict: bool
    read: bool
    written: bool
    start: int  # the parameter_declaration node (after any blanked OpenCL address space)
    end: int
    star_end: int  # just past the last `*` of a pointer declarator, -1 if none


@dataclass(frozen=True)
class Loop:
    kind: str  # for_statement | while_statement | do_statement
    var: str  # induction variable of a `for`, "" if none
    init: str
    cond: str
    step: str
    bound: str  # right side of `var < bound`
    depth: int  # 1 = outermost
    start: int
    end: int
    body_start: int
    body_end: int
    innermost: bool
    assigned: tuple[str, ...]  # names declared or assigned inside (header included)


@dataclass(frozen=True)
class Subscript:
    array: str
    index: str
    start: int
    end: int
    write: bool
    loops: tuple[int, ...]  # indices into KernelFacts.loops, outermost first


@dataclass(frozen=True)
class Accumulation:
    array: str
    index: str
    expr: str
    start: int  # the whole statement
    end: int
    loop: int  # outermost enclosing loop the index is invariant in
    form: str  # "+=", "-=", "*=", "= x +" (`out[e] = out[e] + x`), "= + x" (`out[e] = x + out[e]`) or "= x -"
    ref: str = ""  # the element as written: `out[e]`, `out[r][c]` (a 2-D array or a pointer to rows)


@dataclass(frozen=True)
class Atomic:
    function: str
    target: str
    start: int
    end: int
    in_loop: bool


@dataclass(frozen=True)
class KernelFacts:
    name: str
    dialect: str
    start: int
    end: int
    body_start: int
    body_end: int
    params: tuple[ParamFact, ...]
    loops: tuple[Loop, ...]
    subscripts: tuple[Subscript, ...]
    accumulations: tuple[Accumulation, ...]
    atomics: tuple[Atomic, ...]
    mapping: tuple[tuple[str, str], ...]  # (variable, axis) for `row = blockIdx.y*blockDim.y+threadIdx.y` and kin
    thread_vars: tuple[str, ...]  # locals whose value depends on the thread
    builtins: tuple[str, ...]  # "threadIdx.x", "get_global_id(0)", ... as used
    shared: tuple[str, ...]  # __shared__ / __local declarations
    launch_bounds: str
    element_type: str  # "float" | "double" | "mixed" | "" from the pointer params
    locals: tuple[str, ...]
    # the first blockIdx.A / threadIdx.A used outside a global index blockIdx.A*blockDim.A+threadIdx.A (Parboil's stencil:
    # i = threadIdx.x, j = blockIdx.x + 1): a new block shape changes the kernel's work; "" when there is none
    shape_bound: str = ""
    # the same, block-strided loops `for (int v = threadIdx.x; v < E; v += blockDim.x)` set aside too: every thread of
    # any 1-D block covers [0, E) with the others (a shared histogram's clear and flush)
    shape_bound_loops: str = ""
    # the device the optimizer targets (s2s/optimize/target.py reads it from the MEP; the H200 when nothing is known):
    # what launch rules size a grid for, never constants of a pass's own
    device: TargetDevice = H200
    # host-sized memory (__local arguments) whose size the launch description scales with the block (s2s.optimize.launch_sizes)
    scaled_memory: tuple[str, ...] = ()

    @property
    def uses_thread_index(self) -> bool:
        return bool(self.builtins)

    @property
    def dims(self) -> int:
        return len({axis for _, axis in self.mapping})

    def var_for(self, axis: str) -> str:
        return next((v for v, a in self.mapping if a == axis), "")

    def param(self, name: str) -> ParamFact | None:
        return next((p for p in self.params if p.name == name), None)

    def index_exprs(self) -> dict[str, tuple[str, ...]]:
        out: dict[str, list[str]] = {}
        for s in self.subscripts:
            out.setdefault(s.array, [])
            if s.index not in out[s.array]:
                out[s.array].append(s.index)
        return {k: tuple(v) for k, v in out.items()}


def idents(text: str) -> set[str]:
    return set(_IDENT.findall(text))


def find_kernel(root: Node, data: bytes, dialect: str, name: str | None) -> tuple[Node, int] | None:
    """(function_definition, start of the definition) of the named kernel, or of the first one."""
    stack = [root]
    while stack:
        n = stack.pop()
        if n.type == "function_definition":
            start = _kernel_start(n, data, dialect)
            if start >= 0 and (name is None or _name(n, data) in (name, name.split("::")[-1])):
                return n, start
            continue
        stack.extend(reversed(n.named_children))
    return None


def kernel_facts(source: bytes, dialect: str, name: str | None = None) -> KernelFacts | None:
    """Facts of kernel `name` (the first kernel when None) in a kernel file, None when there is none."""
    tree = parse(source, dialect)
    found = find_kernel(tree.root_node, source, dialect, name)
    if found is None:
        return None
    fn, start = found
    body = fn.child_by_field_name("body")
    assert body is not None
    if nesting(body) > MAX_NESTING:
        raise TooDeep(f"kernel {name or ''} nests more than {MAX_NESTING} levels deep".replace("  ", " "))
    return _Collector(source, dialect, fn, start, body).facts()


class TooDeep(UserError):
    """A kernel nested deeper than the analyses walk: bad input named in one line, never a RecursionError."""


def _kernel_start(fn: Node, data: bytes, dialect: str) -> int:
    if dialect == "opencl":
        before = data[max(0, fn.start_byte - 64) : fn.start_byte]
        m = re.search(rb"(?:^|[^\w])(__kernel|kernel)\s*$", before)
        return fn.start_byte - len(before) + m.start(1) if m else -1
    if any(c.type == "__global__" for c in fn.children):
        return fn.parent.start_byte if fn.parent is not None and fn.parent.type == "template_declaration" else fn.start_byte
    return -1


def _declarator(fn: Node) -> Node | None:
    node = fn.child_by_field_name("declarator")
    while node is not None and node.type != "function_declarator":
        node = node.child_by_field_name("declarator")
    return node


def _name(fn: Node, data: bytes) -> str:
    d = _declarator(fn)
    inner = d.child_by_field_name("declarator") if d is not None else None
    return src(data, inner).split("::")[-1].strip() if inner is not None else ""


class _Collector:
    """One walk over a kernel body."""

    def __init__(self, data: bytes, dialect: str, fn: Node, start: int, body: Node) -> None:
        self.data, self.dialect, self.fn, self.start, self.body = data, dialect, fn, start, body
        self.loops: list[tuple[Node, int]] = []  # (loop, depth)
        self.subscripts: list[Subscript] = []
        self.acc_nodes: list[tuple[Node, list[int], str]] = []
        self.atomics: list[Atomic] = []
        self.locals: list[str] = []
        self.assigns: list[tuple[str, str]] = []  # (name, value text) in body order

    def facts(self) -> KernelFacts:
        params = self._params()
        pointers = {p.name for p in params if p.pointer}
        self._walk(self.body, [])
        loops = self._loops()
        accs = tuple(a for a in (self._accumulation(n, stack, op, loops, pointers) for n, stack, op in self.acc_nodes) if a)
        body_text = src(self.data, self.body)
        builtins = sorted({m.group(0).replace(" ", "") for m in THREAD_BUILTIN.finditer(body_text)})
        mapping: list[tuple[str, str]] = []
        for name, value in self.assigns:
            axes = {_AXES[m.group(2) or m.group(4)] for m in THREAD_BUILTIN.finditer(value)}
            if len(axes) == 1 and name not in {v for v, _ in mapping} and re.search(r"threadIdx|get_global_id|get_local_id", value):
                mapping.append((name, axes.pop()))
        floats = {p.base_type for p in params if p.pointer and p.base_type in {"float", "double"}}
        shared_re = r"__shared__[^;{]*;" if self.dialect != "opencl" else r"\b(?:__local|local)\b[^;{(]*;"
        bounds = next((src(self.data, c) for c in self.fn.children if c.type == "launch_bounds"), "")
        return KernelFacts(
            name=_name(self.fn, self.data), dialect=self.dialect, start=self.start, end=self._end(),
            body_start=self.body.start_byte, body_end=self.body.end_byte, params=params, loops=loops,
            subscripts=tuple(self.subscripts), accumulations=accs, atomics=tuple(self.atomics), mapping=tuple(mapping),
            thread_vars=tuple(self._thread_vars()), builtins=tuple(builtins),
            shared=tuple(m.group(0) for m in re.finditer(shared_re, body_text)), launch_bounds=bounds,
            element_type=("mixed" if len(floats) > 1 else next(iter(floats), "")), locals=tuple(self.locals),
            shape_bound=shape_bound(body_text), shape_bound_loops=shape_bound(body_text, strided_loops=True),
        )

    def _end(self) -> int:
        outer = self.fn.parent if self.fn.parent is not None and self.fn.parent.type == "template_declaration" else self.fn
        return outer.end_byte

    def _params(self) -> tuple[ParamFact, ...]:
        decl = _declarator(self.fn)
        plist = decl.child_by_field_name("parameters") if decl is not None else None
        if plist is None:
            return ()
        raw_params: list[tuple[Node, str]] = []
        prev_end = plist.start_byte + 1
        for child in plist.children:
            if child.type in {"parameter_declaration", "optional_parameter_declaration"}:
                raw_params.append((child, self.data[prev_end : child.end_byte].decode("utf-8", "replace").strip()))
            if child.type in {",", "(", "parameter_declaration", "optional_parameter_declaration"}:
                prev_end = child.end_byte
        made = [(n, raw, make_param(raw, src(self.data, n.child_by_field_name("declarator") or n))) for n, raw in raw_params]
        text = self.data[self.start : self._end()].decode("utf-8", "replace")
        access = param_access(text, self.dialect, [p.name for _, _, p in made if p.pointer],
                              ref_params=reference_params(self.data.decode("utf-8", "replace")))
        out = []
        for node, raw, p in made:
            acc = access.get(p.name, set())
            out.append(ParamFact(
                name=p.name, type=p.type, base_type=p.base_type, pointer=p.pointer, const=p.const,
                restrict=bool(re.search(r"\b(__restrict__|__restrict|restrict)\b", raw)), read="read" in acc,
                written="write" in acc, start=node.start_byte, end=node.end_byte, star_end=_star_end(node),
            ))
        return tuple(out)

    def _walk(self, node: Node, stack: list[int]) -> None:
        t = node.type
        if t in LOOPS:
            self.loops.append((node, len(stack) + 1))
            stack = stack + [len(self.loops) - 1]
        elif t == "init_declarator":
            name = _IDENT.findall(src(self.data, node.child_by_field_name("declarator") or node))
            if name:
                self.locals.append(name[-1])
                self.assigns.append((name[-1], src(self.data, node.child_by_field_name("value") or node)))
        elif t == "declaration":
            for d in node.children_by_field_name("declarator"):
                if d.type == "identifier":
                    self.locals.append(src(self.data, d))
        elif t == "assignment_expression":
            left = node.child_by_field_name("left")
            op = src(self.data, node.child_by_field_name("operator") or node)
            if left is not None and left.type == "identifier":
                self.assigns.append((src(self.data, left), src(self.data, node.child_by_field_name("right") or node)))
            elif left is not None and left.type == "subscript_expression" and stack:
                self.acc_nodes.append((node, stack, op))
        elif t == "subscript_expression":
            self._subscript(node, stack)
        elif t == "call_expression":
            fn = src(self.data, node.child_by_field_name("function") or node)
            args = node.child_by_field_name("arguments")
            if _ATOMIC.match(fn) and args is not None and args.named_children:
                self.atomics.append(Atomic(fn, src(self.data, args.named_children[0]), node.start_byte, node.end_byte, bool(stack)))
        for c in node.named_children:
            self._walk(c, stack)

    def _subscript(self, node: Node, stack: list[int]) -> None:
        arg = node.child_by_field_name("argument")
        idx = node.child_by_field_name("indices") or node.child_by_field_name("index")
        if arg is None or arg.type != "identifier" or idx is None:
            return
        index = src(self.data, idx)
        if idx.type == "subscript_argument_list":
            index = index.strip()[1:-1].strip()
        parent = node.parent
        write = parent is not None and (
            (parent.type == "assignment_expression" and parent.child_by_field_name("left") == node) or parent.type == "update_expression")
        self.subscripts.append(Subscript(src(self.data, arg), index, node.start_byte, node.end_byte, write, tuple(stack)))

    def _loops(self) -> tuple[Loop, ...]:
        out: list[Loop] = []
        for i, (node, depth) in enumerate(self.loops):
            init, cond, step = (node.child_by_field_name(f) for f in ("initializer", "condition", "update"))
            body = node.child_by_field_name("body") or node
            var = ""
            if node.type == "for_statement" and init is not None:
                found = _IDENT.findall(src(self.data, init).split("=")[0])
                var = found[-1] if found else ""
            bound = ""
            if cond is not None and cond.type == "binary_expression":
                left, right = cond.child_by_field_name("left"), cond.child_by_field_name("right")
                op = src(self.data, cond.child_by_field_name("operator") or cond)
                if left is not None and right is not None and src(self.data, left) == var and op in {"<", "<=", "!="}:
                    bound = src(self.data, right)
            nested = any(j != i and node.start_byte <= o.start_byte and o.end_byte <= node.end_byte for j, (o, _) in enumerate(self.loops))
            out.append(Loop(
                kind=node.type, var=var, init=src(self.data, init) if init else "", cond=src(self.data, cond) if cond else "",
                step=src(self.data, step) if step else "", bound=bound, depth=depth,
                start=node.start_byte, end=node.end_byte, body_start=body.start_byte, body_end=body.end_byte,
                innermost=not nested, assigned=tuple(sorted(_assigned(node, self.data))),
            ))
        return tuple(out)

    def _accumulation(self, node: Node, stack: list[int], op: str, loops: tuple[Loop, ...], pointers: set[str]) -> Accumulation | None:
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        assert left is not None and right is not None
        arr, indices = _element(left)
        if arr is None or src(self.data, arr) not in pointers:
            return None
        lhs = _flat(src(self.data, left))
        if op in {"+=", "-=", "*="}:
            form, expr = op, src(self.data, right)
        elif op == "=" and (sum_ := _sum_with(self.data, right, lhs)) is not None:
            form, expr = sum_
        else:
            return None
        statement = node.parent if node.parent is not None and node.parent.type == "expression_statement" else node
        index = "][".join(indices)  # `r][c` for out[r][c]: the array and its index give the element's text back
        names = idents(index)
        chosen = -1
        for li in reversed(stack):  # innermost outwards, while the index stays invariant
            if names & set(loops[li].assigned):
                break
            chosen = li
        if chosen < 0:
            return None
        return Accumulation(src(self.data, arr), index, expr, statement.start_byte, statement.end_byte, chosen, form,
                            src(self.data, left))

    def _thread_vars(self) -> list[str]:
        dependent: list[str] = []
        changed = True
        while changed:
            changed = False
            for name, value in self.assigns:
                if name in dependent:
                    continue
                if THREAD_BUILTIN.search(value) or idents(value) & set(dependent):
                    dependent.append(name)
                    changed = True
        return dependent


def shape_bound(body: str, strided_loops: bool = False) -> str:
    """The first blockIdx.A / threadIdx.A `body` uses outside a global index `blockIdx.A*blockDim.A + threadIdx.A`
    (either order, __umul24/__mul24 too), with `strided_loops` outside a block-strided loop's head too; "" when there is
    none."""
    body = re.sub(r"//[^\n]*|/\*.*?\*/", " ", body, flags=re.S)
    if strided_loops:
        body = re.sub(r"\bfor\s*\(\s*(?:int|unsigned|unsigned int|long|size_t)\s+(\w+)\s*=\s*threadIdx\.x\s*;\s*\1\s*<\s*[^;{}]+;"
                      r"\s*\1\s*\+=\s*blockDim\.x\s*\)", " ", body)
    for a in "xyz":
        prod = (rf"(?:blockIdx\.{a}\s*\*\s*blockDim\.{a}|blockDim\.{a}\s*\*\s*blockIdx\.{a}|"
                rf"__u?mul24\s*\(\s*(?:blockIdx\.{a}\s*,\s*blockDim\.{a}|blockDim\.{a}\s*,\s*blockIdx\.{a})\s*\))")
        index = rf"(?:\(?\s*{prod}\s*\)?\s*\+\s*threadIdx\.{a}|threadIdx\.{a}\s*\+\s*\(?\s*{prod}\s*\)?)"
        rest = re.sub(index, " ", body)
        rest = re.sub(prod, " ", rest)  # a product alone (a block's first element) does not depend on the shape's split
        for what in (f"blockIdx.{a}", f"threadIdx.{a}"):
            if re.search(re.escape(what) + r"\b", rest):
                return what
    return ""


def _element(left: Node) -> tuple[Node | None, list[str]]:
    """(the array, its index texts outermost first) of `a[i]` or `a[i][j]...`; (None, []) for anything else."""
    indices: list[str] = []
    node = left
    while node.type == "subscript_expression":
        idx = node.child_by_field_name("indices") or node.child_by_field_name("index")
        arg = node.child_by_field_name("argument")
        if idx is None or arg is None or idx.text is None:
            return None, []
        text = idx.text.decode("utf-8", "replace").strip()
        indices.insert(0, text[1:-1].strip() if idx.type == "subscript_argument_list" else text)
        node = arg
    return (node, indices) if node.type == "identifier" and indices else (None, [])


def _flat(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _sum_with(data: bytes, right: Node, lhs: str) -> tuple[str, str] | None:
    """(form, the other operand) of `lhs + x`, `x + lhs` or `lhs - x`; None otherwise."""
    if right.type != "binary_expression":
        return None
    a, b, op = (right.child_by_field_name(f) for f in ("left", "right", "operator"))
    if a is None or b is None or op is None:
        return None
    sign = src(data, op)
    if sign in {"+", "-"} and _flat(src(data, a)) == lhs:
        return ("= x +" if sign == "+" else "= x -"), src(data, b)
    if sign == "+" and _flat(src(data, b)) == lhs:
        return "= + x", src(data, a)
    return None


def _assigned(node: Node, data: bytes) -> set[str]:
    out: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == "init_declarator" or (n.type == "declaration" and n.parent is not None):
            d = n.child_by_field_name("declarator")
            if d is not None and d.type in {"identifier", "init_declarator"}:
                found = _IDENT.findall(src(data, d).split("=")[0])
                out.update(found[-1:])
        elif n.type == "assignment_expression":
            left = n.child_by_field_name("left")
            if left is not None and left.type == "identifier":
                out.add(src(data, left))
        elif n.type == "update_expression":
            arg = n.child_by_field_name("argument")
            if arg is not None and arg.type == "identifier":
                out.add(src(data, arg))
        stack.extend(n.named_children)
    return out


def _star_end(node: Node) -> int:
    cur: Node | None = node.child_by_field_name("declarator")
    end = -1
    while cur is not None and cur.type in {"pointer_declarator", "abstract_pointer_declarator"}:
        star = next((c for c in cur.children if c.type == "*"), None)
        if star is not None:
            end = star.end_byte
        cur = cur.child_by_field_name("declarator")
    return end


def fresh(facts: KernelFacts, source: bytes, want: str) -> str:
    """`want`, or `want` with a numeric suffix, so that it names nothing in the kernel."""
    taken = idents(source[facts.start : facts.end].decode("utf-8", "replace"))
    name, n = want, 1
    while name in taken:
        name, n = f"{want}{n}", n + 1
    return name
