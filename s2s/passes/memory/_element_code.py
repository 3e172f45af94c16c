"""One statement node of an elementwise kernel's element code, checked the same way for the 1-D and 2-D forms."""
from __future__ import annotations

from tree_sitter import Node

from s2s.lang.parsing import src

_BRANCHING = {"if_statement", "for_statement", "while_statement", "do_statement", "return_statement", "break_statement",
              "continue_statement", "goto_statement", "switch_statement", "labeled_statement", "conditional_expression"}


_SELECTS = {"if_statement", "conditional_expression"}
_FLAT = {"declaration", "expression_statement", "comment"}


def element_node(source: bytes, n: Node, declared: set[str], selects: bool = False) -> str | None:
    """Why node `n` cannot be run once per element (a branch, or a variable that would carry over between elements);
    None when it can. Names it declares are added to `declared`. `selects`: an `if` / `else` or `c ? a : b` choosing
    what the element computes is no branch out of its code."""
    if n.type in _BRANCHING and not (selects and n.type in _SELECTS):
        return "a branch, loop or return in the element's code"
    if n.type == "declaration":
        declared |= {src(source, c.child_by_field_name("declarator") or c) for c in n.named_children
                     if c.type in {"init_declarator", "identifier"}}
    if n.type in {"assignment_expression", "update_expression"}:
        target = n.child_by_field_name("left") or n.child_by_field_name("argument")
        if target is not None and target.type == "identifier" and src(source, target) not in declared:
            return f"`{src(source, target)}` is assigned in the element's code: it would carry over between elements"
    return None


def straight(n: Node) -> bool:
    """Declarations and expression statements, in `if` / `else` blocks of the same at any depth: code that runs to
    its end (no loop, return, break or jump)."""
    if n.type in _FLAT:
        return True
    if n.type == "compound_statement":
        return all(straight(c) for c in n.named_children)
    if n.type == "else_clause":
        return all(straight(c) for c in n.named_children)
    if n.type == "if_statement":
        parts = [n.child_by_field_name("consequence"), n.child_by_field_name("alternative")]
        return all(p is None or straight(p) for p in parts)
    return False


def conditional(n: Node, top: Node) -> bool:
    """Whether `n` runs only on some elements: under an `if` or a `c ? a : b` between it and the statement `top`."""
    p = n.parent
    while p is not None and p != top.parent:
        if p.type in _SELECTS:
            return True
        p = p.parent
    return False
