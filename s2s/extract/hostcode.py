"""Reading host code back from a launch site: what each argument is, how big each buffer is.

A name is resolved in the function that launches the kernel (declarations before the launch), then
in that function's callers (through the parameter it was passed as), then at file scope, then among
macros and -D flags. Every answer carries where it came from.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tree_sitter import Node

from s2s.lang.parsing import parse, text
from s2s.scan.sources import SourceFile, language_of

_ALLOC = {"cudaMalloc": 1, "hipMalloc": 1, "cudaMallocManaged": 1, "hipMallocManaged": 1, "cudaMallocAsync": 1,
          "hipMallocAsync": 1}
_HOST_ALLOC = {"malloc": 0, "aligned_alloc": 1, "calloc": -1}


@dataclass(frozen=True)
class Found:
    expr: str  # an expression in the scope where it was found
    where: str  # file:line
    scope: Scope
    at: int = 0  # byte offset of the definition: names in it resolve in the scope as it stood there


class Scope:
    """One function of host code, parsed, with the byte offset up to which declarations count."""

    def __init__(self, source: SourceFile, fn: Node | None, limit: int, program: Program, depth: int = 0) -> None:
        self.source = source
        self.fn = fn
        self.limit = limit
        self.program = program
        self.depth = depth

    def _loc(self, node: Node) -> str:
        return f"{self.source.rel}:{node.start_point[0] + 1}"

    def _nodes(self, types: set[str]) -> list[Node]:
        root = self.fn if self.fn is not None else self.program.tree_of(self.source).root_node
        out: list[Node] = []
        stack = [root]
        while stack:
            n = stack.pop()
            if n.start_byte >= self.limit and self.fn is not None:
                continue
            if n.type in types:
                out.append(n)
            if n.type == "function_definition" and n is not root and self.fn is None:
                continue
            stack.extend(n.named_children)
        return sorted(out, key=lambda n: n.start_byte)

    def definition(self, name: str) -> Found | None:
        """The last declaration or assignment of `name` before the limit, in this function."""
        found = self.definitions(name)
        return found[0] if found else None

    def definitions(self, name: str) -> list[Found]:
        """Declarations and assignments of `name` before the limit, latest first."""
        hits: list[tuple[int, Found]] = []
        for node in self._nodes({"init_declarator", "assignment_expression", "declaration"}):
            if node.type == "init_declarator":
                decl = node.child_by_field_name("declarator")
                value = node.child_by_field_name("value")
                if decl is not None and _declared(decl) == name and value is not None:
                    hits.append((node.start_byte, Found(_value_text(value, decl), self._loc(node), self, node.start_byte)))
            elif node.type == "declaration":
                # `dim3 block(BLOCK_1D);` parses as a function declaration: read it as a constructor call
                ctype = text(node.child_by_field_name("type"))
                for decl in node.children_by_field_name("declarator"):
                    inner = decl.child_by_field_name("declarator")
                    params = decl.child_by_field_name("parameters")
                    if decl.type == "function_declarator" and inner is not None and text(inner) == name and params is not None:
                        args = ", ".join(text(p) for p in params.named_children)
                        hits.append((node.start_byte, Found(f"{ctype}({args})", self._loc(node), self, node.start_byte)))
            elif node.type == "assignment_expression":
                left = node.child_by_field_name("left")
                if text(left).strip() == name and text(node.child_by_field_name("operator")) in {"=", ""}:
                    right = node.child_by_field_name("right")
                    if right is not None:
                        hits.append((node.start_byte, Found(text(right), self._loc(node), self, node.start_byte)))
        return [f for _at, f in sorted(hits, key=lambda h: -h[0])]

    def parameter_index(self, name: str) -> int:
        if self.fn is None:
            return -1
        decl = self.fn.child_by_field_name("declarator")
        while decl is not None and decl.type != "function_declarator":
            decl = decl.child_by_field_name("declarator")
        params = decl.child_by_field_name("parameters") if decl is not None else None
        if params is None:
            return -1
        for i, p in enumerate(c for c in params.named_children if c.type.endswith("parameter_declaration")):
            d = p.child_by_field_name("declarator")
            if d is not None and _declared(d) == name:
                return i
        return -1

    def function_name(self) -> str:
        if self.fn is None:
            return ""
        decl = self.fn.child_by_field_name("declarator")
        while decl is not None and decl.type != "function_declarator":
            decl = decl.child_by_field_name("declarator")
        inner = decl.child_by_field_name("declarator") if decl is not None else None
        return text(inner).split("::")[-1]

    def callers(self) -> list[tuple[Scope, list[str], str]]:
        """(caller scope, argument texts, file:line) for each call of this function in the program."""
        name = self.function_name()
        if not name or self.depth >= 4:
            return []
        return self.program.calls_of(name, self.depth + 1)

    def template_params(self) -> list[str]:
        """Names of the enclosing function template's parameters (`T` in template <typename T> void run(T*))."""
        if self.fn is None or self.fn.parent is None or self.fn.parent.type != "template_declaration":
            return []
        plist = self.fn.parent.child_by_field_name("parameters")
        out = []
        for p in plist.named_children if plist is not None else []:
            words = re.findall(r"[A-Za-z_]\w*", text(p).split("=")[0])
            if words:
                out.append(words[-1])
        return out

    def caller_template_args(self) -> list[tuple[str, str]]:
        """(explicit template arguments, file:line) of each call of this function template: run<float>(...)."""
        name = self.function_name()
        out = []
        for source in self.program.files.values():
            if name.encode() + b"<" not in source.data.replace(b" <", b"<"):
                continue
            for call in self.program.all_calls(source, name):
                fn = call.child_by_field_name("function")
                if fn is not None and fn.type in {"template_function", "qualified_identifier"} and "<" in text(fn):
                    t = text(fn)
                    out.append((t[t.index("<") + 1 : t.rindex(">")], f"{source.rel}:{call.start_point[0] + 1}"))
        return out

    def allocations(self, var: str) -> Found | None:
        """The byte count of the allocation that gave `var` its memory."""
        for node in reversed(self._nodes({"call_expression"})):
            fn = text(node.child_by_field_name("function"))
            args = node.child_by_field_name("arguments")
            if args is None:
                continue
            items = args.named_children
            if fn in _ALLOC and len(items) >= 2 and _mentions_address_of(items[0], var):
                return Found(text(items[1]), self._loc(node), self, node.start_byte)
            if fn == "clCreateBuffer" and len(items) >= 3 and _assigned_to(node) == var:
                return Found(text(items[2]), self._loc(node), self, node.start_byte)
            if fn in _HOST_ALLOC and _assigned_to(node) == var and items:
                if fn == "calloc" and len(items) == 2:
                    return Found(f"({text(items[0])})*({text(items[1])})", self._loc(node), self, node.start_byte)
                return Found(text(items[_HOST_ALLOC[fn] if _HOST_ALLOC[fn] >= 0 else 0]), self._loc(node), self, node.start_byte)
        for node in self._nodes({"new_expression"}):
            if _assigned_to(node) == var:
                size = node.child_by_field_name("declarator")
                tname = text(node.child_by_field_name("type"))
                if size is not None:
                    return Found(f"({text(size).strip('[]')})*sizeof({tname})", self._loc(node), self, node.start_byte)
        return None

    def cl_kernel_args(self, kernel_object: str) -> dict[int, tuple[str, str, str]]:
        """{index: (size expr, value expr, file:line)} from clSetKernelArg calls on one kernel object."""
        out: dict[int, tuple[str, str, str]] = {}
        for node in self.program.all_calls(self.source, "clSetKernelArg"):
            args = node.child_by_field_name("arguments")
            items = args.named_children if args is not None else []
            if len(items) >= 4 and text(items[0]).strip() == kernel_object:
                try:
                    idx = int(text(items[1]).strip().rstrip("uU"))
                except ValueError:
                    continue
                if idx not in out or node.start_byte < self.limit:
                    out[idx] = (text(items[2]), text(items[3]), self._loc(node))
        return out


