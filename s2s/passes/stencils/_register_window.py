"""The code stencil-registers writes besides the window: filter coefficients loaded once per thread, `#pragma unroll`
on the window loops, and the kernel model with the file's integer macros in its loop bounds."""
from __future__ import annotations

from dataclasses import dataclass, replace

from tree_sitter import Node

from s2s.lang.affine import Poly
from s2s.lang.kernel_facts import KernelFacts
from s2s.lang.kernel_model import ArrayAccess, KernelModel
from s2s.lang.stencil import Stencil

from ..common.statements import assigned, declared_before, returns_only, uses_axis
from ..common.tree import fresh, indent_of, text, walk
from ._stencil import plus

_PASS_THROUGH = {"compound_statement", "expression_statement", "declaration", "init_declarator", "parenthesized_expression",
                 "cast_expression", "unary_expression", "argument_list", "call_expression", "binary_expression",
                 "assignment_expression", "subscript_expression", "field_expression", "subscript_argument_list"}


def with_macros(model: KernelModel, macros: dict[str, int]) -> KernelModel:
    """The model with the file's integer macros in its loop bounds (`for (i = -R; i <= R; i++)` has 2R + 1 steps)."""
    def sub(p: Poly | None) -> Poly | None:
        if p is None:
            return p
        for n in p.names & set(macros):
            p = p.subst(n, Poly.const(macros[n]))
        return p
    return replace(model, loops=tuple(replace(lp, lower=sub(lp.lower), upper=sub(lp.upper)) for lp in model.loops))


