"""Shape of the kernels stencil-streaming rewrites: guards, the loop over z, the z range of a 3-D grid's chunk."""
from __future__ import annotations

from tree_sitter import Node

from s2s.lang.kernel_facts import KernelFacts, idents
from s2s.lang.parsing import src
from s2s.lang.stencil import Bound, Stencil

from ..common.tree import statements, text
from ._stencil import builtin


def is_exit(s: Node, data: bytes) -> bool:
    cons = s.child_by_field_name("consequence") if s.type == "if_statement" else None
    return cons is not None and text(data, cons).strip("{} \n\t;") == "return"


def inner(cons: Node | None) -> list[Node]:
    if cons is None:
        return []
    return statements(cons) if cons.type == "compound_statement" else [cons]


def loop_var(loop: Node | None, data: bytes) -> str:
    init = loop.child_by_field_name("initializer") if loop is not None else None
    d = init.child_by_field_name("declarator") if init is not None and init.type == "declaration" else None
    name = d.child_by_field_name("declarator") if d is not None else None
    return src(data, name) if name is not None else ""


def loop_range(loop: Node | None, facts: KernelFacts, data: bytes, coords: set[str]) -> tuple[str, str] | str:
    """The loop's bounds, the same for every thread (each runs the loop and its barriers)."""
    from s2s.lang.kernel_model import kernel_model

    model = kernel_model(data, facts.dialect, facts.name)
    lp = next((x for x in model.loops if loop is not None and x.start == loop.start_byte), None) if model else None
    if lp is None or lp.lower is None or lp.upper is None or lp.step != 1:
        return "the loop over z must count up by one between affine bounds"
    if (lp.lower.names | lp.upper.names) & (coords | {f"{b}.{a}" for b in ("threadIdx", "blockIdx") for a in "xyz"}):
        return "the loop's bounds differ between threads"
    return lp.lower.text(), lp.upper.text()


def chunk_start(st: Stencil, chunk: int, dialect: str) -> str:
    return f"(int){builtin(dialect, 'blockIdx', 'z')} * {chunk}{signed(st.offsets['z'].constant() or 0)}"


def boundary_copy(source: bytes, guards: list[Node], between: list[Node], exit_: Node, zvar: str, start: str, chunk: int) -> list[str]:
    """The chunk's points that an exit block handles (`if (edge) { copy; return; }`), one loop of their own before
    the marching one: each point runs the original's checks in order, the block without its return."""
    cond = text(source, exit_.child_by_field_name("condition")).strip()
    cons = exit_.child_by_field_name("consequence")
    kept = [text(source, s) for s in statements(cons)[:-1]] if cons is not None else []
    alive = " && ".join(f"!{text(source, g.child_by_field_name('condition')).strip()}" for g in guards) or "true"
    return ([f"for (int {zvar} = {start}; {zvar} < {start} + {chunk}; {zvar}++) {{", f"    if ({alive}) {{"]
            + [f"        {text(source, s)}" for s in between] + [f"        if {cond} {{"] + [f"            {t}" for t in kept]
            + ["        }", "    }", "}"])


def zrange(st: Stencil, bounds: tuple[Bound, ...], zvar: str, chunk: int, dialect: str) -> tuple[str, str] | str:
    lows = [b.value.text() for b in bounds if b.axis == "z" and not b.upper and not b.position]
    highs = [b.value.text() for b in bounds if b.axis == "z" and b.upper and not b.position]
    if not highs:
        return f"needs a guard bounding {zvar} from above"
    start = chunk_start(st, chunk, dialect)
    if st.offsets["z"].constant() is None:
        return f"the mapping of {zvar} has an offset that is not a constant"
    lo = start
    for v in lows:
        lo = f"max({lo}, {v})"
    hi = f"{start} + {chunk}"
    for v in highs:
        hi = f"min({hi}, {v})"
    return lo, hi


def declares(s: Node, var: str, data: bytes) -> bool:
    decls = s.children_by_field_name("declarator")
    return len(decls) == 1 and decls[0].type == "init_declarator" and text(data, decls[0].child_by_field_name("declarator")) == var


def without(guard: Node, var: str, data: bytes, op: str = "") -> str:
    """The guard's condition with the terms on `var` left out ("" when nothing is left; the stencil analysis has
    checked that every term bounds one index by an expression free of indices)."""
    cond = guard.child_by_field_name("condition")
    value = cond.named_children[-1] if cond is not None and cond.named_children else None
    op = op or ("||" if is_exit(guard, data) else "&&")
    terms, stack = [], [value] if value is not None else []
    while stack:
        t = stack.pop()
        while t.type == "parenthesized_expression" and len(t.named_children) == 1:
            t = t.named_children[0]
        if t.type == "binary_expression" and text(data, t.child_by_field_name("operator")) == op:
            stack += [t.child_by_field_name("right"), t.child_by_field_name("left")]  # type: ignore[list-item]
        else:
            terms.append(t)
    keep = [text(data, t) for t in terms if var not in idents(text(data, t))]
    return f" {op} ".join(keep)


def signed(d: int) -> str:
    return f" + {d}" if d > 0 else f" - {-d}" if d < 0 else ""


def exit_block(st: Stencil, work: list[Node], data: bytes) -> tuple[Node | None, list[Node]]:
    """The one exit block among the work statements and the declarations before it, when that is the shape."""
    at = [i for i, s in enumerate(work) if (c := s.child_by_field_name("consequence")) is not None
          and (c.start_byte, c.end_byte) in st.exit_blocks] if st.exit_blocks else []
    if len(at) != 1 or len(st.exit_blocks) != 1 or any(s.type != "declaration" for s in work[:at[0]]):
        return None, []
    return work[at[0]], work[:at[0]]
