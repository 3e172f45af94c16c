"""Top-level declarations of a file, by the names they define: the raw material of a closure."""
from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from s2s.lang.parsing import parse, src, text
from s2s.scan.sources import SourceFile, language_of

_IDENT = re.compile(r"[A-Za-z_]\w*")
_GUARD = re.compile(r"#\s*ifndef\s+(\w+)\s*\n\s*#\s*define\s+(\w+)")


@dataclass(frozen=True)
class Decl:
    kind: str  # "macro" | "type" | "function" | "variable" | "include" | "template" | "block" | "kernel"
    names: tuple[str, ...]
    file: str
    line: int
    start: int
    end: int
    text: str
    device: bool = False  # a function callable from device code
    system_include: str = ""  # for kind == "include": the header as written, <...> or "..."
    namespace: str = ""


def file_decls(source: SourceFile) -> list[Decl]:
    """Every top-level item of a file, in file order, conditionals kept whole."""
    dialect = language_of(source.rel, source.data)
    tree = parse(source.data, dialect)
    calls: list[tuple[int, int, str]] = []
    if tree.root_node.has_error:
        # `ALIGN_AS(long long, 8)` lines (a macro that expands to declarations, no `;`) derail tree-sitter until
        # the end of the file; read past them blanked (offsets kept) and keep each as an item of its own
        blanked, calls = blank_macro_calls(source.data)
        if calls:
            tree = parse(blanked, dialect)
    out: list[Decl] = []
    _walk(tree.root_node, source, out, "")
    for start, end, name in calls:
        line = source.data.count(b"\n", 0, start) + 1
        out.append(Decl("block", (name,), source.rel, line, start, end, source.text(start, end)))
    return sorted(out, key=lambda d: d.start) if calls else out


