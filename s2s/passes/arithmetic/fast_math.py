"""fast-math: single-precision math in the kernel, and in the device helpers it calls, through the fast intrinsics.

`1.0f / sqrtf(x)` becomes `rsqrtf(x)` and any `a / sqrtf(x)` becomes `a * rsqrtf(x)` (`a /= sqrtf(x)`:
`a *= rsqrtf(x)`): one MUFU.RSQ and a multiply instead of a rounded square root and a rounded division, tens of
instructions with their slow paths (an n-body potential `p -= m[j] / sqrtf(r2)` runs on nothing else). Only two tokens
change (`/` to `*`, `sqrtf` to `rsqrtf`): `*` binds as `/` does, so the expression around keeps its parse. A float local
of a square root used only as a divisor (`float r = sqrtf(r2); ... m / r`) holds the reciprocal instead
(`float r = rsqrtf(r2); ... m * r`); one used any other way, assigned again or declared twice in the function is left.
`sqrt` of a float (C++'s overload) counts as `sqrtf`; the double `sqrt` never. `expf`, `logf`, `sinf`, `cosf` become
`__expf`, `__logf`, `__sinf`, `__cosf`. `powf` is left alone: `__powf` is NaN for every negative base, which generated
inputs may never show.
These are approximations (a few ulp; `__sinf`/`__cosf` lose accuracy far from zero): the variant is
held to the MEP's tolerances like any other, and a kernel that needs the exact functions fails there.
`tanhf` becomes `s2s_tanhf`, the special-function unit's `tanh.approx.f32` on sm_75 and later (the exact `tanhf`
elsewhere and on HIP); `sincosf`, `tanf`, `exp10f`, `log2f` and `log10f` their `__` intrinsics.
A helper defined in the kernel file is not changed in place (the application calls it elsewhere): a
copy named `<helper>_fast` is added before the kernel and the kernel calls the copy. Helpers are followed through
helpers (`energy` calling `dist` calling `SQRT`, each only a wrapper): a helper is copied when it or a helper it calls
has something to change, and every overload of a name is copied together (`SQRT(float)` with `SQRT(double)`, the double
one unchanged), so each call still resolves to the overload it did, now a copy.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from tree_sitter import Node

from s2s.lang.edits import Edit, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts
from s2s.lang.parsing import parse, src

from ..common.tree import insert_before_kernel, walk
from ._rsqrt import divisor_locals, float_argument, sqrt_division

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = """\
__device__ float kernel_w(float r2, float h) { return expf(-r2 / (h * h)); }

__global__ void field(const float4* p, float* phi, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float s = 0.0f;
    for (int j = 0; j < n; ++j) {
        float dx = p[j].x - p[i].x, dy = p[j].y - p[i].y;
        float r2 = dx * dx + dy * dy + 1e-4f;
        s += p[j].w * kernel_w(r2, 0.5f) / sqrtf(r2);
    }
    phi[i] = s;
}
"""
EXAMPLE_AFTER = """\
__device__ float kernel_w(float r2, float h) { return expf(-r2 / (h * h)); }

#ifndef S2S_FAST_KERNEL_W_FAST
#define S2S_FAST_KERNEL_W_FAST
__device__ float kernel_w_fast(float r2, float h) { return __expf(-r2 / (h * h)); }
#endif

__global__ void field(const float4* p, float* phi, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float s = 0.0f;
    for (int j = 0; j < n; ++j) {
        float dx = p[j].x - p[i].x, dy = p[j].y - p[i].y;
        float r2 = dx * dx + dy * dy + 1e-4f;
        s += p[j].w * kernel_w_fast(r2, 0.5f) * rsqrtf(r2);
    }
    phi[i] = s;
}
"""
FAST = {"expf": "__expf", "logf": "__logf", "sinf": "__sinf", "cosf": "__cosf", "sincosf": "__sincosf", "tanf": "__tanf",
        "exp10f": "__exp10f", "log2f": "__log2f", "log10f": "__log10f", "tanhf": "s2s_tanhf"}
TANH = "s2s_tanhf"  # defined by the rewrite (TANH_DEFINITION) where a call uses it
TANH_DEFINITION = """\
#ifndef S2S_FAST_TANHF
#define S2S_FAST_TANHF
__device__ __forceinline__ float s2s_tanhf(float x)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
    float y;
    asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
#else
    return tanhf(x);
#endif
}
#endif"""


