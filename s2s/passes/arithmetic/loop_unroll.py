"""loop-unroll: `#pragma unroll F` before each innermost `for` loop (nvcc, hipcc and clang-based OpenCL read it)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from s2s.lang.edits import Edit, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts

from ..common.tree import indent_of

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = """\
__global__ void rowsum(const float* A, float* s, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc = 0.0f;
    for (int j = 0; j < n; ++j)
        acc += A[i * n + j];
    s[i] = acc;
}
"""
EXAMPLE_AFTER = """\
__global__ void rowsum(const float* A, float* s, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc = 0.0f;
    #pragma unroll 4
    for (int j = 0; j < n; ++j)
        acc += A[i * n + j];
    s[i] = acc;
}
"""


@dataclass(frozen=True)
class LoopUnroll:
    name: ClassVar[str] = "loop-unroll"
    priority: ClassVar[int] = 160  # the built-in search's order: structural rewrites first
    acts_on: ClassVar[str] = "compute"  # what the model cannot see it change: fewer branch and index instructions, more independent arithmetic in flight
    space: ClassVar[tuple[str, ...]] = ("loop-unroll{factor=4}",)
    factor: int = 4

    def applies(self, facts: KernelFacts) -> bool | str:
        if self.factor not in {2, 4, 8, 16}:
            return "factor must be 2, 4, 8 or 16"
        if not any(loop.innermost and loop.kind == "for_statement" for loop in facts.loops):
            return "no innermost for loop"
        return True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        edits = []
        for loop in facts.loops:
            if not (loop.innermost and loop.kind == "for_statement"):
                continue
            line_start = source.rfind(b"\n", 0, loop.start) + 1
            before = source[source.rfind(b"\n", 0, max(line_start - 1, 0)) + 1 : line_start]
            if b"#pragma" in before or source[line_start : loop.start].strip():
                continue  # already annotated, or the loop does not start its line (an unbraced if/else body)
            edits.append(Edit(line_start, line_start, f"{indent_of(source, loop.start)}#pragma unroll {self.factor}\n"))
        if not edits:
            return Refused("every innermost loop already has a pragma or does not start its own line")
        return Rewrite(tuple(edits), None, f"unroll innermost loops by {self.factor}")
