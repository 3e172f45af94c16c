"""hoist-invariants: a load that every iteration of a loop repeats, from an array the kernel never writes, is read once
before the loop into a local.

The compiler keeps such loads in the loop when the loop stores through another pointer that might alias the array
(`out[i*m + j] = a[i*m + j] * s[i]`: s[i] is read again after every store to out). From the kernel model: the load's
index is affine (or arithmetic on variables: smem-allpairs' `i`) and uses neither the loop's variable nor anything the
loop assigns, the array is a parameter the kernel never writes, the load is not under a condition or short-circuit in
the loop body, and the loop has no `return` or `goto`. A `continue` or `break` (an n-body loop's `if (j == i) continue;`)
under a condition on the loop's variable is accepted: it can skip the load on some iterations, but the array is never
written and the index is the same on every iteration, so the hoisted value is what every load that does run reads. One
that is unconditional or under a condition without the variable (`if (i >= n) continue;`) may skip every trip: refused. The hoisted load runs only when the loop runs
at least once (`lower < upper`, or the loop's own condition at its first value): the same index the loop's first
iteration would read once past any `continue`.
Index arithmetic the compiler hoists itself; the pass leaves it. Refused where no load qualifies, with the reasons."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from tree_sitter import Node

from s2s.lang.edits import Edit, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts
from s2s.lang.kernel_model import ArrayAccess, LoopNest, kernel_model
from s2s.lang.parsing import parse, src

from ..common.tree import fresh, indent_of, walk

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = """\
__global__ void rowscale(const float* a, const float* s, float* out, int n, int m)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    for (int j = 0; j < m; j++)
        out[i * m + j] = a[i * m + j] * s[i] + s[i] * s[i];
}
"""
EXAMPLE_AFTER = """\
__global__ void rowscale(const float* a, const float* s, float* out, int n, int m)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const float s_h = 0 < m ? s[i] : (float)0;
    for (int j = 0; j < m; j++)
        out[i * m + j] = a[i * m + j] * s_h + s_h * s_h;
}
"""
_SCALARS = {"float", "double", "int", "unsigned", "unsigned int", "long", "long long", "unsigned long", "size_t", "short",
            "unsigned short", "char", "unsigned char"}
_PASS_THROUGH = {"compound_statement", "expression_statement", "declaration", "init_declarator", "parenthesized_expression",
                 "cast_expression", "unary_expression", "argument_list", "call_expression", "return_statement"}
_ARITH = {"subscript_argument_list", "binary_expression", "parenthesized_expression", "number_literal", "+", "-", "*", "/",
          "%", "(", ")", "[", "]", "<<", ">>"}
_EXITS = {"return_statement", "goto_statement"}


@dataclass(frozen=True)
class HoistInvariants:
    name: ClassVar[str] = "hoist-invariants"
    WHY_IT_EXISTS: ClassVar[str] = "a read-only load repeated every iteration because a store might alias it"
    priority: ClassVar[int] = 95  # a cheap rewrite, after the structural ones

    def applies(self, facts: KernelFacts) -> bool | str:
        return True if facts.loops else "kernel has no loop"

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        model = kernel_model(source, facts.dialect, facts.name)
        if model is None:
            return Refused("no kernel model")
        root = parse(source, facts.dialect).root_node
        groups: dict[tuple[int, str, str], list[ArrayAccess]] = {}
        why: dict[str, str] = {}
        for a in model.accesses:
            reason = self._why_not(a, model.loops, facts, root, source)
            if reason:
                why.setdefault(a.text, reason)
            else:
                key = " ".join(str(p) for p in a.index) if a.affine else "".join(a.text[len(a.array):].split())
                groups.setdefault((a.nest[-1], a.array, key), []).append(a)
        if not groups:
            return Refused("no invariant load: " + "; ".join(f"{t}: {r}" for t, r in list(why.items())[:8]))
        edits: list[Edit] = []
        taken: set[str] = set()
        for (li, _, _), accesses in sorted(groups.items(), key=lambda kv: kv[1][0].start):
            lp, first = model.loops[li], accesses[0]
            name = fresh(facts, source, f"{first.array}_h")
            while name in taken:
                name = fresh(facts, source, name + "_")
            taken.add(name)
            ty = facts.param(first.array).base_type  # type: ignore[union-attr]
            assert lp.lower is not None
            runs = (lp.upper - lp.lower).constant() if lp.upper is not None else None
            value = first.text if runs is not None and runs > 0 else f"{_runs_once(lp, root, source)} ? {first.text} : ({ty})0"
            at = _above_pragmas(source, lp.start)  # a `#pragma unroll` stays on the loop
            edits.append(Edit(at, at, f"const {ty} {name} = {value};\n{indent_of(source, lp.start)}"))
            edits += [Edit(a.start, a.end, name) for a in accesses]
        return Rewrite(tuple(edits), None, f"{len(groups)} loads hoisted out of their loops")

    def _why_not(self, a: ArrayAccess, loops: tuple[LoopNest, ...], facts: KernelFacts, root: Node, data: bytes) -> str:
        p = facts.param(a.array)
        if p is None or not p.pointer or p.written:
            return f"{a.array} is not a parameter the kernel only reads"
        if not a.nest or a.write or not a.read:
            return "not a load inside a loop"
        if p.base_type.replace("const ", "").strip() not in _SCALARS:
            return f"{a.array}'s elements are not scalars"
        lp = loops[a.nest[-1]]
        names = _index_names(a, root, data)
        if names is None or lp.lower is None or lp.step is None or lp.step < 1:
            return "the index or the loop's range is not affine"
        loop = _loop_node(root, lp)
        if loop is None:
            return "loop not found"
        if lp.upper is None and not _runs_once(lp, root, data):
            return f"the loop over {lp.var} has no condition"
        if names & ({lp.var} | _assigned(loop, data)):
            return f"the index changes in the loop over {lp.var}"
        if any(n.type in _EXITS for n in walk(loop)):
            return f"the loop over {lp.var} may leave the kernel or jump (return, goto)"
        if _skips_every_trip(loop, lp.var, data):
            return (f"a continue or break in the loop over {lp.var} is not under a condition on {lp.var}: it may skip every "
                    "trip (a guard on the load's index), and the hoisted load would read where the original never does")
        node = root.descendant_for_byte_range(a.start, a.end)
        body = loop.child_by_field_name("body")
        while node is not None and body is not None and node != body:
            parent = node.parent
            if parent is None:
                break
            logical = parent.type == "binary_expression" and src(data, parent.child_by_field_name("operator") or parent) in {"&&", "||"}
            if parent != body and (logical or parent.type not in _PASS_THROUGH | {"binary_expression", "assignment_expression",
                                                                                      "subscript_expression", "field_expression"}):
                return f"read under a condition in the loop over {lp.var}"
            node = parent
        return ""


def _skips_every_trip(loop: Node, var: str, data: bytes) -> bool:
    """Whether a `continue`/`break` in the loop is unconditional or under a condition that does not read the loop's
    variable (`if (i >= n) continue;`): such a skip can hold on every trip. One under a condition on the variable
    (`if (j == i) continue;`) skips some trips."""
    body = loop.child_by_field_name("body")
    for n in walk(body) if body is not None else ():
        if n.type not in {"continue_statement", "break_statement"}:
            continue
        up, on_var = n.parent, False
        while up is not None and up != body and not on_var:
            cond = up.child_by_field_name("condition") if up.type in {"if_statement", "conditional_expression"} else None
            on_var = cond is not None and re.search(rf"\b{re.escape(var)}\b", src(data, cond)) is not None
            up = up.parent
        if not on_var:
            return True
    return False


def _index_names(a: ArrayAccess, root: Node, data: bytes) -> set[str] | None:
    """The variables the index uses: from the model where it is affine, else from its text where that is arithmetic on
    variables and numbers only (`i` after smem-allpairs' `if (!live) i = n - 1;` is not affine to the model)."""
    if a.affine:
        return {n for p in a.index if p is not None for n in p.names}
    node = root.descendant_for_byte_range(a.start, a.end)
    idx = node.child_by_field_name("indices") or node.child_by_field_name("index") if node is not None else None
    if node is None or node.type != "subscript_expression" or idx is None:
        return None
    names = set()
    for n in walk(idx):
        if n.type == "identifier":
            names.add(src(data, n))
        elif n.type not in _ARITH:
            return None
    return names


def _above_pragmas(data: bytes, at: int) -> int:
    while True:
        line = data.rfind(b"\n", 0, at) + 1  # the start of the loop's line (or of the pragma line above)
        prev = data.rfind(b"\n", 0, max(line - 1, 0)) + 1
        if line == 0 or data[line:at].strip() or not data[prev:line].strip().startswith(b"#pragma"):
            return at
        at = prev + len(data[prev:line]) - len(data[prev:line].lstrip())


def _loop_node(root: Node, lp: LoopNest) -> Node | None:
    loop = root.descendant_for_byte_range(lp.start, lp.end)
    while loop is not None and not (loop.type == "for_statement" and loop.start_byte == lp.start):
        loop = loop.parent
    return loop


def _runs_once(lp: LoopNest, root: Node, data: bytes) -> str:
    """The condition under which the loop runs its first iteration: `lower < upper`, or (a condition such as
    `j < n && j - t < 256`) the loop's condition with its variable replaced by the lower bound; "" if none."""
    assert lp.lower is not None
    if lp.upper is not None:
        return f"{lp.lower.text()} < {lp.upper.text()}"
    loop = _loop_node(root, lp)
    cond = loop.child_by_field_name("condition") if loop is not None else None
    if cond is None:
        return ""
    pattern = r"(?<![.\w])" + re.escape(lp.var) + r"\b"
    return "(" + re.sub(pattern, f"({lp.lower.text()})", src(data, cond)) + ")"


def _assigned(loop: Node, data: bytes) -> set[str]:
    out = set()
    for n in walk(loop):
        target = None
        if n.type == "init_declarator":
            target = n.child_by_field_name("declarator")
        elif n.type == "assignment_expression":
            target = n.child_by_field_name("left")
        elif n.type == "update_expression":
            target = n.child_by_field_name("argument")
        if target is not None and target.type == "identifier":
            out.add(src(data, target))
    return out
