"""A kernel's canonical form: the spellings of one computation made one text before passes match it.

Each rule is exact (the same operations on the same values in the same order) and is applied until nothing changes:
- braced bodies: a loop's body that is a single statement, and a loop that is the whole body of an `if` or `else`,
  get braces, so that a loop under a guard (`if (i < n) for (...) ...;`) is a statement of a block like any other;
- scoped counters: a counter declared apart from its loops (`int j; ... for (j = 0; ...)`), and used nowhere else,
  is declared by each loop that sets it (`for (int j = 0; ...)`);
- declarations with their values: a scalar declared without a value and first written by an assignment of its own
  block (`int t, i; ... t = blockIdx.x * blockDim.x + threadIdx.x; i = t % n;`, C89's style), with no read before,
  is declared by that assignment (`int t = ...; int i = t % n;`), the shape index and mapping rules read;
- register accumulators: accumulation into memory inside a loop becomes a register (lang/register_accumulator.py).
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

from .edits import Edit, Failure, apply_edits
from .kernel_facts import find_kernel, kernel_facts
from .parsing import descendants, parse, src
from .register_accumulator import accumulator_edits

_BODIES = {"if_statement": ("consequence",), "for_statement": ("body",), "while_statement": ("body",), "do_statement": ("body",)}
_LOOPS = {"for_statement", "while_statement", "do_statement"}
ROUNDS = 32  # each rule changes one place a round at most where it must re-read the kernel


@dataclass(frozen=True)
class Normalized:
    text: bytes
    notes: tuple[str, ...]
    rules: tuple[str, ...]  # the names of the rules that changed the text


Rule = Callable[[bytes, str, "str | None"], "tuple[tuple[Edit, ...], str] | str"]


def braced_bodies(source: bytes, dialect: str, kernel: str | None) -> tuple[tuple[Edit, ...], str] | str:
    body = _kernel_body(source, dialect, kernel)
    if body is None:
        return "no kernel found"
    opens: list[Edit] = []
    closes: list[Edit] = []
    for n in _preorder(body):
        stmts = [n.child_by_field_name(f) for f in _BODIES.get(n.type, ())]
        if n.type == "if_statement":
            alt = n.child_by_field_name("alternative")  # an else_clause, or (older grammars) the statement itself
            alt = alt.named_children[-1] if alt is not None and alt.type == "else_clause" and alt.named_children else alt
            stmts.append(alt if alt is None or alt.type != "if_statement" else None)  # `else if` stays a chain
        for s in stmts:
            if s is None or s.type in {"compound_statement", "comment"} or not s.type.endswith("statement"):
                continue
            if n.type == "if_statement" and s.type not in _LOOPS:  # `if (i >= n) return;` stays as written
                continue
            gap = len(source[: s.start_byte].rstrip())
            if b"\n" in source[gap : s.start_byte]:  # the body on its own line: `{` ends the header, `}` its own line
                opens.append(Edit(gap, gap, " {"))
                closes.append(Edit(s.end_byte, s.end_byte, "\n" + _indent(source, n.start_byte) + "}"))
            else:
                opens.append(Edit(s.start_byte, s.start_byte, "{ "))
                closes.append(Edit(s.end_byte, s.end_byte, " }"))
    edits = opens + closes[::-1]  # at one point the inner body closes first
    return (tuple(edits), "single-statement bodies braced") if edits else "every body is braced"


def _preorder(node: Node) -> list[Node]:
    out = [node]
    for c in node.named_children:
        out += _preorder(c)
    return out


def _indent(source: bytes, at: int) -> str:
    line = source.rfind(b"\n", 0, at) + 1
    return source[line : line + len(source[line:at]) - len(source[line:at].lstrip(b" \t"))].decode()


def scoped_counters(source: bytes, dialect: str, kernel: str | None) -> tuple[tuple[Edit, ...], str] | str:
    body = _kernel_body(source, dialect, kernel)
    if body is None:
        return "no kernel found"
    nodes = descendants(body)
    for decl in (n for n in nodes if n.type == "declaration"):
        names = [d for d in decl.children_by_field_name("declarator") if d.type == "identifier"]
        kind = decl.child_by_field_name("type")
        for d in names:
            loops = _counting_loops(src(source, d), decl, nodes, source)
            if kind is None or not loops:
                continue
            ty = source[decl.start_byte:kind.end_byte].decode()
            rest = [src(source, x) for x in decl.children_by_field_name("declarator") if x != d]
            edits = [Edit(decl.start_byte, decl.end_byte, f"{ty} {', '.join(rest)};") if rest else _drop_line(source, decl)]
            edits += [Edit(init.start_byte, init.start_byte, f"{ty} ") for init in loops]
            return tuple(edits), f"counter {src(source, d)} declared by its loops"
    return "no counter is declared apart from its loops"


def _counting_loops(name: str, decl: Node, nodes: list[Node], source: bytes) -> list[Node]:
    """The initializers `name = v` of the for loops that count with `name`, when every other use of `name` lies inside
    one of them (its value never crosses from one loop to code after it), none nests in another, and nothing else
    declares `name`; [] otherwise."""
    owners, inits = [], []
    for n in nodes:
        init = n.child_by_field_name("initializer") if n.type == "for_statement" else None
        left = init.child_by_field_name("left") if init is not None and init.type == "assignment_expression" else None
        if left is not None and left.type == "identifier" and src(source, left) == name:
            owners.append(n)
            inits.append(init)
    if not owners or any(a != b and a.start_byte <= b.start_byte and b.end_byte <= a.end_byte for a in owners for b in owners):
        return []
    for n in nodes:
        if n.type == "identifier" and src(source, n) == name and n.parent != decl:
            if not any(o.start_byte <= n.start_byte and n.end_byte <= o.end_byte for o in owners):
                return []
        if n.type in {"declaration", "init_declarator"} and n != decl and name in _declared(n, source):
            return []
    if not all(decl.end_byte <= o.start_byte for o in owners) or decl.parent is None:
        return []
    scope = decl.parent  # the loops lie in the declaration's block
    if not all(scope.start_byte <= o.start_byte and o.end_byte <= scope.end_byte for o in owners):
        return []
    return [i for i in inits if i is not None]


def _drop_line(source: bytes, node: Node) -> Edit:
    """The node removed, with its line where nothing else stands on it."""
    start, end = source.rfind(b"\n", 0, node.start_byte) + 1, source.find(b"\n", node.end_byte)
    if end >= 0 and not source[start:node.start_byte].strip() and not source[node.end_byte:end].strip():
        return Edit(start, end + 1, "")
    return Edit(node.start_byte, node.end_byte, "")


def _declared(n: Node, source: bytes) -> set[str]:
    if n.type == "init_declarator":
        d = n.child_by_field_name("declarator")
        return {src(source, d)} if d is not None and d.type == "identifier" else set()
    return {src(source, d) for d in n.children_by_field_name("declarator") if d.type == "identifier"}


def register_accumulators(source: bytes, dialect: str, kernel: str | None) -> tuple[tuple[Edit, ...], str] | str:
    facts = kernel_facts(source, dialect, kernel)
    if facts is None:
        return "no kernel found"
    return accumulator_edits(source, facts)


_STORAGE = re.compile(r"\b(static|extern|register|thread_local|__shared__|__constant__|__device__|__local|local|__constant|constant)\b")
_JUMPS = {"labeled_statement", "goto_statement", "case_statement"}


def valued_declarations(source: bytes, dialect: str, kernel: str | None) -> tuple[tuple[Edit, ...], str] | str:
    """`T a, b; ... a = e;` -> `T b; ... T a = e;`: each plain scalar of a declaration whose first mention after it, in
    its block, is a statement `a = e;` of that block with no `a` in `e` (nothing reads it before; later code stays in
    its scope). One declaration a round."""
    body = _kernel_body(source, dialect, kernel)
    if body is None:
        return "no kernel found"
    nodes = descendants(body)
    if any(n.type in _JUMPS for n in nodes):  # a jump past a declaration with a value is an error
        return "the kernel has labels or cases: a declaration with a value must not be jumped over"
    for decl in sorted((n for n in nodes if n.type == "declaration"), key=lambda n: n.start_byte):
        block, kind = decl.parent, decl.child_by_field_name("type")
        if block is None or block.type != "compound_statement" or kind is None:
            continue
        head = source[decl.start_byte:kind.end_byte].decode()
        if _STORAGE.search(head) or _STORAGE.search(source[kind.end_byte:decl.end_byte].decode()):
            continue
        later = [c for c in block.named_children if c.start_byte >= decl.end_byte]
        stores: dict[str, Node] = {}
        for d in decl.children_by_field_name("declarator"):
            name = src(source, d) if d.type == "identifier" else ""
            first = next((s for s in later if _mentions(s, name, source)), None) if name else None
            if first is not None and _store(first, name, source):
                stores[name] = first
        if not stores:
            continue
        rest = [src(source, x) for x in decl.children_by_field_name("declarator") if src(source, x) not in stores]
        edits = [Edit(decl.start_byte, decl.end_byte, f"{head} {', '.join(rest)};") if rest else _drop_line(source, decl)]
        edits += [Edit(s.start_byte, s.start_byte, f"{head} ") for s in stores.values()]
        return tuple(edits), f"{', '.join(stores)} declared by {'their' if len(stores) > 1 else 'its'} first assignment"
    return "no scalar is declared apart from its first assignment"


def _mentions(node: Node, name: str, source: bytes) -> bool:
    return any(n.type == "identifier" and src(source, n) == name for n in descendants(node))


def _store(stmt: Node, name: str, source: bytes) -> bool:
    """`stmt` is `name = e;` with no `name` in `e`."""
    if stmt.type != "expression_statement" or len(stmt.named_children) != 1:
        return False
    a = stmt.named_children[0]
    left, right, op = a.child_by_field_name("left"), a.child_by_field_name("right"), a.child_by_field_name("operator")
    return a.type == "assignment_expression" and left is not None and right is not None and op is not None \
        and src(source, op) == "=" and left.type == "identifier" and src(source, left) == name and not _mentions(right, name, source)


RULES: tuple[Rule, ...] = (braced_bodies, scoped_counters, valued_declarations, register_accumulators)


def normalize(source: bytes, dialect: str, kernel: str | None = None, rules: tuple[Rule, ...] = RULES) -> Normalized | str:
    """The kernel with every rule applied until none changes it, and what changed; or why nothing did (each rule's
    reason, joined)."""
    notes: list[str] = []
    changed: list[str] = []
    why: dict[str, str] = {}
    for rule in rules:
        for _ in range(ROUNDS):
            got = rule(source, dialect, kernel)
            if isinstance(got, str):
                why.setdefault(rule.__name__, got)
                break
            out = apply_edits(source, got[0], dialect)
            if isinstance(out, Failure):
                why[rule.__name__] = f"{got[1]}: {out.reason}"
                break
            source = out.text
            notes.append(got[1])
            changed += [rule.__name__] if rule.__name__ not in changed else []
    if not notes:
        return "; ".join(why.values())
    return Normalized(source, tuple(dict.fromkeys(notes)), tuple(changed))


def _kernel_body(source: bytes, dialect: str, kernel: str | None) -> Node | None:
    found = find_kernel(parse(source, dialect).root_node, source, dialect, kernel)
    return found[0].child_by_field_name("body") if found is not None else None
