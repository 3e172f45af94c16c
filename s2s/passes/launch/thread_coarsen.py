"""thread-coarsen: each thread computes `factor` points along one axis, so a block covers `factor` times more.

The declaration `int k = blockIdx.z * blockDim.z + threadIdx.z;` and everything after it become a loop over
`factor` values of `k`; a `return` there becomes `continue`. Along y and z a thread takes consecutive
values (loads of a neighbour plane can be reused from registers by the unrolled loop); along x the
blocks stride by blockDim.x, so that neighbouring threads still touch neighbouring addresses. The grid
shrinks by `factor` along the axis (launch rule `coarsen-<axis>`).

With `jam=1` (passes/launch/_jam.py) the launch is kept instead: a block does the points of `factor` neighbouring blocks
and the kernel's one loop runs once for all of them, so what it loads is shared (Parboil's cp along x).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from tree_sitter import Node

from s2s.lang.edits import Edit, LaunchChange, Refused, Rewrite
from s2s.lang.kernel_facts import LOOPS, THREAD_BUILTIN, KernelFacts
from s2s.lang.parsing import src

from ..common.statements import BARRIERS, assigned, declared_before, declares, global_index, returns_only, uses_axis
from ..common.tree import body_node, fresh, indent_of, statements, walk
from ._jam import jam

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = """\
__global__ void smooth(const float* u, float* v, int nx, int nz)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int k = blockIdx.z * blockDim.z + threadIdx.z;
    if (i >= nx || k < 1 || k >= nz - 1) return;
    v[k * nx + i] = u[(k - 1) * nx + i] + u[(k + 1) * nx + i];
}
"""
EXAMPLE_AFTER = """\
__global__ void smooth(const float* u, float* v, int nx, int nz)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    #pragma unroll
    for (int cz = 0; cz < 4; ++cz) {
        int k = (blockIdx.z * blockDim.z + threadIdx.z) * 4 + cz;
        if (i >= nx || k < 1 || k >= nz - 1) continue;
        v[k * nx + i] = u[(k - 1) * nx + i] + u[(k + 1) * nx + i];
    }
}
"""


@dataclass(frozen=True)
class ThreadCoarsen:
    name: ClassVar[str] = "thread-coarsen"
    priority: ClassVar[int] = 150  # the built-in search's order: structural rewrites first
    space: ClassVar[tuple[str, ...]] = (
        "restrict-const,launch-config{block=32x8},thread-coarsen{axis=z factor=8}",
        "restrict-const,launch-config{block=64x4},thread-coarsen{axis=z factor=16}",
        "thread-coarsen{axis=z factor=4}",
        "thread-coarsen{axis=y factor=4}",
        "thread-coarsen{axis=x factor=8 jam=1}",
        "thread-coarsen{axis=x factor=4 jam=1}",
        "thread-coarsen{axis=y factor=4 jam=1}",
    )
    axis: str = "z"
    factor: int = 4
    jam: bool = False  # keep the launch, jam the points into the kernel's loop (see _jam.py)

    def applies(self, facts: KernelFacts) -> bool | str:
        if self.axis not in {"x", "y", "z"} or not 2 <= self.factor <= 16:
            return "axis must be x, y or z and factor 2-16"
        if facts.dialect == "opencl" and not self.jam:
            return "CUDA/HIP only (OpenCL's global size would have to be rewritten per axis)"
        if not facts.var_for(self.axis) and not self.jam:
            return f"no global index along {self.axis}"
        return True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        a, f = self.axis, self.factor
        if self.jam:
            if BARRIERS.search(source[facts.body_start:facts.body_end].decode("utf-8", "replace")) or facts.atomics:
                return Refused("barriers, shared memory, warp collectives, atomics or goto: threads of a block must stay in step")
            return jam(source, facts, a, f)
        var = facts.var_for(a)
        body = body_node(source, facts)
        stmts = statements(body)
        decl = next((s for s in stmts if s.type == "declaration" and declares(source, s) == var), None)
        init = decl.named_children[-1] if decl is not None else None
        value = init.child_by_field_name("value") if init is not None and init.type == "init_declarator" else None
        offset = ""  # `+ NG` of a ghost-cell offset: `k = blockIdx.z * blockDim.z + threadIdx.z + NG`
        if value is not None and value.type == "binary_expression" and not global_index(src(source, value), a):
            left, op, right = (value.child_by_field_name(field) for field in ("left", "operator", "right"))
            if (left is not None and op is not None and right is not None and src(source, op) in {"+", "-"}
                    and global_index(src(source, left), a) and not THREAD_BUILTIN.search(src(source, right))):
                offset, value = f" {src(source, op)} {src(source, right)}", left
        if decl is None or init is None or value is None or not global_index(src(source, value), a):
            return Refused(f"`{var}` is not declared at the top of the body as blockIdx.{a} * blockDim.{a} + threadIdx.{a}")
        end = body.end_byte - 1
        rest = source[decl.end_byte:end].rstrip()
        if BARRIERS.search(source[body.start_byte:end].decode("utf-8", "replace")):
            return Refused("barriers, shared memory, warp collectives or goto: threads of a block must stay in step")
        rest_text = rest.decode("utf-8", "replace")
        if uses_axis(rest_text, a):
            return Refused(f"the body uses blockIdx/threadIdx/blockDim/gridDim.{a} beyond the index: the block's extent matters")
        if assigned(var, rest_text):
            return Refused(f"`{var}` is assigned or its address taken after its declaration")
        for s in stmts:
            if s.start_byte >= decl.start_byte:
                break
            if not (s.type == "declaration" or (s.type == "if_statement" and returns_only(source, s))):
                return Refused("a statement before the index other than a declaration or `if (...) return;`: with fewer "
                               "threads it would run fewer times")
            if uses_axis(src(source, s), a):
                return Refused(f"blockIdx/threadIdx/blockDim/gridDim.{a} used before the index")
        carried = [n for n in declared_before(source, stmts, decl) if assigned(n, rest_text)]
        if carried:
            return Refused(f"`{carried[0]}` is declared before the index and changed after it: it would carry over between points")
        for ret in sorted(_returns(body, decl.end_byte), key=lambda n: -n.start_byte):
            if _inside_loop_or_switch(ret, body):
                return Refused("a return inside a loop or switch: it cannot become `continue`")
            if src(source, ret).replace(" ", "") != "return;":
                return Refused("a return with a value")
            lo, hi = ret.start_byte - decl.end_byte, ret.end_byte - decl.end_byte
            rest = rest[:lo] + b"continue;" + rest[hi:]
        ind = indent_of(source, decl.start_byte)
        c = fresh(facts, source, f"c{a}")
        kind = src(source, decl)[: init.start_byte - decl.start_byte].rstrip()
        idx = (f"(blockIdx.x * {f} + {c}) * blockDim.x + threadIdx.x" if a == "x"
               else f"(blockIdx.{a} * blockDim.{a} + threadIdx.{a}) * {f} + {c}") + offset
        text = (f"#pragma unroll\n{ind}for (int {c} = 0; {c} < {f}; ++{c}) {{\n{ind}    {kind} {var} = {idx};"
                + re.sub(r"\n(?=[^\n])", "\n    ", rest.decode("utf-8", "replace")) + f"\n{ind}}}")
        # the pragma starts its own line: the edit begins at the declaration's line start, or a new line
        line_start = source.rfind(b"\n", 0, decl.start_byte) + 1
        alone = not source[line_start:decl.start_byte].strip()
        start = line_start if alone else decl.start_byte
        edit = Edit(start, decl.end_byte + len(source[decl.end_byte:end].rstrip()), (ind if alone else "\n") + text)
        return Rewrite((edit,), LaunchChange(None, f"coarsen-{a}", per_item=f), f"{f} points per thread along {a}")


def _returns(body: Node, after: int) -> list[Node]:
    return [n for n in walk(body, descend=lambda n: n.type != "lambda_expression")
            if n.type == "return_statement" and n.start_byte >= after]


def _inside_loop_or_switch(node: Node, body: Node) -> bool:
    p = node.parent
    while p is not None and p != body:
        if p.type in LOOPS or p.type == "switch_statement":
            return True
        p = p.parent
    return False