def _declared(decl: Node) -> str:
    names = re.findall(r"[A-Za-z_]\w*", text(decl).split("=")[0].split("[")[0].split("(")[0])
    return names[-1] if names else ""


def _value_text(value: Node, decl: Node) -> str:
    if value.type == "argument_list":  # dim3 grid(a, b, c)
        return "dim3(" + ", ".join(text(c) for c in value.named_children) + ")"
    if value.type == "initializer_list":
        return "{" + ", ".join(text(c) for c in value.named_children) + "}"
    return text(value)


def _mentions_address_of(node: Node, var: str) -> bool:
    return re.search(r"&\s*" + re.escape(var) + r"\b", text(node)) is not None


def _assigned_to(node: Node) -> str:
    cur = node.parent
    while cur is not None and cur.type in {"cast_expression", "parenthesized_expression", "call_expression", "argument_list"}:
        cur = cur.parent
    if cur is None:
        return ""
    if cur.type == "assignment_expression":
        return text(cur.child_by_field_name("left")).strip()
    if cur.type == "init_declarator":
        return _declared(cur.child_by_field_name("declarator"))  # type: ignore[arg-type]
    return ""


class Program:
    """The host side of a tree, parsed on demand."""

    def __init__(self, files: dict[Path, SourceFile]) -> None:
        self.files = files
        self._trees: dict[str, object] = {}

    def tree_of(self, source: SourceFile):  # type: ignore[no-untyped-def]
        if source.rel not in self._trees:
            self._trees[source.rel] = parse(source.data, language_of(source.rel, source.data))
        return self._trees[source.rel]

    def scope_at(self, source: SourceFile, offset: int, depth: int = 0) -> Scope:
        root = self.tree_of(source).root_node
        node = root.descendant_for_byte_range(offset, offset)
        while node is not None and node.type != "function_definition":
            node = node.parent
        return Scope(source, node, offset, self, depth)

    def file_scope(self, source: SourceFile) -> Scope:
        return Scope(source, None, len(source.data), self)

    def all_calls(self, source: SourceFile, name: str) -> list[Node]:
        out = []
        stack = [self.tree_of(source).root_node]
        while stack:
            n = stack.pop()
            if n.type == "call_expression" and text(n.child_by_field_name("function")).split("<")[0].split("::")[-1].strip() == name:
                out.append(n)
            stack.extend(n.named_children)
        return sorted(out, key=lambda n: n.start_byte)

    def calls_of(self, name: str, depth: int) -> list[tuple[Scope, list[str], str]]:
        out = []
        needle = name.encode()
        for source in self.files.values():
            if needle not in source.data or language_of(source.rel) == "opencl":
                continue
            for call in self.all_calls(source, name):
                args = call.child_by_field_name("arguments")
                if args is None:
                    continue
                scope = self.scope_at(source, call.start_byte, depth)
                out.append((scope, [text(a) for a in args.named_children], f"{source.rel}:{call.start_point[0] + 1}"))
        return out
