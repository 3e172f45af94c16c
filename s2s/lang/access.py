"""Which kernel parameters are read, written, or used as indices: a read/write analysis of the body."""
from __future__ import annotations

import re
from functools import lru_cache

from tree_sitter import Node

from .macros import Macro, expand_macro_calls
from .parsing import descendants, parse, text

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


def param_access(kernel_text: str, dialect: str, pointer_params: list[str],
                 macros: dict[str, Macro] | None = None,
                 ref_params: dict[str, frozenset[int]] | None = None) -> dict[str, set[str]]:
    """{param: {"read", "write"}} for each pointer parameter. A parameter is read-only only when every use of it, and
    of every local pointer or reference made from it (`float *p = out + off;`, `p = &out[k];`, `float &r = out[i];`),
    is a recognised read; a use not recognised (stored into a struct, handed to a function that may write through
    it) counts as both. An element handed to a function at a position `ref_params` names (a non-const lvalue reference
    parameter: `acc(out[i], v)` with `void acc(float& r, float v)`, see `reference_params`) is read and written. Calls
    of the file's function-like macros are expanded first (`SET(a, i, v)`, `F(i, j) = v` with
    `#define F(I, J) F[(I) * N + (J)]`)."""
    if macros:
        kernel_text = expand_macro_calls(kernel_text, macros)
    tree = parse(kernel_text.encode(), dialect)
    body = _body(tree.root_node)
    access: dict[str, set[str]] = {p: set() for p in pointer_params}
    if body is None:
        return access
    idents = [n for n in descendants(body, named=True) if n.type == "identifier" and not _declares(n)]
    alias: dict[str, set[str]] = {p: {p} for p in pointer_params}  # local -> the parameters it may point into
    elements: set[str] = set()  # references bound to an element: `float &r = out[i];`
    for _ in range(6):  # aliases of aliases, to a fixed point
        grown = False
        for n in idents:
            owners = alias.get(text(n), set())
            if not owners:
                continue
            for target, element in _bindings(n, text(n) in elements):
                if not owners <= alias.setdefault(target, set()):
                    alias[target] |= owners
                    grown = True
                if element and target not in elements:
                    elements.add(target)
                    grown = True
        if not grown:
            break
    for n in idents:
        for who in alias.get(text(n), set()):
            if who in access:
                access[who] |= _use(n, text(n) in elements, ref_params or {})
    return access


# a function definition with a `&` in its parameter list: `void acc(float& r, float v) {`, `T f(T &x) const {`
_REF_FN = re.compile(r"\b([A-Za-z_]\w*)\s*\(([^;{}()]*&[^;{}()]*)\)\s*(?:const\s*)?(?:noexcept\s*)?\{")
_NOT_FUNCTIONS = {"if", "for", "while", "switch", "return", "sizeof", "catch"}


@lru_cache(maxsize=256)
def reference_params(source: str) -> dict[str, frozenset[int]]:
    """{function name: the positions of its non-const lvalue reference parameters} for the functions `source` defines
    (overloads together): an element handed there may be written (`void acc(float& r, float v) { r += v; }`)."""
    found: dict[str, set[int]] = {}
    for m in _REF_FN.finditer(source):
        name = m.group(1)
        if name in _NOT_FUNCTIONS:
            continue
        params, depth, cur = [], 0, ""
        for ch in m.group(2):  # the top-level commas (template arguments hold commas too)
            depth += (ch == "<") - (ch == ">")
            if ch == "," and depth <= 0:
                params.append(cur)
                cur = ""
            else:
                cur += ch
        params.append(cur)
        pos = {i for i, q in enumerate(params) if re.search(r"(?<!&)&(?!&)", q) and not re.search(r"\bconst\b", q)}
        if pos:
            found.setdefault(name, set()).update(pos)
    return {k: frozenset(v) for k, v in found.items()}


_COMPARE = {"==", "!=", "<", ">", "<=", ">=", "&&", "||"}
_CAST_CALL = re.compile(r"^(?:reinterpret_cast|static_cast|const_cast)\s*<", re.S)



