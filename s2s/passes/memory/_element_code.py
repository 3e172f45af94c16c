"""One statement node of an elementwise kernel's element code, checked the same way for the 1-D and 2-D forms."""
from __future__ import annotations

from tree_sitter import Node

from s2s.lang.parsing import src

_BRANCHING = {"if_statement", "for_statement", "while_statement", "do_statement", "return_statement", "break_statement",
              "continue_statement", "goto_statement", "switch_statement", "labeled_statement", "conditional_expression"}


def element_node(source: bytes, n: Node, declared: set[str]) -> str | None:
    """Why node `n` cannot be run once per element (a branch, or a variable that would carry over between elements);
    None when it can. Names it declares are added to `declared`."""
    if n.type in _BRANCHING:
        return "a branch, loop or return in the element's code"
    if n.type == "declaration":
        declared |= {src(source, c.child_by_field_name("declarator") or c) for c in n.named_children
                     if c.type in {"init_declarator", "identifier"}}
    if n.type in {"assignment_expression", "update_expression"}:
        target = n.child_by_field_name("left") or n.child_by_field_name("argument")
        if target is not None and target.type == "identifier" and src(source, target) not in declared:
            return f"`{src(source, target)}` is assigned in the element's code: it would carry over between elements"
    return None
