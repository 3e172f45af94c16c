"""The shape inner-loop-threads and triangular-solve-blocking both start from: a 1-D kernel that declares its global
thread index first, bounds it from above in the next statement, and runs one counted for loop under that guard
(`v = blockIdx.x*blockDim.x + threadIdx.x; if (v < M) { for (w = lo; w < hi; w++) BODY }`, or the guard as an early
return). Found on the kernel model; each refusal says which part is missing."""
from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from s2s.lang.affine import Poly
from s2s.lang.edits import Refused
from s2s.lang.kernel_facts import THREAD_BUILTIN, KernelFacts, idents
from s2s.lang.kernel_model import Guard, KernelModel, LoopNest, kernel_model

from .tree import body_node, statements, text


@dataclass(frozen=True)
class ThreadLoop:
    model: KernelModel
    var: str  # the thread index
    offset: Poly  # its offset in the mapping
    decl: Node  # the declaration of the thread index (the body's first statement)
    guard_node: Node  # the statement that guards it
    guard: Guard  # the model's view of that guard
    upper: dict[str, Poly]  # the guard's upper bounds, by name
    inside: str  # the condition under which the loop runs
    end: int  # where the guarded part ends (a byte of the source)
    loop: Node  # the for statement
    lp: LoopNest  # the model's view of it
    init: Node
    cond: Node
    body: Node


def thread_loop(source: bytes, facts: KernelFacts, what: str, *, alone: bool = False) -> ThreadLoop | Refused:
    """The kernel as a ThreadLoop, or why not (`what` names the loop in the refusals: "one for loop"; `alone`: no
    thread mapping but the global one)."""
    model = kernel_model(source, facts.dialect, facts.name)
    maps = [t for t in model.mapping if t.kind == "global"] if model is not None else []
    if model is None or len(maps) != 1 or maps[0].axis != "x" or (alone and len(model.mapping) != 1):
        return Refused("needs one global thread index along x" + (" and no other" if alone else ""))
    v = maps[0].var
    stmts = statements(body_node(source, facts))
    if len(stmts) < 2 or stmts[0].type != "declaration" or v not in idents(text(source, stmts[0])) \
            or any(THREAD_BUILTIN.search(text(source, s)) for s in stmts[1:]):
        return Refused(f"the kernel must begin with the declaration of {v} and use thread indices nowhere else")
    guard = stmts[1]
    g = next((x for x in model.guards if x.start == guard.start_byte), None)
    upper = dict(g.upper) if g is not None else {}
    if g is None or v not in upper or guard.child_by_field_name("alternative") is not None:
        return Refused(f"needs a guard bounding {v} from above right after its declaration")
    if g.kind == "block":
        cons = guard.child_by_field_name("consequence")
        rest = statements(cons) if cons is not None and cons.type == "compound_statement" else []
        inside, end = g.condition.strip(), guard.end_byte
        if len(stmts) != 2:
            return Refused("nothing may follow the guarded block")
    else:
        rest, inside, end = stmts[2:], f"!({g.condition.strip()})", stmts[-1].end_byte
    if len(rest) != 1 or rest[0].type != "for_statement":
        return Refused(f"the guarded part must be {what}")
    loop = rest[0]
    lp = next((x for x in model.loops if x.start == loop.start_byte), None)
    init, cond, body = (loop.child_by_field_name(f) for f in ("initializer", "condition", "body"))
    if lp is None or init is None or init.type != "declaration" or cond is None or body is None or lp.step != 1:
        return Refused("the loop must declare its variable and count it up by one")
    return ThreadLoop(model, v, maps[0].offset, stmts[0], guard, g, upper, inside, end, loop, lp, init, cond, body)
