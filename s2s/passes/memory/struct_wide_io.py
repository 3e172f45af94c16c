"""struct-wide-io: whole-structure loads and stores (`Particle q = parts[i];`, `parts[i] = q;`) as 16- or 8-byte words.

A structure of floats has 4-byte alignment, so the compiler moves it one 4-byte word at a time: a warp
reading 32-byte structures issues eight strided loads, and eight partial-sector stores. The helper
`s2s_wide_io<T>` moves it in float4 (or float2) words when sizeof(T) allows; the address is checked at
run time and a misaligned one takes the plain copy, so a pointer into the middle of an array stays right.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from tree_sitter import Node

from s2s.lang.edits import Edit, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts
from s2s.lang.parsing import src

from ..common.tree import body_node, insert_before_kernel, text, walk

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = """\
struct Body { float x, y, z, m; };

__global__ void drift(Body* b, float dt, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Body q = b[i];
    q.z += dt * q.m;
    b[i] = q;
}
"""
HELPER = """\
/* s2s struct-wide-io: a structure moved in 16- or 8-byte words when its size and address allow */
#ifndef S2S_WIDE_IO_DEFINED /* once per translation unit, whichever files of it receive a copy */
#define S2S_WIDE_IO_DEFINED
template <int W> struct s2s_word;
template <> struct s2s_word<16> { typedef float4 type; };
template <> struct s2s_word<8> { typedef float2 type; };
template <typename T, int W = (sizeof(T) % 16 == 0 ? 16 : (sizeof(T) % 8 == 0 ? 8 : 0))>
struct s2s_wide_io {
    typedef typename s2s_word<W>::type word;
    union words { word w[sizeof(T) / W]; T t; };
    static __device__ __forceinline__ T load(const T* p)
    {
        if (reinterpret_cast<unsigned long long>(p) % W) return *p;
        words u;
        const word* s = reinterpret_cast<const word*>(p);
#pragma unroll
        for (int i = 0; i < (int)(sizeof(T) / W); ++i) u.w[i] = s[i];
        return u.t;
    }
    static __device__ __forceinline__ void store(T* p, const T& v)
    {
        if (reinterpret_cast<unsigned long long>(p) % W) { *p = v; return; }
        words u;
        u.t = v;
        word* d = reinterpret_cast<word*>(p);
#pragma unroll
        for (int i = 0; i < (int)(sizeof(T) / W); ++i) d[i] = u.w[i];
    }
};
template <typename T>
struct s2s_wide_io<T, 0> {
    static __device__ __forceinline__ T load(const T* p) { return *p; }
    static __device__ __forceinline__ void store(T* p, const T& v) { *p = v; }
};
#endif

"""
EXAMPLE_AFTER = EXAMPLE_BEFORE.replace("__global__", HELPER + "__global__").replace(
    "Body q = b[i];", "Body q = s2s_wide_io<Body>::load(b + (i));").replace("b[i] = q;", "s2s_wide_io<Body>::store(b + (i), q);")
_BUILTIN = re.compile(r"(?:unsigned\s+|signed\s+)?(?:u?char|u?short|u?int|u?long|longlong|ulonglong|float|double|half|bool|"
                      r"size_t|long\s+long|long\s+double|__half|__nv_bfloat16|u?int\d+_t)\d?")


@dataclass(frozen=True)
class StructWideIo:
    name: ClassVar[str] = "struct-wide-io"
    WHY_IT_EXISTS: ClassVar[str] = "whole structures of floats moved one 4-byte word at a time (particles, bodies)"
    priority: ClassVar[int] = 90  # the built-in search's order: structural rewrites first
    space: ClassVar[tuple[str, ...]] = ("struct-wide-io",)

    def applies(self, facts: KernelFacts) -> bool | str:
        if facts.dialect == "opencl":
            return "CUDA/HIP only"
        if not any(p.pointer and not _BUILTIN.fullmatch(p.base_type) for p in facts.params):
            return "no pointer to a structure among the parameters"
        return True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        structs = {p.name: p.base_type for p in facts.params
                   if p.pointer and not _BUILTIN.fullmatch(p.base_type) and p.type.count("*") == 1
                   and re.search(rb"\b(?:struct|class)\s+" + re.escape(p.base_type.encode()) + rb"\b\s*[{:]|}\s*"
                                 + re.escape(p.base_type.encode()) + rb"\s*;", source)}
        if not structs:
            return Refused("the structure pointed to is not defined in the kernel file (a template parameter or an opaque type)")
        edits: list[Edit] = []
        for node in walk(body_node(source, facts)):
            if node.type == "init_declarator":
                value = node.child_by_field_name("value")
                decl = node.parent
                ty = decl.child_by_field_name("type") if decl is not None else None
                arr = _struct_subscript(source, value, structs)
                if arr and ty is not None and src(source, ty) in (structs[arr], "auto") and node.child_by_field_name("declarator").type == "identifier":  # type: ignore[union-attr]
                    assert value is not None
                    edits.append(Edit(value.start_byte, value.end_byte, f"s2s_wide_io<{structs[arr]}>::load({_address(source, value)})"))
            elif node.type == "assignment_expression" and text(source, node.child_by_field_name("operator")) == "=":
                left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
                arr = _struct_subscript(source, left, structs)
                if arr and right is not None and right.type == "identifier" and node.parent is not None and node.parent.type == "expression_statement":
                    assert left is not None
                    edits.append(Edit(node.start_byte, node.end_byte,
                                      f"s2s_wide_io<{structs[arr]}>::store({_address(source, left)}, {src(source, right)})"))
        if not edits:
            return Refused("no whole-structure load into a local (`T q = p[i];`) or store of a local (`p[i] = q;`)")
        if b"s2s_wide_io" not in source[: facts.start]:
            edits.insert(0, insert_before_kernel(source, facts, HELPER))
        return Rewrite(tuple(edits), None, f"{sum(1 for e in edits if 's2s_wide_io<' in e.text)} structure copies in wide words")


def _struct_subscript(source: bytes, node: Node | None, structs: dict[str, str]) -> str:
    """The parameter name when `node` is `param[index]` of a structure pointer parameter, else ""."""
    if node is None or node.type != "subscript_expression":
        return ""
    arr = node.child_by_field_name("argument")
    name = src(source, arr) if arr is not None else ""
    return name if arr is not None and arr.type == "identifier" and name in structs else ""


def _address(source: bytes, node: Node) -> str:
    arr = node.child_by_field_name("argument")
    index = node.child_by_field_name("indices") or node.child_by_field_name("index")
    inner = text(source, index).strip()
    if inner.startswith("[") and inner.endswith("]"):
        inner = inner[1:-1].strip()
    return f"{text(source, arr)} + ({inner})"
