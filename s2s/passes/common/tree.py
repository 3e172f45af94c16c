"""Tree helpers shared by the passes: re-parse the kernel file and find nodes by the byte ranges in the facts."""
from __future__ import annotations

from collections.abc import Callable, Iterator

from tree_sitter import Node

from s2s.lang.edits import Edit
from s2s.lang.edits import indent_of as indent_of  # the passes take it from here
from s2s.lang.kernel_facts import KernelFacts
from s2s.lang.kernel_facts import fresh as fresh  # the passes take it from here
from s2s.lang.parsing import parse, src


def body_node(source: bytes, facts: KernelFacts) -> Node:
    root = parse(source, facts.dialect).root_node
    node = root.descendant_for_byte_range(facts.body_start, facts.body_end)
    assert node is not None
    while node.type != "compound_statement" and node.parent is not None:
        node = node.parent
    return node


def node_at(source: bytes, facts: KernelFacts, start: int, end: int, kind: str) -> Node | None:
    node = parse(source, facts.dialect).root_node.descendant_for_byte_range(start, end)
    while node is not None and not (node.type == kind and node.start_byte == start and node.end_byte == end):
        node = node.parent
    return node


def statements(block: Node) -> list[Node]:
    """The statements of a compound statement (comments left out)."""
    return [c for c in block.named_children if c.type != "comment"]


def text(source: bytes, node: Node | None) -> str:
    return src(source, node) if node is not None else ""


def scalar_type(facts: KernelFacts, array: str) -> str:
    p = facts.param(array)
    return p.base_type if p is not None else ""


def before_kernel(source: bytes, facts: KernelFacts) -> int:
    """Where to insert new top-level items for the kernel: before the comments right above its definition."""
    node = parse(source, facts.dialect).root_node.descendant_for_byte_range(facts.start, facts.start)
    while node is not None and node.parent is not None and node.parent.type != "translation_unit":
        node = node.parent
    at = facts.start
    prev = node.prev_sibling if node is not None else None
    while prev is not None and prev.type == "comment" and source.count(b"\n", prev.end_byte, at) <= 1:
        at, prev = prev.start_byte, prev.prev_sibling
    return at


def insert_before_kernel(source: bytes, facts: KernelFacts, text: str) -> Edit:
    """An edit putting `text` (whole top-level items) before the kernel and its comments, a blank line each side."""
    at = before_kernel(source, facts)
    lead = "" if at == 0 or source[:at].endswith(b"\n\n") else ("\n" if source[:at].endswith(b"\n") else "\n\n")
    return Edit(at, at, lead + text.rstrip("\n") + "\n\n")


def walk(node: Node, descend: Callable[[Node], bool] | None = None) -> Iterator[Node]:
    """Every node under `node` (itself first) in source order; `descend(n)` False keeps out of n's children."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        if descend is None or descend(n):
            stack.extend(reversed(n.children))


def single_store(source: bytes, stmts: list[Node]) -> tuple[Node, Node] | None:
    """(the subscript stored to, the value) where `stmts` is exactly one plain store `A[index] = value;`."""
    if len(stmts) != 1 or stmts[0].type != "expression_statement" or not stmts[0].named_children:
        return None
    a = stmts[0].named_children[0]
    left, right, op = a.child_by_field_name("left"), a.child_by_field_name("right"), a.child_by_field_name("operator")
    if a.type != "assignment_expression" or left is None or right is None or left.type != "subscript_expression" \
            or (op is not None and text(source, op) != "="):
        return None
    return left, right
