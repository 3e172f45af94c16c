"""What the passes read off a kernel's statements by their text: barriers and warp-collective calls, the global thread
index along one axis, assignments to a name, uses of an axis, what a declaration declares (one name, or several before
a statement) and an early return `if (cond) return;`."""
from __future__ import annotations

import re

from tree_sitter import Node

from s2s.lang.parsing import src

BARRIERS = re.compile(r"__syncthreads|__syncwarp|__shared__|__shfl\w*|__ballot\w*|__any_sync|__all_sync|__activemask|"
                      r"\bbarrier\s*\(|this_thread_block|grid_group|\bgoto\b")


def global_index(value: str, a: str) -> bool:
    v = re.sub(r"[\s()]", "", value)
    b, d, t = f"blockIdx.{a}", f"blockDim.{a}", f"threadIdx.{a}"
    return v in {f"{b}*{d}+{t}", f"{d}*{b}+{t}", f"{t}+{b}*{d}", f"{t}+{d}*{b}"}


def assigned(name: str, text: str) -> bool:
    """`name` is assigned, incremented or has its address taken (unary `&`) in `text`."""
    n = re.escape(name)
    return bool(re.search(rf"(?<![\w.]){n}\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)|(?:\+\+|--)\s*{n}\b|(?<![\w.]){n}\s*(?:\+\+|--)"
                          rf"|(?:^|[(,=;{{?:]|return)\s*&\s*{n}\b(?!\s*[.\[])", text))


def uses_axis(code: str, a: str) -> bool:
    return re.search(rf"\b(?:blockIdx|threadIdx|blockDim|gridDim)\.{a}\b", code) is not None


def declares(source: bytes, decl: Node) -> str:
    items = [c for c in decl.named_children if c.type in {"init_declarator", "identifier"}]
    if len(items) != 1:
        return ""
    name = items[0].child_by_field_name("declarator") if items[0].type == "init_declarator" else items[0]
    return src(source, name) if name is not None and name.type == "identifier" else ""


def declared_before(source: bytes, stmts: list[Node], decl: Node) -> list[str]:
    names: list[str] = []
    for s in stmts:
        if s.start_byte >= decl.start_byte:
            break
        if s.type == "declaration" and not re.match(r"\s*(?:static\s+)?const\b", src(source, s)):
            for c in s.named_children:
                d = c.child_by_field_name("declarator") if c.type == "init_declarator" else c
                if d is not None and d.type == "identifier":
                    names.append(src(source, d))
    return names


def returns_only(source: bytes, stmt: Node) -> bool:
    """`if (cond) return;` (braces allowed), no else."""
    body = stmt.child_by_field_name("consequence")
    return (stmt.child_by_field_name("alternative") is None and body is not None
            and re.fullmatch(r"\{?\s*return\s*;\s*\}?", src(source, body)) is not None)