@dataclass(frozen=True)
class FastMath:
    name: ClassVar[str] = "fast-math"
    priority: ClassVar[int] = 140  # the built-in search's order: structural rewrites first
    acts_on: ClassVar[str] = "compute"  # what the model cannot see it change: the special-function unit instead of library code
    # an all-pairs loop (nbody_soa, H200: 3.07x against 2.26x alone and 1.30x for the tiling alone) tries the tiled form in round 1
    space: ClassVar[tuple[str, ...]] = ("fast-math,smem-allpairs{tile=256}", "fast-math",
                                        "fast-math,smem-allpairs{tile=512},allpairs-bodies{bodies=4 skip=subtract},allpairs-pack,"
                                        "allpairs-lanes{lanes=8},loop-unroll{factor=4}")

    def applies(self, facts: KernelFacts) -> bool | str:
        if facts.dialect == "opencl":
            return "CUDA/HIP intrinsics (OpenCL has native_* functions; not done here)"
        return True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        root = parse(source, facts.dialect).root_node
        kernel = root.descendant_for_byte_range(facts.body_start, facts.body_end)
        while kernel is not None and kernel.type != "function_definition":
            kernel = kernel.parent
        if kernel is None:
            return Refused("kernel definition not found")
        helpers = _helpers(root, source, kernel)
        inner = {name: [_fast_edits(source, fn) for fn in fns] for name, fns in helpers.items()}
        copied = _to_copy(source, helpers, inner)
        edits = _fast_edits(source, kernel) + [Edit(c.start_byte, c.end_byte, name + "_fast")
                                               for name in copied for c in _calls(kernel, source, name)]
        copies: list[tuple[int, str]] = []
        for name in copied:
            fast = name + "_fast"
            if re.search(rb"\b" + re.escape(fast.encode()) + rb"\b", source):
                return Refused(f"`{fast}` exists already")
            guard = "S2S_FAST_" + re.sub(r"\W", "_", fast).upper()  # once per translation unit
            for k, fn in enumerate(helpers[name]):
                ident = _name_node(fn.child_by_field_name("declarator"))
                if ident is None:
                    return Refused(f"the name of helper `{name}` is not found")
                mine = inner[name][k] + [Edit(ident.start_byte, ident.end_byte, fast)]
                mine += [Edit(c.start_byte, c.end_byte, callee + "_fast") for callee in copied for c in _calls(fn, source, callee)]
                once = guard if len(helpers[name]) == 1 else f"{guard}_{k}"
                copies.append((fn.start_byte, f"#ifndef {once}\n#define {once}\n{_apply(source, fn.start_byte, fn.end_byte, mine)}\n#endif"))
        if not edits:
            return Refused("no x / sqrtf(y), expf, logf, sinf, cosf, tanhf, sincosf (or exp/log/sin/cos/sqrt/tanh of a float) "
                           "in the kernel or the helpers it calls")
        uses_tanh = any(e.text == TANH for e in edits) or any(TANH in c for _, c in copies)
        if copies or uses_tanh:  # callees before callers: the file's own order of definition
            items = [TANH_DEFINITION] * uses_tanh + [c for _, c in sorted(copies)]
            edits.append(insert_before_kernel(source, facts, "\n\n".join(items)))
        sites = sum(1 for e in edits if e.text and e.text not in {"*", "*="}) - (1 if copies or uses_tanh else 0)  # one name per site
        return Rewrite(tuple(edits), None, f"fast intrinsics ({sites} sites, {len(copies)} helper copies)")


def _fast_edits(source: bytes, fn: Node) -> list[Edit]:
    edits = divisor_locals(source, fn)
    for n in walk(fn.child_by_field_name("body") or fn):
        if divided := sqrt_division(source, fn, n):
            edits += divided
        elif n.type == "call_expression":
            f = n.child_by_field_name("function")
            name = src(source, f) if f is not None and f.type == "identifier" else ""
            if name in FAST:
                edits.append(Edit(f.start_byte, f.end_byte, FAST[name]))  # type: ignore[union-attr]
            elif name + "f" in FAST and float_argument(source, fn, n):  # C++'s float overload: cos(float) is cosf
                edits.append(Edit(f.start_byte, f.end_byte, FAST[name + "f"]))  # type: ignore[union-attr]
    return edits


def _helpers(root: Node, source: bytes, kernel: Node) -> dict[str, list[Node]]:
    """Device functions defined at the top level of the file (not templates) that the kernel calls, directly or through
    one another, each name with every definition of it (its overloads)."""
    defined: dict[str, list[Node]] = {}
    for n in root.named_children:
        if n.type == "function_definition" and n is not kernel and b"__global__" not in source[n.start_byte:n.end_byte].split(b"(")[0]:
            ident = _name_node(n.child_by_field_name("declarator"))
            if ident is not None:
                defined.setdefault(src(source, ident), []).append(n)
    reached: dict[str, list[Node]] = {}
    todo = [kernel]
    while todo:
        fn = todo.pop()
        for name, fns in defined.items():
            if name not in reached and _calls(fn, source, name):
                reached[name] = fns
                todo += fns
    return reached


def _to_copy(source: bytes, helpers: dict[str, list[Node]], inner: dict[str, list[list[Edit]]]) -> list[str]:
    """The helpers that need a fast copy: those with an edit of their own, then every helper calling one of those."""
    copied = {name for name, per in inner.items() if any(per)}
    grew = True
    while grew:
        grew = False
        for name, fns in helpers.items():
            if name not in copied and any(_calls(fn, source, c) for fn in fns for c in copied):
                copied.add(name)
                grew = True
    return sorted(copied)


def _calls(fn: Node, source: bytes, name: str) -> list[Node]:
    """The function names of the calls of `name` in `fn`'s body."""
    return [f for n in walk(fn.child_by_field_name("body") or fn) if n.type == "call_expression"
            for f in [n.child_by_field_name("function")] if f is not None and f.type == "identifier" and src(source, f) == name]


def _name_node(decl: Node | None) -> Node | None:
    while decl is not None and decl.type not in {"identifier", "field_identifier"}:
        decl = decl.child_by_field_name("declarator")
    return decl


def _apply(source: bytes, start: int, end: int, edits: list[Edit]) -> str:
    chunk = source[start:end]
    for e in sorted(edits, key=lambda e: -e.start):
        chunk = chunk[: e.start - start] + e.text.encode() + chunk[e.end - start:]
    return chunk.decode("utf-8", "replace")
