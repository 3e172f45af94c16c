"""normalize: the kernel's canonical form (s2s/lang/normal_form.py), the first step of pipelines that match a computation.

Exact rewrites that change the spelling, not the computation: single-statement bodies braced, loop counters
declared by their loops, scalars declared by their first assignment (C89's `int t, i; t = ...; i = t % n;`),
accumulation into memory inside a loop moved into a register. Alone it is the kernel register-accumulation gives;
the search puts it in front of passes that read the canonical form (`normalize,split-reduction`:
`int j; if (i < n) for (j = 0; j < n; j++) tmp[i] += A[i*n+j] * x[j];`), and tries such a step only where the pass
refuses the kernel as written (s2s.optimize.proposers.builtin).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from s2s.lang.edits import Edit, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts
from s2s.lang.normal_form import normalize

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = """\
__global__ void mv(const float* A, const float* x, float* tmp, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j;
    if (i < n)
        for (j = 0; j < n; j++)
            tmp[i] += A[i * n + j] * x[j];
}
"""
EXAMPLE_AFTER = """\
__global__ void mv(const float* A, const float* x, float* tmp, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float acc = tmp[i];
        for (int j = 0; j < n; j++) {
            acc += A[i * n + j] * x[j];
        }
        tmp[i] = acc;
    }
}
"""


@dataclass(frozen=True)
class Normalize:
    name: ClassVar[str] = "normalize"
    WHY_IT_EXISTS: ClassVar[str] = "the canonical form canonical passes are tried behind where they refuse the text"
    priority: ClassVar[int] = 1000
    space: ClassVar[tuple[str, ...]] = ()  # alone it is register-accumulation's rewrite: only a prefix of other steps
    normalizes: ClassVar[bool] = True  # the proposer tries `normalize,X` only where X refuses the kernel as written

    def applies(self, facts: KernelFacts) -> bool | str:
        return True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        out = normalize(source, facts.dialect, facts.name)
        if isinstance(out, str):
            return Refused(f"the kernel is in canonical form already ({out})")
        end = facts.end + len(out.text) - len(source)
        return Rewrite((Edit(facts.start, facts.end, out.text[facts.start:end].decode()),), None, "; ".join(out.notes))
