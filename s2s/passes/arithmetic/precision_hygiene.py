"""precision-hygiene: keep float kernels in float: `1.0` -> `1.0f`, `sqrt(` -> `sqrtf(` and kin.

Only kernels whose floating data is float and that never name `double`; OpenCL math is overloaded, so
there only literals change.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from s2s.lang.edits import Edit, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts

from ..common.tree import body_node, text, walk

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = """\
__global__ void damp(float* v, const float* e, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] = 0.5 * v[i] * exp(-e[i]) + sqrt(1.0 + e[i] * 2e-3);
}
"""
EXAMPLE_AFTER = """\
__global__ void damp(float* v, const float* e, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] = 0.5f * v[i] * expf(-e[i]) + sqrtf(1.0f + e[i] * 2e-3f);
}
"""
_DOUBLE_LITERAL = re.compile(r"^(\d+\.\d*|\.\d+|\d+(\.\d*)?[eE][+-]?\d+|\.\d+[eE][+-]?\d+)$")
_MATH = {"sqrt", "exp", "log", "sin", "cos", "tan", "pow", "fabs", "floor", "ceil", "fmin", "fmax", "exp2", "log2",
         "log10", "tanh", "atan", "atan2", "asin", "acos", "sinh", "cosh", "cbrt", "fmod", "erf", "hypot", "rsqrt"}


@dataclass(frozen=True)
class PrecisionHygiene:
    name: ClassVar[str] = "precision-hygiene"
    WHY_IT_EXISTS: ClassVar[str] = "float kernels computing in double through `1.0` or `sqrt(` spellings"
    priority: ClassVar[int] = 130  # the built-in search's order: structural rewrites first
    acts_on: ClassVar[str] = "compute"  # what the model cannot see it change: single- instead of double-precision arithmetic
    space: ClassVar[tuple[str, ...]] = ("precision-hygiene",)

    def applies(self, facts: KernelFacts) -> bool | str:
        if facts.element_type != "float":
            return "only for kernels whose floating-point data is float"
        return True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        if re.search(rb"\bdouble\b", source[facts.start : facts.end]):
            return Refused("the kernel names double: its double arithmetic may be deliberate")
        edits: list[Edit] = []
        for n in walk(body_node(source, facts)):
            if n.type == "number_literal" and _DOUBLE_LITERAL.match(text(source, n)):
                edits.append(Edit(n.end_byte, n.end_byte, "f"))
            elif n.type == "call_expression" and facts.dialect != "opencl":
                fn = n.child_by_field_name("function")
                if fn is not None and fn.type == "identifier" and text(source, fn) in _MATH:
                    edits.append(Edit(fn.end_byte, fn.end_byte, "f"))
        if not edits:
            return Refused("no double literal or double math call in the kernel")
        return Rewrite(tuple(edits), None, f"{len(edits)} literals/calls kept in single precision")
