"""Type aliases as tree-sitter reads them: `typedef T NAME;` and `using NAME = T;`, in every `#if` branch.

One reader for extraction (which keeps the branch the unit's flags make active: s2s.extract.mep_writer.type_aliases)
and capture (which keeps every branch and lets the captured bytes' size choose: NPB IS's `typedef long INT_TYPE;`
under `#if CLASS == 'D'`, else `int`). The OpenCL harness's own table (s2s/mep/backends/opencl_types.py) runs inside
the MEP without s2s and keeps its own.

Only aliases of a named type count: a number type (`unsigned long long`), another alias or a type macro, or a struct,
union or enum named without a body (`typedef struct Foo Foo_t;` gives Foo). A pointer, array or function declarator,
a struct with its body (its layout is read as a struct), a qualified or template type are not aliases of a name here;
`const` and `volatile` are dropped. Comments are comments.
"""
from __future__ import annotations

from tree_sitter import Node

from .parsing import parse, text

_NAMED = {"primitive_type", "sized_type_specifier", "type_identifier"}
_TAGGED = {"struct_specifier", "union_specifier", "enum_specifier", "class_specifier"}


def typedefs(source: str, dialect: str = "cuda") -> dict[str, list[str]]:
    """{alias: the types it is given, in source order} over the whole text, every `#if` branch included."""
    out: dict[str, list[str]] = {}
    stack = [parse(source.encode(), dialect).root_node]
    while stack:
        node = stack.pop()
        if node.type == "type_definition":
            target = _named(node.child_by_field_name("type"))
            for decl in node.children_by_field_name("declarator"):
                if target and decl.type in {"type_identifier", "primitive_type"}:
                    out.setdefault(text(decl), []).append(target)
            continue
        if node.type == "alias_declaration":
            described = node.child_by_field_name("type")
            target = _named(described.child_by_field_name("type") if described is not None else None)
            name = node.child_by_field_name("name")
            if target and name is not None and described is not None and described.child_by_field_name("declarator") is None:
                out.setdefault(text(name), []).append(target)
            continue
        stack.extend(reversed(node.named_children))
    return out


def _named(node: Node | None) -> str:
    """The type's name ("unsigned long", "real_t", "Foo" for a bodiless `struct Foo`), "" when it is not a named type."""
    if node is None:
        return ""
    if node.type in _NAMED:
        return " ".join(text(node).split())
    if node.type in _TAGGED and node.child_by_field_name("body") is None:
        name = node.child_by_field_name("name")
        return text(name) if name is not None and name.type == "type_identifier" else ""
    return ""
