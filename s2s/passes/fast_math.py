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
A helper defined in the kernel file is not changed in place (the application calls it elsewhere): a
copy named `<helper>_fast` is added before the kernel and the kernel calls the copy.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from tree_sitter import Node

from s2s.lang.edits import Edit, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts
from s2s.lang.parsing import parse, src

from ._common import insert_before_kernel, text, walk

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
FAST = {"expf": "__expf", "logf": "__logf", "sinf": "__sinf", "cosf": "__cosf"}
_ONE = re.compile(r"1(?:\.0*)?[fF]|1\.0*[fF]?")


@dataclass(frozen=True)
class FastMath:
    name: ClassVar[str] = "fast-math"
    priority: ClassVar[int] = 140  # the built-in search's order: structural rewrites first
    space: ClassVar[tuple[str, ...]] = ("fast-math",)

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
        edits = _fast_edits(source, kernel)
        copies: list[str] = []
        for name, fn in helpers.items():
            inner = _fast_edits(source, fn)
            if not inner:
                continue
            fast = name + "_fast"
            if re.search(rb"\b" + re.escape(fast.encode()) + rb"\b", source):
                return Refused(f"`{fast}` exists already")
            decl = fn.child_by_field_name("declarator")
            ident = _name_node(decl)
            if ident is None:
                continue
            inner.append(Edit(ident.start_byte, ident.end_byte, fast))
            guard = "S2S_FAST_" + re.sub(r"\W", "_", fast).upper()  # once per translation unit
            copies.append(f"#ifndef {guard}\n#define {guard}\n{_apply(source, fn.start_byte, fn.end_byte, inner)}\n#endif")
            edits += [Edit(c.start_byte, c.end_byte, fast) for c in _calls(kernel, source, name)]
        if not edits:
            return Refused("no x / sqrtf(y), expf, logf, sinf or cosf (or exp/log/sin/cos/sqrt of a float) in the kernel or the helpers it calls")
        if copies:
            edits.append(insert_before_kernel(source, facts, "\n\n".join(copies)))
        sites = sum(1 for e in edits if e.text and e.text not in {"*", "*="}) - (1 if copies else 0)  # one name per site
        return Rewrite(tuple(edits), None, f"fast intrinsics ({sites} sites, {len(copies)} helper copies)")


def _sqrt_call(source: bytes, fn: Node, n: Node | None) -> Node | None:
    """The single-precision square root call that `n` is (inside any parentheses), else None."""
    while n is not None and n.type == "parenthesized_expression" and n.named_child_count == 1:
        n = n.named_children[0]
    if n is None or n.type != "call_expression":
        return None
    f = n.child_by_field_name("function")
    name = src(source, f) if f is not None and f.type == "identifier" else ""
    return n if name == "sqrtf" or (name == "sqrt" and _float_argument(source, fn, n)) else None


def _divide(source: bytes, n: Node) -> tuple[Node, Node, Node] | None:
    """(left, operator, right) of a division, `a / b` or `a /= b`."""
    if n.type not in {"binary_expression", "assignment_expression"}:
        return None
    op, left, right = (n.child_by_field_name(f) for f in ("operator", "left", "right"))
    if op is None or left is None or right is None or text(source, op) not in {"/", "/="}:
        return None
    return left, op, right


def _reciprocal(source: bytes, left: Node, op: Node, right: Node, call: Node) -> list[Edit]:
    """`a / sqrtf(x)` -> `a * rsqrtf(x)`, `a /= ...` -> `a *= ...`; `1.0f / sqrtf(x)` -> `rsqrtf(x)`."""
    f = call.child_by_field_name("function")
    assert f is not None
    rename = Edit(f.start_byte, f.end_byte, "rsqrtf")
    if text(source, op) == "/" and _ONE.fullmatch(src(source, left).strip()):
        return [Edit(left.start_byte, right.start_byte, ""), rename]
    return [Edit(op.start_byte, op.end_byte, "*" + text(source, op)[1:]), rename]


