"""Which kernel parameters are read, written, or used as indices: a read/write analysis of the body."""
from __future__ import annotations

import re

from tree_sitter import Node

from .parsing import parse, text

_ATOMIC = re.compile(r"^(atomic\w*|atom_\w*|__atomic\w*)$")


def _base_ident(node: Node) -> str:
    """The pointer an lvalue expression goes through: `p` for p[i], *p, p[i].x, p->x, *(p + i)."""
    cur: Node | None = node
    while cur is not None:
        t = cur.type
        if t == "identifier":
            return text(cur)
        if t == "subscript_expression":
            cur = cur.child_by_field_name("argument")
        elif t == "field_expression":
            cur = cur.child_by_field_name("argument")
        elif t in {"pointer_expression", "parenthesized_expression", "cast_expression"}:
            cur = cur.child_by_field_name("argument") or cur.child_by_field_name("value") or (cur.named_children[-1] if cur.named_children else None)
        elif t == "binary_expression":
            cur = cur.child_by_field_name("left")
        else:
            return ""
    return ""


def param_access(kernel_text: str, dialect: str, pointer_params: list[str]) -> dict[str, set[str]]:
    """{param: {"read", "write"}} for each pointer parameter, following simple local aliases."""
    tree = parse(kernel_text.encode(), dialect)
    names = set(pointer_params)
    alias: dict[str, str] = {}
    access: dict[str, set[str]] = {p: set() for p in pointer_params}

    def owner(name: str) -> str:
        seen = 0
        while name in alias and seen < 10:
            name = alias[name]
            seen += 1
        return name if name in names else ""

    def step(node: Node) -> list[Node]:
        """Note what `node` does to a parameter; the nodes to look at next (an explicit stack, not recursion: a kernel
        nested 100,000 blocks deep is input, not a crash)."""
        t = node.type
        if t == "init_declarator":
            value = node.child_by_field_name("value")
            decl = node.child_by_field_name("declarator")
            if value is not None and decl is not None and "*" in text(decl) + "&":
                base = _base_ident(value)
                if owner(base):
                    target = re.findall(r"[A-Za-z_]\w*", text(decl))
                    if target:
                        alias[target[-1]] = base
        if t == "assignment_expression":
            left = node.child_by_field_name("left")
            op = text(node.child_by_field_name("operator")) or "="
            if left is not None and left.type != "identifier":
                who = owner(_base_ident(left))
                if who:
                    access[who].add("write")
                    if op != "=":
                        access[who].add("read")
                    right = node.child_by_field_name("right")
                    return [c for c in left.named_children if c.type != "identifier"] + ([right] if right is not None else [])
        if t == "update_expression":
            arg = node.child_by_field_name("argument")
            if arg is not None and arg.type != "identifier":
                who = owner(_base_ident(arg))
                if who:
                    access[who].update({"read", "write"})
                    return []
        if t == "call_expression":
            fn = text(node.child_by_field_name("function"))
            args = node.child_by_field_name("arguments")
            if _ATOMIC.match(fn) and args is not None and args.named_children:
                first_arg = args.named_children[0]
                who = owner(_base_ident(first_arg))
                if who:
                    access[who].update({"read", "write"})
                return list(args.named_children[1:])
            if re.match(r"^vstore\w*$", fn) and args is not None and len(args.named_children) >= 3:
                who = owner(_base_ident(args.named_children[2]))
                if who:
                    access[who].add("write")
        if t in {"subscript_expression", "pointer_expression", "field_expression"}:
            who = owner(_base_ident(node))
            if who and not (t == "pointer_expression" and text(node).startswith("&")):
                access[who].add("read")
        if t in {"identifier", "binary_expression"} and node.parent is not None and node.parent.type in {"argument_list"}:
            # `p` or `p + offset` passed to a helper
            ident = node if t == "identifier" else node.child_by_field_name("left")
            is_offset = t == "binary_expression" and text(node.child_by_field_name("operator")) in {"+", "-"}
            who = owner(text(ident)) if ident is not None and ident.type == "identifier" and (t == "identifier" or is_offset) else ""
            if who:  # passed whole to a helper: assume both
                access[who].update({"read", "write"} if not _const_call(node) else {"read"})
        return list(node.named_children)

    body = _body(tree.root_node)
    stack = [body] if body is not None else []
    while stack:  # depth first, in source order
        stack.extend(reversed(step(stack.pop())))
    return access


def _const_call(node: Node) -> bool:
    call = node.parent.parent if node.parent is not None else None
    fn = text(call.child_by_field_name("function")) if call is not None else ""
    return bool(re.match(r"^(vload\w*|__ldg|printf|s2s_wide_io\s*<.*>\s*::\s*load)$", fn, re.S))


def _body(root: Node) -> Node | None:
    stack = [root]
    while stack:
        n = stack.pop()
        if n.type == "function_definition":
            return n.child_by_field_name("body")
        stack.extend(reversed(n.named_children))
    return None


def index_arrays(kernel_text: str, int_pointer_params: list[str], all_pointer_params: list[str]) -> dict[str, str]:
    """{index_param: indexed_param} for integer arrays whose values subscript another buffer."""
    out: dict[str, str] = {}
    for idx in int_pointer_params:
        for other in all_pointer_params:
            if other == idx:
                continue
            if re.search(rf"\b{re.escape(other)}\s*\[[^\]]*\b{re.escape(idx)}\s*\[", kernel_text):
                out[idx] = other
                break
        else:
            if re.search(rf"\b\w+\s*\[[^\]]*\b{re.escape(idx)}\s*\[", kernel_text):
                out[idx] = ""
    return out


def offset_arrays(kernel_text: str, int_pointer_params: list[str], all_pointer_params: list[str]) -> dict[str, str]:
    """{offsets_param: ranged_param} for integer arrays read at i and i + 1 whose values bound a range of another
    buffer's elements (CSR row pointers: `for (k = rowptr[r]; k < rowptr[r + 1]; k++) ... vals[k]`, also through
    locals `start = rowptr[r]`). Their generated values must rise from 0 to that buffer's count, not be random."""
    flat = re.sub(r"\s+", " ", re.sub(r"\s*([^\w\s])\s*", r"\1", kernel_text))  # `int k=rowptr[row+1]`
    out: dict[str, str] = {}
    for idx in int_pointer_params:
        subs = set(re.findall(rf"\b{re.escape(idx)}\[([^\[\]]+)\]", flat))
        firsts = [e for e in subs if f"{e}+1" in subs or f"1+{e}" in subs or f"({e})+1" in subs]
        for e in firsts:
            held = set(re.findall(rf"\b(\w+)=\b{re.escape(idx)}\[{re.escape(e)}\]", flat))
            for v in list(held):  # `start = rowptr[r]; for (k = start; ...)`
                held |= set(re.findall(rf"\b(\w+)=\b{re.escape(v)}(?:\+\w+)?[;,)]", flat))
            ranged = [o for o in all_pointer_params if o != idx and any(
                re.search(rf"\b{re.escape(o)}\[{re.escape(v)}\]", flat) for v in held)]
            if ranged:
                out[idx] = ranged[0]
                break
    return out


def roles(access: dict[str, set[str]]) -> dict[str, str]:
    out = {}
    for name, acc in access.items():
        if acc == {"write"}:
            out[name] = "out"
        elif "write" in acc:
            out[name] = "inout"
        else:
            out[name] = "in"
    return out