_SPAN_COMMENT = re.compile(rb"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S)
_CALL_LINE = re.compile(rb"^[ \t]*([A-Za-z_]\w*)[ \t]*\(", re.M)
_FUNCTION_MACRO = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)\(", re.M)


def blank_macro_calls(data: bytes) -> tuple[bytes, list[tuple[int, int, str]]]:
    """`data` with its top-level lines that are only a macro call (`NAME(args)`, no `;` and no body after it) blanked
    to spaces, and those calls' byte ranges and names. A macro is a name the file `#define`s with parameters, or one
    spelled in capitals (defined in another header)."""
    plain = _SPAN_COMMENT.sub(lambda m: re.sub(rb"[^\n]", b" ", m.group(0)), data)
    plain = re.sub(rb"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", lambda m: re.sub(rb"[^\n]", b" ", m.group(0)), plain, flags=re.M)
    macros = {m.group(1) for m in _FUNCTION_MACRO.finditer(data)}
    depth_at = _depths(plain)
    out = bytearray(data)
    calls: list[tuple[int, int, str]] = []
    for m in _CALL_LINE.finditer(plain):
        name = m.group(1)
        if depth_at[m.start(1)] or not (name in macros or re.fullmatch(rb"[A-Z_][A-Z0-9_]*", name)):
            continue
        close = _closing(plain, m.end() - 1)
        if close < 0:
            continue
        rest = plain[close + 1:]
        after = rest.lstrip()
        if rest[:len(rest) - len(after)].count(b"\n") == 0 and after or after[:1] in {b"{", b":", b";", b"-", b","}:
            continue  # something follows on its line, or a body, an initializer list or a declarator list does
        out[m.start(1):close + 1] = re.sub(rb"[^\n]", b" ", data[m.start(1):close + 1])
        calls.append((m.start(1), close + 1, name.decode()))
    return bytes(out), calls


def _depths(plain: bytes) -> list[int]:
    """The brace depth before each byte."""
    depths, depth = [], 0
    for c in plain:
        depths.append(depth)
        depth += (c == 0x7B) - (c == 0x7D)
    return depths


def _closing(plain: bytes, open_at: int) -> int:
    depth = 0
    for i in range(open_at, len(plain)):
        c = plain[i]
        depth += (c == 0x28) - (c == 0x29)
        if depth == 0:
            return i
        if c in (0x3B, 0x7B, 0x7D):  # `;`, `{` or `}` before the parenthesis closes: not a macro call line
            return -1
    return -1


def _walk(node: Node, source: SourceFile, out: list[Decl], ns: str) -> None:
    children = node.children
    i = 0
    while i < len(children):
        child = children[i]
        t = child.type
        end_node = child
        if t in {"struct_specifier", "class_specifier", "union_specifier", "enum_specifier"} and i + 1 < len(children) \
                and children[i + 1].type == ";":
            end_node = children[i + 1]
            i += 1
        if t == "namespace_definition":
            body = child.child_by_field_name("body")
            name = text(child.child_by_field_name("name"))
            if body is not None:
                # items inside a namespace are emitted with their namespace around them
                inner: list[Decl] = []
                _walk(body, source, inner, f"{ns}::{name}" if ns else name)
                out.extend(inner)
        elif t == "linkage_specification":
            body = child.child_by_field_name("body")
            if body is not None and body.type == "declaration_list":
                _walk(body, source, out, ns)
            elif body is not None:
                out.extend(_item(child, child, source, ns))
        elif t == "preproc_ifdef" and _is_guard(child, source):
            _walk_guard(child, source, out, ns)
        elif t in {"preproc_ifdef", "preproc_if"}:
            out.append(_conditional(child, source, ns))
        else:
            out.extend(_item(child, end_node, source, ns))
        i += 1


def _walk_guard(node: Node, source: SourceFile, out: list[Decl], ns: str) -> None:
    inner: list[Decl] = []
    _walk(node, source, inner, ns)
    guard = text(node.child_by_field_name("name"))
    out.extend(d for d in inner if not (d.kind == "macro" and d.names == (guard,)))


def _is_guard(node: Node, source: SourceFile) -> bool:
    m = _GUARD.match(src(source.data, node))
    if not (m and m.group(1) == m.group(2)):
        return False
    # `#ifndef N / #define N 512 / #endif` is a default value, not an include guard: it has a value.
    line = src(source.data, node).split("\n")[1].split()
    return len(line) <= 2 or (len(line) == 3 and line[0] == "#" and line[1] == "define")


def _conditional(node: Node, source: SourceFile, ns: str) -> Decl:
    """A conditional block is one item: what it defines depends on flags the tree-sitter path cannot see."""
    inner: list[Decl] = []
    _walk(node, source, inner, ns)
    names = tuple(dict.fromkeys(n for d in inner for n in d.names))
    device = any(d.device for d in inner)
    return Decl("block", names, source.rel, node.start_point[0] + 1, node.start_byte, node.end_byte,
                source.text(node.start_byte, node.end_byte), device=device, namespace=ns)


def _item(node: Node, end_node: Node, source: SourceFile, ns: str) -> list[Decl]:
    t = node.type
    body = source.text(node.start_byte, end_node.end_byte)
    line = node.start_point[0] + 1

    def decl(kind: str, names: tuple[str, ...], device: bool = False, include: str = "") -> list[Decl]:
        names = tuple(n for n in names if n)
        if not names and kind != "include":
            return []
        return [Decl(kind, names, source.rel, line, node.start_byte, end_node.end_byte, body, device, include, ns)]

    if t == "preproc_include":
        return decl("include", (), include=text(node.child_by_field_name("path")).strip())
    if t in {"preproc_def", "preproc_function_def"}:
        return decl("macro", (text(node.child_by_field_name("name")),))
    if t in {"struct_specifier", "class_specifier", "union_specifier"}:
        # `template <> struct BytesToType<16> {...}`: a specialization is one more definition of BytesToType
        return decl("type", (text(node.child_by_field_name("name")).split("<")[0].strip(),))
    if t == "enum_specifier":
        enumerators = tuple(text(e.child_by_field_name("name")) for e in _enumerators(node))
        return decl("type", (text(node.child_by_field_name("name")),) + enumerators)
    if t == "type_definition":
        inner = node.child_by_field_name("type")
        extra = tuple(text(e.child_by_field_name("name")) for e in _enumerators(inner)) if inner is not None else ()
        return decl("type", tuple(_typedef_name(d) for d in node.children_by_field_name("declarator")) + extra)
    if t == "alias_declaration":
        return decl("type", (text(node.child_by_field_name("name")),))
    if t == "template_declaration":
        inner_nodes = [c for c in node.named_children if c.type not in {"template_parameter_list"}]
        if not inner_nodes:
            return []
        inner = inner_nodes[-1]
        items = _item(inner, inner, source, ns)
        return [Decl(d.kind if d.kind != "function" else "function", d.names, source.rel, line, node.start_byte,
                     end_node.end_byte, body, d.device, "", ns) for d in items]
    if t == "function_definition":
        kinds = {c.type for c in node.children if not c.is_named}
        qualifier_text = " ".join(text(c) for c in node.children if c.type != "compound_statement")
        device = bool(kinds & {"__device__", "__global__"}) or "__device__" in qualifier_text
        kind = "kernel" if "__global__" in kinds else "function"
        return decl(kind, (_function_name(node),), device=device or source.rel.endswith((".cl", ".clh")))
    if t == "declaration":
        names = tuple(_declared_name(d) for d in node.children_by_field_name("declarator"))
        is_proto = any(d.type == "function_declarator" for d in node.children_by_field_name("declarator"))
        kinds = {c.type for c in node.children if not c.is_named} | {text(c) for c in node.children if c.type == "type_qualifier"}
        device = bool(kinds & {"__device__", "__constant__", "__shared__", "__managed__"})
        inner_type = node.child_by_field_name("type")
        type_names: tuple[str, ...] = ()
        if inner_type is not None and inner_type.type in {"struct_specifier", "enum_specifier", "class_specifier"} \
                and inner_type.child_by_field_name("body") is not None:
            type_names = (text(inner_type.child_by_field_name("name")),)
        return decl("function" if is_proto else "variable", names + type_names, device=device)
    return []


def _enumerators(node: Node | None) -> list[Node]:
    if node is None or node.type != "enum_specifier":
        return []
    body = node.child_by_field_name("body")
    return [c for c in body.named_children if c.type == "enumerator"] if body is not None else []


def _typedef_name(declarator: Node) -> str:
    """The name a typedef declares: `AM` of `AM[N]` (not the size `N`), `fn_t` of `(*fn_t)(int)`, `ref_t` of
    `(&ref_t)[4]`; the first type name in the declarator, outside parameter lists and array sizes."""
    stack = [declarator]
    while stack:
        cur = stack.pop()
        if cur.type in {"type_identifier", "identifier"}:
            return text(cur)
        if cur.type == "parameter_list":
            continue
        inner = cur.child_by_field_name("declarator")
        stack.extend([inner] if inner is not None else reversed(cur.named_children))
    return _last_ident(text(declarator))


def _last_ident(s: str) -> str:
    found = _IDENT.findall(s)
    return found[-1] if found else ""


def _declared_name(node: Node) -> str:
    cur: Node | None = node
    while cur is not None and cur.type not in {"identifier", "field_identifier", "qualified_identifier"}:
        nxt = cur.child_by_field_name("declarator")
        if nxt is None:
            idents = [c for c in cur.named_children if c.type == "identifier"]
            return text(idents[0]) if idents else ""
        cur = nxt
    return text(cur).split("::")[-1] if cur is not None else ""


def _function_name(fn: Node) -> str:
    node = fn.child_by_field_name("declarator")
    while node is not None and node.type != "function_declarator":
        node = node.child_by_field_name("declarator")
    inner = node.child_by_field_name("declarator") if node is not None else None
    return _unqualified(text(inner))


def _unqualified(name: str) -> str:
    """`Gen<std::uint32_t>::draw<float>` is a `draw`: template arguments go before the `::` that qualifies it."""
    if "operator" in name:
        return name.split("::")[-1].strip()
    plain = name
    while True:
        shorter = re.sub(r"<[^<>]*>", "", plain)
        if shorter == plain:
            break
        plain = shorter
    return plain.split("::")[-1].split("<")[0].strip()
