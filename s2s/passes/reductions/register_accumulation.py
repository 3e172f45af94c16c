"""register-accumulation: accumulate in a register instead of read-modify-writing global memory each iteration.

`C[idx] += e` inside a loop whose variables `idx` does not depend on becomes `acc += e`, with
`T acc = C[idx];` before the loop (the output may not start at zero) and `C[idx] = acc;` after it; where the kernel
stores `C[idx] = v;` just before the loop, the register starts from `v`. Every such target of the kernel is moved
(lang/register_accumulator.py; a loop under an unbraced guard gets braces where that is what stops it). Bit-identical: the same additions in the
same order, in the element's own type.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from s2s.lang.edits import Edit, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts
from s2s.lang.normal_form import braced_bodies, normalize, register_accumulators

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
    WHY_IT_EXISTS: ClassVar[str] = "`C[i] += ...` read-modify-written in global memory inside a loop (naive gemv/gemm)"
    priority: ClassVar[int] = 100  # the built-in search's order: structural rewrites first
    space: ClassVar[tuple[str, ...]] = ("register-accumulation",)

    def applies(self, facts: KernelFacts) -> bool | str:
        if not facts.accumulations:
            return "no accumulation into a global array at a loop-invariant index inside a loop"
        return True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        out = normalize(source, facts.dialect, facts.name, (register_accumulators,))
        if isinstance(out, str):  # a loop as the whole body of a guard: braces make room for the register
            out = normalize(source, facts.dialect, facts.name, (braced_bodies, register_accumulators))
        if isinstance(out, str) or "register_accumulators" not in out.rules:
            why = register_accumulators(source, facts.dialect, facts.name) if not isinstance(out, str) else out
            return Refused(why if isinstance(why, str) else "no accumulation moves into a register")
        end = facts.end + len(out.text) - len(source)  # the rules change the kernel only
        return Rewrite((Edit(facts.start, facts.end, out.text[facts.start:end].decode()),), None, "; ".join(out.notes))
