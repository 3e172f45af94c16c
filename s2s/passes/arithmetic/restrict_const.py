"""restrict-const: `const` and `__restrict__` (OpenCL: `restrict`) on pointer parameters.

Read-only pointers get `const` and the restrict qualifier. Written pointers get the qualifier only
with `assume_distinct` (the default): in an MEP every pointer parameter is its own buffer.
`ldg` also routes reads of read-only float/int arrays through `__ldg` (CUDA only).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from s2s.lang.edits import Edit, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts
from s2s.lang.kernel_model import kernel_model
from s2s.lang.macros import function_macros

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = """\
__global__ void axpy(float* x, float* y, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""
EXAMPLE_AFTER = """\
__global__ void axpy(const float* __restrict__ x, float* __restrict__ y, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""
_LDG_TYPES = {"float", "double", "int", "unsigned", "unsigned int", "char", "short", "long", "long long", "float2", "float4", "int2", "int4"}


@dataclass(frozen=True)
class RestrictConst:
    name: ClassVar[str] = "restrict-const"
    priority: ClassVar[int] = 120  # the built-in search's order: structural rewrites first
    acts_on: ClassVar[str] = "memory"  # what the model cannot see it change: loads through the read-only data path: the bytes' latency, not the arithmetic
    space: ClassVar[tuple[str, ...]] = ("restrict-const",)
    assume_distinct: bool = True
    ldg: bool = False

    def applies(self, facts: KernelFacts) -> bool | str:
        if not any(p.pointer for p in facts.params):
            return "no pointer parameters"
        if self.ldg and facts.dialect == "opencl":
            return "__ldg is CUDA/HIP only"
        return True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        word = "restrict" if facts.dialect == "opencl" else "__restrict__"
        written = _written(source, facts)
        edits: list[Edit] = []
        for p in facts.params:
            if not p.pointer or p.star_end < 0:
                continue
            if p.name not in written and not p.const and "*" in p.type and p.type.count("*") == 1:
                edits.append(Edit(p.start, p.start, "const "))
            if not p.restrict and (p.name not in written or self.assume_distinct):
                glued = source[p.star_end:p.star_end + 1].isalnum() or source[p.star_end:p.star_end + 1] == b"_"
                edits.append(Edit(p.star_end, p.star_end, f" {word}" + (" " if glued else "")))  # `float *A`: keep A apart
        if self.ldg:
            readonly = {p.name for p in facts.params if p.pointer and p.name not in written and p.base_type in _LDG_TYPES}
            for s in facts.subscripts:
                if s.array in readonly and not s.write:
                    edits.append(Edit(s.start, s.start, "__ldg(&"))
                    edits.append(Edit(s.end, s.end, ")"))
        if not edits:
            return Refused("pointer parameters are already const/restrict where allowed")
        return Rewrite(tuple(edits), None, f"const/{word} on pointer parameters" + (", __ldg reads" if self.ldg else ""))


def _written(source: bytes, facts: KernelFacts) -> set[str]:
    """Pointer parameters the kernel writes: the facts' own reading, plus the kernel model's, which also sees writes
    through function-like macros (`#define Y(i) y[(i) * incy]`, `Y(i) = ...`)."""
    out = {p.name for p in facts.params if p.written}
    model = kernel_model(source, facts.dialect, facts.name)
    if model is None:  # without the model, a pointer that reaches a macro call could be written there: keep it as is
        return out | {p.name for p in facts.params if p.pointer and function_macros(source)}
    return out | {a.array for a in model.accesses if a.write}
