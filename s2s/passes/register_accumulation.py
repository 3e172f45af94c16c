"""register-accumulation: accumulate in a register instead of read-modify-writing global memory each iteration.

`C[idx] += e` inside a loop whose variables `idx` does not depend on becomes `acc += e`, with
`T acc = C[idx];` before the loop (the output may not start at zero) and `C[idx] = acc;` after it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from s2s.lang.edits import Edit, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts

from ._common import fresh, indent_of, node_at

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = """\
__global__ void matmul(const float* A, const float* B, float* C, int n)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= n || col >= n) return;
    for (int k = 0; k < n; ++k) {
        C[row * n + col] += A[row * n + k] * B[k * n + col];
    }
}
"""
EXAMPLE_AFTER = """\
__global__ void matmul(const float* A, const float* B, float* C, int n)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= n || col >= n) return;
    float acc = C[row * n + col];
    for (int k = 0; k < n; ++k) {
        acc += A[row * n + k] * B[k * n + col];
    }
    C[row * n + col] = acc;
}
"""


@dataclass(frozen=True)
class RegisterAccumulation:
    name: ClassVar[str] = "register-accumulation"
    priority: ClassVar[int] = 100  # the built-in search's order: structural rewrites first
    space: ClassVar[tuple[str, ...]] = ("register-accumulation",)

    def applies(self, facts: KernelFacts) -> bool | str:
        if not facts.accumulations:
            return "no accumulation into a global array at a loop-invariant index inside a loop"
        return True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        acc = facts.accumulations[0]
        loop = facts.loops[acc.loop]
        inside = [s for s in facts.subscripts if loop.start <= s.start and s.end <= loop.end]
        mine = [s for s in inside if s.array == acc.array and s.index == acc.index]
        if any(s.array == acc.array and s.index != acc.index for s in inside):
            return Refused(f"{acc.array} is also accessed at other indices inside the loop")
        target = facts.param(acc.array)
        assert target is not None
        for s in inside:
            other = facts.param(s.array)
            if s.write and other is not None and other.name != acc.array and other.base_type == target.base_type \
                    and not (other.restrict and target.restrict):
                return Refused(f"{other.name} is written in the loop and may alias {acc.array}")
        body = source[loop.start : loop.end].decode("utf-8", "replace")
        if re.search(r"\b(return|goto)\b", body):
            return Refused("the loop can leave the kernel early (return/goto), so the final store could be skipped")
        if len(re.findall(rf"\b{re.escape(acc.array)}\b", body)) != len(mine):
            return Refused(f"{acc.array} is used in the loop other than through {acc.array}[{acc.index}]")
        node = node_at(source, facts, loop.start, loop.end, loop.kind)
        if node is None or node.parent is None or node.parent.type != "compound_statement":
            return Refused("the loop is not a statement of a block (no place for the register's declaration)")
        start = loop.start
        prev = node.prev_named_sibling
        if prev is not None and prev.type == "preproc_call":  # keep `#pragma unroll` next to its loop
            start = prev.start_byte
        name = fresh(facts, source, "acc")
        pad = indent_of(source, start)
        ref = f"{acc.array}[{acc.index}]"
        edits = [Edit(start, start, f"{target.base_type} {name} = {ref};\n{pad}")]
        edits += [Edit(s.start, s.end, name) for s in mine]
        edits.append(Edit(loop.end, loop.end, f"\n{pad}{ref} = {name};"))
        return Rewrite(tuple(edits), None, f"accumulate {ref} in register {name}")
