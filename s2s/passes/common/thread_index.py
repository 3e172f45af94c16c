"""The 1-D global thread index as the passes recognize it (CUDA `blockIdx.x*blockDim.x+threadIdx.x` in any order,
OpenCL `get_global_id(0)`) and the grid stride, a one-declarator declaration, the bound of a guard `var < BOUND`, and
a pointer's element type without its qualifiers."""
from __future__ import annotations

import re

from tree_sitter import Node

from s2s.lang.parsing import src

from .tree import text

GLOBAL_ID = {"cuda": re.compile(r"^(?:blockIdx\.x\*blockDim\.x\+threadIdx\.x|blockDim\.x\*blockIdx\.x\+threadIdx\.x|"
                 r"threadIdx\.x\+blockIdx\.x\*blockDim\.x|threadIdx\.x\+blockDim\.x\*blockIdx\.x)$"),
             "opencl": re.compile(r"^get_global_id0$")}
GLOBAL_STRIDE = {"cuda": re.compile(r"^(?:blockDim\.x\*gridDim\.x|gridDim\.x\*blockDim\.x)$"),
                 "opencl": re.compile(r"^get_global_size0$")}
_QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict", "__global", "global"}


def elem_type(declared: str) -> str:
    """`unsigned int` of `const unsigned int* __restrict__` (the facts' base type drops `unsigned`)."""
    return " ".join(w for w in re.sub(r"[*&]", " ", declared).split() if w not in _QUALIFIERS)


def squeezed(text: str) -> str:
    return re.sub(r"\s+|[()]", "", text)


def single_declaration(source: bytes, decl: Node) -> tuple[str, str, Node | None] | None:
    """(type, name, value) of `T name = value;` with one declarator."""
    inits = [c for c in decl.named_children if c.type == "init_declarator"]
    if len(inits) != 1 or inits[0].child_by_field_name("declarator") is None:
        return None
    return text(source, decl.child_by_field_name("type")), text(source, inits[0].child_by_field_name("declarator")), \
        inits[0].child_by_field_name("value")


def compared_bound(source: bytes, cond: Node | None, var: str, op: str = "<") -> str | None:
    """BOUND of the condition `var OP BOUND`."""
    node = cond
    while node is not None and node.type in {"parenthesized_expression", "condition_clause"} and len(node.named_children) == 1:
        node = node.named_children[0]
    if node is None or node.type != "binary_expression" or text(source, node.child_by_field_name("operator")) != op:
        return None
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    return src(source, right) if left is not None and right is not None and src(source, left) == var else None
