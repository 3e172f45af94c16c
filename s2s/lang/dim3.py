"""dim3 values as tree-sitter reads them: which names a host function sees as dim3 variables, and the three components
of a launch's grid or block expression.

Declarations are read from the tree, not the text: `dim3 g((n + 15) / 16, m / 16), b(16, 16);` declares g and b (each
declarator, whatever its initializer holds), a comment between the type and a name or after a declarator is a comment,
a `dim3` in a comment or in a struct's fields declares nothing in the function, and a file-scope `dim3 grid(64, 64);`
counts where no local or parameter of the function hides it. tree-sitter reads `dim3 grid(n);` (names as arguments) as
a function declaration: one whose parameters have no names is a construction (`dim3 b(l[0], l[1]);` too: parameters
of type `l` with abstract declarators `[0]`); `dim3 f(int n);` is a prototype.
"""
from __future__ import annotations

from tree_sitter import Node

from .parsing import src

_WRAPPERS = {"init_declarator", "reference_declarator", "parenthesized_declarator"}
_BLOCKS = {"compound_statement", "for_statement", "for_range_loop", "while_statement", "do_statement", "if_statement",
           "switch_statement", "catch_clause"}  # what a declaration inside them is visible in


def declared_types(scope: Node, data: bytes, at: int | None = None) -> dict[str, str]:
    """{name: type} of the variables declared in `scope` (a function: its parameters and every declaration of its body;
    a translation unit: its file-scope declarations, namespaces included), the last declaration of a name winning; with
    `at` (a byte offset), only those visible there: declared before it, in a block that holds it. Nested functions and
    lambdas, and struct and class bodies, are not looked into. A pointer or array declarator's type ends in `*` or `[]`;
    `auto g = dim3(n)` is a dim3."""
    out: dict[str, str] = {}
    stack = [scope]
    while stack:
        node = stack.pop()
        if at is not None and (node.start_byte >= at or node.type in _BLOCKS and node.end_byte <= at):
            continue
        if node.type in {"declaration", "parameter_declaration", "optional_parameter_declaration"}:
            for decl in node.children_by_field_name("declarator"):
                named = _declared(decl, data, src(data, node.child_by_field_name("type") or node).strip())
                if named is not None:
                    out[named[0]] = named[1]
            continue
        if node is not scope and node.type in {"function_definition", "lambda_expression", "field_declaration_list"}:
            continue
        stack.extend(reversed(node.named_children))
    return out


def _declared(decl: Node, data: bytes, ctype: str) -> tuple[str, str] | None:
    """(name, type) that one declarator declares; None for a function prototype or what is not a variable."""
    suffix = ""
    node: Node | None = decl
    while node is not None:
        if node.type == "identifier":
            if ctype == "auto" and decl.type == "init_declarator" and _is_dim3_call(decl.child_by_field_name("value"), data):
                ctype = "dim3"
            return src(data, node), ctype + suffix
        if node.type == "function_declarator":  # `dim3 grid(n);` is a construction, `dim3 f(int n);` a prototype
            params = node.child_by_field_name("parameters")
            plist = [p for p in params.named_children if p.type != "comment"] if params is not None else []
            if not plist or any(_names_a_parameter(p.child_by_field_name("declarator")) or p.type != "parameter_declaration"
                                for p in plist):
                return None
        elif node.type == "pointer_declarator":
            suffix += "*"
        elif node.type == "array_declarator":
            suffix += "[]"
        elif node.type not in _WRAPPERS:
            return None
        inner = node.child_by_field_name("declarator")  # `&` and `(...)` declarators hold theirs unnamed
        node = inner if inner is not None or not node.named_children else node.named_children[-1]
    return None


def _names_a_parameter(decl: Node | None) -> bool:
    """Whether a parameter's declarator names it (`int n`, `float* p`); `dim3 b(l[0], l[1])` reads as parameters of
    type `l` with the abstract declarator `[0]`, which name nothing: a construction, not a prototype."""
    stack = [decl] if decl is not None else []
    while stack:
        node = stack.pop()
        if node.type in {"identifier", "field_identifier"}:
            return True
        stack.extend(node.named_children)
    return False


def _is_dim3_call(node: Node | None, data: bytes) -> bool:
    fn = node.child_by_field_name("function") if node is not None and node.type == "call_expression" else None
    return fn is not None and src(data, fn).strip() == "dim3"


def is_dim3(name: str, fn: Node | None, root: Node, data: bytes, at: int | None = None) -> bool:
    """Whether `name`, used in function `fn` (None: at file scope) of the unit `root` (at byte `at`, else anywhere in
    it), is a dim3 variable: declared so in the function (a parameter or a local visible there), or at file scope and
    not hidden by a local or parameter of that name."""
    if fn is not None:
        local = declared_types(fn, data, at)
        if name in local:
            return local[name] == "dim3"
    return declared_types(root, data, at).get(name) == "dim3"


def components(node: Node, data: bytes, fn: Node | None, root: Node) -> list[str]:
    """The x, y and z of a launch's grid or block expression, as expressions of the site: `dim3(a, f(b, c))` and
    `{a, b}` give their arguments (then 1), a dim3 variable `g` gives g.x, g.y, g.z, anything else is the x alone."""
    if _is_dim3_call(node, data) or node.type == "initializer_list":
        args = node.child_by_field_name("arguments") if node.type == "call_expression" else node
        parts = [src(data, a).strip() for a in (args.named_children if args is not None else []) if a.type != "comment"]
        return (parts + ["1", "1", "1"])[:3]
    expr = src(data, node).strip()
    if node.type == "identifier" and is_dim3(expr, fn, root, data, node.start_byte):
        return [f"{expr}.x", f"{expr}.y", f"{expr}.z"]
    return [f"({expr})", "1", "1"]