def _same(a: Node | None, b: Node | None) -> bool:
    return a is not None and b is not None and (a.start_byte, a.end_byte, a.type) == (b.start_byte, b.end_byte, b.type)


def _declares(n: Node) -> bool:
    """The identifier is the name a declaration introduces (or a call's function name), not a use of a variable."""
    p = n.parent
    if p is None:
        return True
    if p.type in {"reference_declarator", "labeled_statement", "goto_statement"}:
        return True
    if p.type in {"pointer_declarator", "array_declarator", "function_declarator", "parameter_declaration", "declaration"}:
        return _same(p.child_by_field_name("declarator"), n)
    if p.type == "init_declarator":
        return _same(p.child_by_field_name("declarator"), n)
    return False


def _pointer_top(node: Node) -> Node:
    """The outermost expression that still points where `node` points: through parentheses, casts, `p + k`, `?:`."""
    cur = node
    while cur.parent is not None:
        p = cur.parent
        if p.type in {"parenthesized_expression", "cast_expression"}:
            cur = p
        elif p.type == "binary_expression" and text(p.child_by_field_name("operator")) in {"+", "-"}:
            cur = p
        elif p.type == "conditional_expression" and not _same(p.child_by_field_name("condition"), cur):
            cur = p
        elif p.type == "update_expression":  # `*p++`
            cur = p
        elif p.type == "argument_list" and p.parent is not None and p.parent.type == "call_expression" and \
                _CAST_CALL.match(text(p.parent.child_by_field_name("function"))):
            cur = p.parent
        else:
            break
    return cur


def _element_top(node: Node) -> Node:
    """The outermost lvalue that is part of the element `node` names: `p[i].x`, `(p[i])`, `p[i][j]`."""
    cur = node
    while cur.parent is not None and (cur.parent.type == "parenthesized_expression" or (
            cur.parent.type in {"field_expression", "subscript_expression"}
            and _same(cur.parent.child_by_field_name("argument"), cur))):
        cur = cur.parent
    return cur


def _dereferenced(top: Node) -> Node | None:
    """The element a pointer expression is used to reach (`top[i]`, `*top`, `top->f`), else None."""
    p = top.parent
    if p is None:
        return None
    if p.type in {"subscript_expression", "field_expression"} and _same(p.child_by_field_name("argument"), top):
        return p
    if p.type == "pointer_expression" and text(p).lstrip().startswith("*"):
        return p
    return None


def _bindings(n: Node, is_element: bool) -> list[tuple[str, bool]]:
    """The local names a use of a pointer (or element reference) binds to what it points at: (name, element)."""
    top = n if is_element else _pointer_top(n)
    element = _element_top(_dereferenced(top) or top) if not is_element and _dereferenced(top) is not None else None
    if element is not None:  # `&p[i]` is a pointer again; `float &r = p[i]` an element reference
        p = element.parent
        if p is not None and p.type == "pointer_expression" and text(p).lstrip().startswith("&"):
            top = _pointer_top(p)
        elif p is not None and p.type == "init_declarator" and _same(p.child_by_field_name("value"), element):
            decl = p.child_by_field_name("declarator")
            if decl is not None and decl.type == "reference_declarator":
                return [(_name(decl), True)]
            return []
        else:
            return []
    p = top.parent
    if p is None:
        return []
    if p.type == "init_declarator" and _same(p.child_by_field_name("value"), top):
        decl = p.child_by_field_name("declarator")
        return [(_name(decl), decl is not None and decl.type == "reference_declarator" and is_element)]
    if p.type == "assignment_expression" and _same(p.child_by_field_name("right"), top):
        left = p.child_by_field_name("left")
        if left is not None and left.type == "identifier" and text(p.child_by_field_name("operator")) == "=":
            return [(text(left), False)]
    return []


def _name(decl: Node | None) -> str:
    names = re.findall(r"[A-Za-z_]\w*", text(decl).split("[")[0]) if decl is not None else []
    return names[-1] if names else ""