def _fast_edits(source: bytes, fn: Node) -> list[Edit]:
    edits = _divisor_locals(source, fn)
    for n in walk(fn.child_by_field_name("body") or fn):
        division = _divide(source, n)
        sqrt_call = _sqrt_call(source, fn, division[2]) if division is not None else None
        if division is not None and sqrt_call is not None:
            edits += _reciprocal(source, *division, sqrt_call)
        elif n.type == "call_expression":
            f = n.child_by_field_name("function")
            name = src(source, f) if f is not None and f.type == "identifier" else ""
            if name in FAST:
                edits.append(Edit(f.start_byte, f.end_byte, FAST[name]))  # type: ignore[union-attr]
            elif name + "f" in FAST and _float_argument(source, fn, n):  # C++'s float overload: cos(float) is cosf
                edits.append(Edit(f.start_byte, f.end_byte, FAST[name + "f"]))  # type: ignore[union-attr]
    return edits


_DECLARATORS = {"init_declarator", "declaration", "parameter_declaration", "pointer_declarator", "array_declarator",
                "reference_declarator", "for_range_loop"}


def _divisor_locals(source: bytes, fn: Node) -> list[Edit]:
    """`float r = sqrtf(x);` whose every other use is a divisor (`m / r`, `a /= r`): `rsqrtf` and `*` instead.
    A name declared more than once in the function (a parameter, a shadowing local) or used otherwise is left."""
    body = fn.child_by_field_name("body")
    if body is None:
        return []
    names = [n for n in walk(fn) if n.type == "identifier"]
    declared = [n for n in names if n.parent is not None and n.parent.type in _DECLARATORS
                and _same(n.parent.child_by_field_name("declarator"), n)]
    edits: list[Edit] = []
    for decl in walk(body):
        if decl.type != "declaration" or text(source, decl.child_by_field_name("type")) != "float":
            continue
        for d in decl.children_by_field_name("declarator"):
            ident, call = d.child_by_field_name("declarator"), _sqrt_call(source, fn, d.child_by_field_name("value"))
            if d.type != "init_declarator" or ident is None or ident.type != "identifier" or call is None:
                continue
            name = src(source, ident)
            if sum(src(source, n) == name for n in declared) != 1:
                continue
            uses = [_divisor(source, n) for n in names if src(source, n) == name and not _same(n, ident)]
            if not uses or any(u is None for u in uses):
                continue
            f = call.child_by_field_name("function")
            assert f is not None
            edits.append(Edit(f.start_byte, f.end_byte, "rsqrtf"))
            edits += [Edit(op.start_byte, op.end_byte, "*" + text(source, op)[1:]) for op in uses if op is not None]
    return edits


def _divisor(source: bytes, n: Node) -> Node | None:
    """The operator of the division whose divisor `n` is (inside any parentheses), else None."""
    while n.parent is not None and n.parent.type == "parenthesized_expression":
        n = n.parent
    division = _divide(source, n.parent) if n.parent is not None else None
    return division[1] if division is not None and _same(division[2], n) else None


def _same(a: Node | None, b: Node | None) -> bool:
    return a is not None and b is not None and (a.start_byte, a.end_byte, a.type) == (b.start_byte, b.end_byte, b.type)


def _float_argument(source: bytes, fn: Node, call: Node) -> bool:
    """Whether the call's one argument is single precision: a float literal, or a name the function declares `float`
    (`float expArg = ...; cos(expArg)`, as Parboil's mri-q writes it)."""
    args = call.child_by_field_name("arguments")
    items = [c for c in args.named_children if c.type != "comment"] if args is not None else []
    if len(items) != 1:
        return False
    arg = src(source, items[0]).strip()
    if re.fullmatch(r"[0-9.]+(?:[eE][-+]?\d+)?[fF]", arg):
        return True
    if not re.fullmatch(r"[A-Za-z_]\w*", arg):
        return False
    body = src(source, fn)
    return re.search(r"\bfloat\s+(?:[\w\s=+\-*/().\[\]]*,\s*)?" + arg + r"\s*[=;,)\[]", body) is not None


def _helpers(root: Node, source: bytes, kernel: Node) -> dict[str, Node]:
    """Device functions defined at the top level of the file and called by the kernel (not templates)."""
    defined: dict[str, Node] = {}
    for n in root.named_children:
        if n.type == "function_definition" and n is not kernel and b"__global__" not in source[n.start_byte:n.end_byte].split(b"(")[0]:
            ident = _name_node(n.child_by_field_name("declarator"))
            if ident is not None:
                defined[src(source, ident)] = n
    return {name: fn for name, fn in defined.items() if _calls(kernel, source, name)}


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
