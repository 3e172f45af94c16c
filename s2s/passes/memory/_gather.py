"""What gather-window reads off a kernel: the gathered reads, the loop's first trip, pure declarations, early returns."""
from __future__ import annotations

from tree_sitter import Node

from s2s.lang.kernel_facts import THREAD_BUILTIN, KernelFacts, Subscript, idents

from ..common.tree import statements, text, walk

INT = {"int", "int32_t", "signed int", "signed"}
_IMPURE = {"assignment_expression", "update_expression", "call_expression", "comma_expression"}


def gathers(facts: KernelFacts) -> tuple[str, list[Subscript]] | str:
    """The read-only array whose reads in a loop take their index from another array's load, and those reads."""
    pointers = {p.name for p in facts.params if p.pointer}
    for s in facts.subscripts:
        p = facts.param(s.array)
        if s.write or p is None or not p.pointer or p.written or not s.loops:
            continue
        if not (idents(s.index) & pointers or loaded_local(facts, s)):
            continue
        if any(facts.param(a).base_type not in INT for a in idents(s.index) & pointers):  # type: ignore[union-attr]
            return f"the gather {s.array}[{s.index}] takes its index from an array that is not of int (the window's bounds are ints)"
        if len(s.loops) != 1:
            return f"the gather {s.array}[{s.index}] sits in a nested loop (only a loop at the kernel's top level is windowed)"
        if facts.loops[s.loops[0]].kind != "for_statement":
            return f"the gather {s.array}[{s.index}] sits in a loop that is not a for loop"
        reads = [r for r in facts.subscripts if r.array == s.array and r.loops == s.loops]
        if any(r.write for r in reads):
            return f"{s.array} is written in the loop"
        return s.array, reads
    return "no read of a read-only array indexed by a value loaded from another array inside a loop (no gather)"


def loaded_local(facts: KernelFacts, s: Subscript) -> bool:
    """Whether the index is a local the loop assigns (not its counter) after a load in its body: `c = idx[k]; x[c]`."""
    loop, name = facts.loops[s.loops[0]], s.index.strip()
    return name.isidentifier() and name != loop.var and name in loop.assigned and \
        any(loop.body_start <= r.start and r.end < s.start and not r.write for r in facts.subscripts)


def first_trip(source: bytes, loop: Node, read: Subscript) -> tuple[list[str], str] | str:
    """The loop body's declarations before the gathering statement and the read's index, as the loop's first trip
    computes them."""
    body = loop.child_by_field_name("body")
    items = statements(body) if body is not None and body.type == "compound_statement" else [body] if body is not None else []
    at = next((i for i, s in enumerate(items) if s.start_byte <= read.start and read.end <= s.end_byte), -1)
    if at < 0:
        return "the gather is not inside the loop's body"
    decls = items[:at]
    if not all(d.type == "declaration" and pure(d) for d in decls):
        return "the loop's statements before the gather must be pure declarations (the first trip is replayed)"
    raw = source[read.start : read.end].decode()
    index = raw[raw.index("[") + 1 : raw.rindex("]")].strip()
    if index.isidentifier():
        typed = next((d for d in decls if index in declared(source, d)), None)
        if typed is None:
            return f"the gather's index {index} is not declared in the loop body before it"
        if text(source, typed.child_by_field_name("type")).strip() not in INT:
            return f"the gather's index {index} is not an int (the window's bounds are ints)"
        if not any(n.type == "subscript_expression" for n in walk(typed)):
            return f"the index {index} is not loaded from an array (no gather)"
    elif THREAD_BUILTIN.search(index):
        return "the gather's index reads a thread builtin"
    return [text(source, d) for d in decls], index


def declared(source: bytes, decl: Node) -> set[str]:
    out = set()
    for d in decl.children_by_field_name("declarator"):
        name = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
        out.add(text(source, name))
    return out


def pure(decl: Node) -> bool:
    """A declaration whose initializers change nothing (no assignment, increment, or call other than __ldg)."""
    for d in decl.children_by_field_name("declarator"):
        value = d.child_by_field_name("value") if d.type == "init_declarator" else None
        for n in walk(value) if value is not None else ():
            if n.type in _IMPURE and not (n.type == "call_expression" and n.children and n.children[0].text == b"__ldg"):
                return False
    return True


def early_return(source: bytes, s: Node) -> str | None:
    """The condition of `if (c) return;` (no else), else None."""
    if s.type != "if_statement" or s.child_by_field_name("alternative") is not None:
        return None
    cons = s.child_by_field_name("consequence")
    body = text(source, cons).strip("{} \n\t;") if cons is not None else ""
    return text(source, s.child_by_field_name("condition")).strip() if body == "return" else None


def returns(s: Node) -> bool:
    return any(n.type == "return_statement" for n in walk(s))