def _use(n: Node, is_element: bool, refs: dict[str, frozenset[int]]) -> set[str]:
    """What one use of a parameter (or of a local made from it) does to the memory it points at."""
    if is_element:  # a reference to an element: the name is the element
        return _element_use(n, refs)
    top = _pointer_top(n)
    element = _dereferenced(top)
    if element is not None:
        return _element_use(_element_top(element), refs)
    return _pointer_use(top)


def _pointer_use(top: Node) -> set[str]:
    p = top.parent
    if p is None:
        return {"read", "write"}
    t = p.type
    if t in {"init_declarator", "assignment_expression"} and not _same(p.child_by_field_name("left"), top):
        left = p.child_by_field_name("left") if t == "assignment_expression" else p.child_by_field_name("declarator")
        if t == "init_declarator" or (left is not None and left.type == "identifier"):
            return set()  # a local pointer made from it: its own uses are weighed
        return {"read", "write"}  # stored where its uses are not seen (a struct field, an array of pointers)
    if t == "assignment_expression" or t == "update_expression":
        return set()  # the local pointer itself moves (`p += 4`, `p++`): not the memory behind it
    if t in {"binary_expression"} and text(p.child_by_field_name("operator")) in _COMPARE:
        return set()
    if t in {"unary_expression", "if_statement", "while_statement", "condition_clause", "sizeof_expression",
             "expression_statement", "comma_expression", "for_statement"}:  # tested, or moved with the value unused
        return set()
    if t == "argument_list" and p.parent is not None and p.parent.type == "call_expression":
        fn = text(p.parent.child_by_field_name("function"))
        args = [c for c in p.named_children if c.type != "comment"]
        first = bool(args) and _same(args[0], top)
        if _ATOMIC.match(fn) and first:
            return {"read", "write"}
        if re.match(r"^vstore\w*$", fn):
            return {"write"} if len(args) >= 3 and _same(args[2], top) else set()
        if _READ_ONLY_CALL.match(fn):
            return {"read"}
        return {"read", "write"}  # handed to a function that may write through it
    return {"read", "write"}


_READ_ONLY_CALL = re.compile(r"^(vload\w*|__ldg|__ldcg|__ldca|__ldcs|__ldlu|__ldcv|printf|s2s_wide_io\s*<.*>\s*::\s*load)$",
                             re.S)


def _element_use(element: Node, refs: dict[str, frozenset[int]]) -> set[str]:
    p = element.parent
    while p is not None and p.type == "parenthesized_expression":
        element, p = p, p.parent
    if p is None:
        return {"read"}
    if p.type == "argument_list" and refs and p.parent is not None and p.parent.type == "call_expression":
        fn = re.sub(r"<.*$", "", text(p.parent.child_by_field_name("function")), flags=re.S).split("::")[-1].strip()
        args = [c for c in p.named_children if c.type != "comment"]
        if fn in refs and any(_same(a, element) for k, a in enumerate(args) if k in refs[fn]):
            return {"read", "write"}  # bound to a non-const reference parameter: `acc(out[i], v)`
    if p.type == "assignment_expression" and _same(p.child_by_field_name("left"), element):
        whole = text(p.child_by_field_name("operator")) in {"=", ""} and element.type != "field_expression"
        return {"write"} if whole else {"read", "write"}  # `p[i].z = v` keeps the element's other fields: read too
    if p.type == "update_expression":
        return {"read", "write"}
    if p.type == "pointer_expression" and text(p).lstrip().startswith("&"):
        top = _pointer_top(p)
        inner = _dereferenced(top)
        return _element_use(_element_top(inner), refs) if inner is not None else _pointer_use(top)
    if p.type == "init_declarator" and _same(p.child_by_field_name("value"), element):
        decl = p.child_by_field_name("declarator")
        return set() if decl is not None and decl.type == "reference_declarator" else {"read"}  # the reference's uses
    return {"read"}


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
