"""loads-first: a thread's guarded updates compute every new value before the first store, so all their loads issue
together.

fdtd_e updates ey under `if (i > 0)` and then ex under `if (j > 0)`: the compiler may not move the second update's
loads above the first one's store (they might alias) nor out of its branch (a load it cannot prove safe), so each thread
waits for two DRAM round trips one after the other. Here a run of two or more updates `if (g) X[e] = v;` (or `op=`,
or unguarded) at the end of the body becomes: each guard evaluated into a flag, each value computed under its flag into
a register (the loads of all updates, predicated, scheduled together), then the stores under the same flags. The
order of the stores is kept. The reordering is exact when no update reads or guards on an array an earlier one writes
(checked by name; in an MEP every pointer parameter is its own buffer, the assumption restrict-const makes).

Refused: fewer than two updates at the end of the body, an update that is not one assignment to an array element,
an else branch, a later update or guard reading an array that an earlier update writes, barriers and atomics.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from tree_sitter import Node

from s2s.lang.edits import Edit, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts, idents
from s2s.lang.parsing import src

from ..common.index_steps import elem
from ..common.statements import BARRIERS
from ..common.tree import body_node, fresh, indent_of, statements

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = """\
__global__ void fdtd(float* ex, float* ey, const float* hz, int nx, int ny)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int i = t / ny, j = t % ny;
    if (i >= nx) return;
    if (i > 0)
        ey[i * ny + j] = ey[i * ny + j] - 0.5f * (hz[i * ny + j] - hz[(i - 1) * ny + j]);
    if (j > 0)
        ex[i * (ny + 1) + j] -= 0.5f * (hz[i * ny + j] - hz[i * ny + j - 1]);
}
"""
EXAMPLE_AFTER = """\
__global__ void fdtd(float* ex, float* ey, const float* hz, int nx, int ny)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int i = t / ny, j = t % ny;
    if (i >= nx) return;
    const bool g0 = i > 0;
    const bool g1 = j > 0;
    float v0, v1;
    if (g0) v0 = ey[i * ny + j] - 0.5f * (hz[i * ny + j] - hz[(i - 1) * ny + j]);
    if (g1) v1 = ex[i * (ny + 1) + j] - (0.5f * (hz[i * ny + j] - hz[i * ny + j - 1]));
    if (g0) ey[i * ny + j] = v0;
    if (g1) ex[i * (ny + 1) + j] = v1;
}
"""
_ASSIGN = re.compile(r"^(\w+)\s*\[(.+)\]\s*([-+*/]?)=(?!=)\s*(.+?)\s*;$", re.S)


@dataclass(frozen=True)
class LoadsFirst:
    name: ClassVar[str] = "loads-first"
    priority: ClassVar[int] = 36  # no launch change; before the generic coarsenings
    space: ClassVar[tuple[str, ...]] = ("loads-first", "loads-first,launch-config{block=128}")

    def applies(self, facts: KernelFacts) -> bool | str:
        return True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        body = body_node(source, facts)
        if BARRIERS.search(src(source, body)) or facts.atomics:
            return Refused("barriers, shared memory, warp collectives or atomics")
        stmts = statements(body)
        run: list[tuple[Node, str, str, str, str, str]] = []  # (stmt, guard, array, index, op, value)
        for s in reversed(stmts):
            upd = _update(source, s)
            if upd is None:
                break
            run.insert(0, (s, *upd))
        if len(run) < 2:
            return Refused("fewer than two array updates (`if (g) X[e] = v;`) end the body")
        written: set[str] = set()
        for _, guard, arr, index, _op, value in run:
            read = idents(f"{guard} {index} {value}") | ({arr} if _op else set())
            if read & written:
                return Refused(f"an update reads `{sorted(read & written)[0]}`, which an earlier update writes")
            written.add(arr)
        ind = indent_of(source, run[0][0].start_byte)
        flags = [fresh(facts, source, f"g{k}") if guard else "" for k, (_, guard, *_r) in enumerate(run)]
        regs = [fresh(facts, source, f"v{k}") for k in range(len(run))]
        types: dict[str, list[str]] = {}
        for k, (_, _, arr, *_r) in enumerate(run):
            ty = elem(source, facts, arr)
            if not ty:
                return Refused(f"the element type of `{arr}` is not known")
            types.setdefault(ty, []).append(regs[k])
        lines = [f"const bool {f} = {guard};" for f, (_, guard, *_r) in zip(flags, run) if f]
        lines += [f"{ty} {', '.join(rs)};" for ty, rs in types.items()]
        for f, r, (_, _, arr, index, op, value) in zip(flags, regs, run):
            v = f"{arr}[{index}] {op} ({value})" if op else value
            lines.append((f"if ({f}) " if f else "") + f"{r} = {v};")
        for f, r, (_, _, arr, index, *_r) in zip(flags, regs, run):
            lines.append((f"if ({f}) " if f else "") + f"{arr}[{index}] = {r};")
        text = "\n".join(x if i == 0 else ind + x for i, x in enumerate(lines))
        return Rewrite((Edit(run[0][0].start_byte, run[-1][0].end_byte, text),), None,
                       f"{len(run)} updates: every value computed before the first store")


def _update(source: bytes, s: Node) -> tuple[str, str, str, str, str] | None:
    """(guard, array, index, op, value) of `if (guard) X[index] op= value;` (braces allowed) or `X[index] op= value;`."""
    guard = ""
    if s.type == "if_statement":
        cond, cons = s.child_by_field_name("condition"), s.child_by_field_name("consequence")
        if s.child_by_field_name("alternative") is not None or cond is None or cons is None:
            return None
        if cons.type == "compound_statement":
            inner = statements(cons)
            if len(inner) != 1:
                return None
            cons = inner[0]
        guard = src(source, cond).strip()
        guard = guard[1:-1].strip() if guard.startswith("(") and guard.endswith(")") else guard
        s = cons
    if s.type != "expression_statement":
        return None
    m = _ASSIGN.match(src(source, s))
    if m is None or "=" in re.sub(r"[=!<>]=", "", m.group(4)) or "++" in m.group(4) or "--" in m.group(4):
        return None
    return guard, m.group(1), m.group(2), m.group(3), m.group(4)