def merged(edits: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Insertions at one point joined in the order given (spliced() sorts by text otherwise)."""
    out: list[tuple[int, int, str]] = []
    for s, e, t in edits:
        same = next((i for i, o in enumerate(out) if s == e == o[0] == o[1]), None)
        if same is None:
            out.append((s, e, t))
        else:
            out[same] = (s, e, out[same][2] + t)
    return out


@dataclass(frozen=True)
class Coefficients:
    """One thread-uniform read (`k[(i + R) * 5 + j + R]`) loaded into `name` over its window loops, once."""
    array: str
    name: str
    flag: str
    elem: str
    loops: tuple[tuple[str, int, int], ...]  # (variable, lower, upper exclusive) outermost first
    reads: tuple[ArrayAccess, ...]
    at: int  # where the load goes: before the outermost window loop

    @property
    def size(self) -> int:
        n = 1
        for _, lo, hi in self.loops:
            n *= hi - lo
        return n

    def declare(self, facts: KernelFacts, source: bytes) -> list[str]:
        dims = "".join(f"[{hi - lo}]" for _, lo, hi in self.loops)
        return [f"{self.elem} {self.name}{dims};", f"bool {self.flag} = false;"]

    def load_lines(self) -> list[str]:
        """The loops that fill the registers (no flag)."""
        load: list[str] = []
        for depth, (v, lo, hi) in enumerate(self.loops):
            pad = "    " * depth
            load += [f"{pad}#pragma unroll", f"{pad}for (int {v} = {lo}; {v} < {hi}; {v}++) {{"]
        load.append("    " * len(self.loops) + f"{self.name}{self._subs()} = {self.reads[0].text};")
        return load + ["    " * depth + "}" for depth in reversed(range(len(self.loops)))]

    def _subs(self) -> str:
        return "".join(f"[{v}{plus(Poly.const(-lo))}]" for v, lo, _ in self.loops)

    def edits(self, source: bytes) -> list[tuple[int, int, str]]:
        ind = indent_of(source, self.at)
        load = [f"if (!{self.flag}) {{"] + ["    " + ln for ln in self.load_lines()] + [f"    {self.flag} = true;", "}"]
        out = [(self.at, self.at, ("\n" + ind).join(load) + "\n" + ind)]
        return out + [(a.start, a.end, f"{self.name}{self._subs()}") for a in self.reads]


def uniform_reads(source: bytes, facts: KernelFacts, model: KernelModel, st: Stencil, body: Node,
                  known: set[str]) -> tuple[list[Coefficients], str]:
    """The reads to load once per thread: of a parameter array the kernel never writes, indexed by window-loop
    variables (constant ranges) and sizes only, reached on every iteration of those loops (no condition between)."""
    stencils = {a.name for a in st.arrays}
    written = {a.array for a in model.accesses if a.write}
    groups: dict[tuple[str, str, tuple[int, ...]], list[ArrayAccess]] = {}
    why = ""
    for a in model.accesses:
        p = facts.param(a.array)
        if not a.read or a.write or a.array in stencils or p is None or not p.pointer or a.array in written:
            continue
        idx = a.flat if len(a.index) == 1 else None
        suffix = window_suffix(model, a)
        vars_ = {model.loops[i].var for i in suffix}
        if idx is None or not suffix or not idx.names & vars_ or idx.names - vars_ - known:
            why = why or f"{a.text} does not move with window loops alone"
            continue
        if not unconditional(source, body, a, model.loops[suffix[0]].start):
            why = why or f"{a.text} is read under a condition inside its loops"
            continue
        groups.setdefault((a.array, " ".join(str(x) for x in a.index), suffix), []).append(a)
    out: list[Coefficients] = []
    for (array, _, suffix), reads in sorted(groups.items(), key=lambda kv: kv[1][0].start):
        name = fresh(facts, source, f"{array}_r")
        while any(g.name == name for g in out):
            name = fresh(facts, source, name + "_")
        loops = tuple((model.loops[i].var, model.loops[i].lower.constant(), model.loops[i].upper.constant()) for i in suffix)  # type: ignore[union-attr]
        out.append(Coefficients(array, name, fresh(facts, source, f"{name}_loaded"), elem(facts, array), loops,  # type: ignore[arg-type]
                                 tuple(reads), model.loops[suffix[0]].start))
    return out, why  # loads before one loop are joined in order (merged)


def window_suffix(model: KernelModel, a: ArrayAccess) -> tuple[int, ...]:
    """The innermost loops around a read with constant ranges of at most 16 steps, stepping by one."""
    out: list[int] = []
    for i in reversed(a.nest):
        lp = model.loops[i]
        lo, hi = (p.constant() if p is not None else None for p in (lp.lower, lp.upper))
        if lo is None or hi is None or lp.step != 1 or not 0 < hi - lo <= 16:
            break
        out.insert(0, i)
    return tuple(out)


def unconditional(source: bytes, body: Node, a: ArrayAccess, loop_start: int) -> bool:
    """No if, ?:, && or || between the read and the loop that starts at `loop_start`."""
    node = body.descendant_for_byte_range(a.start, a.end)
    while node is not None and node != body:
        if node.type == "for_statement" and node.start_byte == loop_start:
            return True
        parent = node.parent
        if parent is None:
            return False
        logical = parent.type == "binary_expression" and text(source, parent.child_by_field_name("operator")) in {"&&", "||"}
        if logical or parent.type not in _PASS_THROUGH | {"for_statement"}:
            return False
        node = parent
    return False


def unroll_windows(source: bytes, body: Node, st: Stencil, model: KernelModel) -> list[tuple[int, int, str]]:
    """`#pragma unroll` before the window loops the stencil reads move with (the window's indices must be constants);
    a loop that is another's whole body gets braces around it first (a directive there does not parse)."""
    moving = {n for a in st.arrays for r in a.reads for d in r.offset for n in d.names}
    out: list[tuple[int, int, str]] = []
    for n in walk(body):
        parent = n.parent
        if n.type != "for_statement" or parent is None or parent.type not in {"compound_statement", "for_statement"}:
            continue
        lp = next((lp for lp in model.loops if lp.start == n.start_byte), None)
        before = source[source.rfind(b"\n", 0, n.start_byte) + 1:n.start_byte]
        prev = n.prev_sibling
        if lp is None or lp.var not in moving or before.strip() or (prev is not None and text(source, prev).startswith("#pragma")):
            continue
        if parent.type == "for_statement":
            if parent.child_by_field_name("body") != n or prev is None or prev.type != ")":
                continue
            out += [(prev.end_byte, prev.end_byte, " {"), (n.end_byte, n.end_byte, "\n" + indent_of(source, parent.start_byte) + "}")]
        out.append((n.start_byte, n.start_byte, "#pragma unroll\n" + indent_of(source, n.start_byte)))
    return out


def elem(facts: KernelFacts, name: str) -> str:
    p = facts.param(name)
    return p.base_type.replace("const ", "").strip() if p is not None else "float"


def y_header(source: bytes, stmts: list[Node], yv: str, xv: str) -> tuple[Node, list[Node]] | str:
    """y's declaration and the statements after it; before it only declarations and early exits, x among them."""
    seen_x = False
    for i, s in enumerate(stmts):
        if s.type == "declaration":
            declared = [text(source, c.child_by_field_name("declarator") if c.type == "init_declarator" else c)
                        for c in s.named_children if c.type in {"init_declarator", "identifier"}]
            if yv in declared:
                if len(declared) != 1:
                    return f"{yv} must be declared alone"
                if not seen_x:
                    return f"{xv} must be declared before {yv}: the register window is loaded before the loop over {yv}"
                return s, stmts[i + 1:]
            seen_x = seen_x or xv in declared
        elif not (s.type == "if_statement" and returns_only(source, s)):
            return f"a statement before {yv}'s declaration other than a declaration or `if (...) return;`"
    return f"{yv} is not declared at the top of the body"


def moved_between_points(source: bytes, facts: KernelFacts, stmts: list[Node], decl: Node, end: int, rest_text: str,
                         yv: str, xv: str) -> str:
    """Why the statements after y's declaration cannot run once per point of the thread, or ''."""
    if uses_axis(rest_text, "y") or (facts.dialect == "opencl" and "(1)" in rest_text and "get_" in rest_text):
        return "the body uses the y thread or block index beyond y's declaration: the block's extent matters"
    x_end = max((d.end_byte for d in stmts if d.start_byte < decl.start_byte and d.type == "declaration"
                 and xv in {text(source, c.child_by_field_name("declarator")) for c in d.named_children if c.type == "init_declarator"}),
                default=facts.body_start)
    after_x = source[x_end:end].decode("utf-8", "replace")
    moved = next((v for v, t in ((yv, rest_text), (xv, after_x)) if assigned(v, t)), "")
    if moved:
        return f"`{moved}` is assigned or its address taken after its declaration"
    carried = [n for n in declared_before(source, stmts, decl) if assigned(n, rest_text)]
    return f"`{carried[0]}` is declared before {yv} and changed after it: it would carry over between points" if carried else ""
