"""allpairs-bodies' copies: what is declared once a body in smem-allpairs' tiled form, and the edits that repeat it."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from tree_sitter import Node

from s2s.lang.edits import Edit
from s2s.lang.kernel_facts import KernelFacts, idents

from ..common.tree import fresh, indent_of, scalar_type, text
from ._allpairs_skip import without_skip
from ._pair_loop import accumulators, pair_loop


@dataclass
class Copies:
    names: dict[str, list[str]] = field(default_factory=dict)  # a name declared once a body -> its name in each body
    loads: dict[str, tuple[str, str]] = field(default_factory=dict)  # register for A[i] -> (A, element type)
    edits: list[Edit] = field(default_factory=list)

    def rename(self, chunk: str, r: int) -> str:
        if not self.names:
            return chunk
        alt = "|".join(sorted(map(re.escape, self.names), key=len, reverse=True))
        return re.sub(rf"(?<![\w.])(?<!->)({alt})\b", lambda m: self.names[m.group(1)][r], chunk)


def copies_of(source: bytes, facts: KernelFacts, body: Node, rest: list[Node], i: str, live: str, b: int,
              skip: str = "branch") -> Copies | str:
    """The per-body names and the edits for the statements after the clamp (`rest`), or why the form does not fit."""
    found = pair_loop(source, body)
    if isinstance(found, str):
        return found
    pair, tile_loop, scope = found.loop, found.tile_loop, found.scope
    if scope != body and scope not in rest:
        return "the pair loop must sit in a tile loop at the top of the kernel body"
    if scope != body and rest[-1] != scope:
        return "statements after the block that holds the tile loop"
    inner = [s for s in scope.named_children if s.type != "comment"]
    prelude = [s for s in rest if s != scope and s.start_byte < tile_loop.start_byte] + \
        ([s for s in inner if s.end_byte <= tile_loop.start_byte] if scope != body else [])
    later = [s for s in inner if s.start_byte > tile_loop.end_byte]
    guard = later[0] if len(later) == 1 and later[0].type == "if_statement" else None
    if guard is None or guard.child_by_field_name("alternative") is not None or \
            not re.fullmatch(rf"\(\s*{live}\s*\)", text(source, guard.child_by_field_name("condition"))):
        return f"everything after the tile loop must be one `if ({live}) {{ ... }}`"
    accs = accumulators(source, [*body.named_children, *scope.named_children], pair)
    if isinstance(accs, str):
        return accs
    names = {i, live, *accs}
    post_text = text(source, guard.child_by_field_name("consequence"))
    for s in prelude:  # a local the code after the loop writes holds one value a body: repeated like the sums
        declared = {_declared(source, d) for d in s.children_by_field_name("declarator")} if s.type == "declaration" else set()
        names |= {v for v in declared if v and re.search(
            rf"(?<![\w.])(?<!->){v}\s*(?:[-+*/%&|^]?=(?!=)|\+\+|--)|(?:\+\+|--)\s*{v}\b", post_text)}
    around = source[tile_loop.start_byte : pair.start_byte] + source[pair.end_byte : tile_loop.end_byte]
    if idents(around.decode("utf-8", "replace")) & names:
        return f"the tile loop uses {i} or a sum outside the pair loop (hoist-invariants goes after allpairs-bodies)"
    repeat = []
    for s in prelude:
        if not idents(text(source, s)) & names:
            continue
        if s.type != "declaration" or re.search(r"\b(__shared__|static|extern)\b", text(source, s)):
            return f"only declarations may use {i} or a sum before the tile loop: {text(source, s).splitlines()[0]}"
        names |= {_declared(source, d) for d in s.children_by_field_name("declarator")}
        repeat.append(s)
    pb = pair.child_by_field_name("body")
    assert pb is not None
    chunk, undo, loads = _body(source, pb), list[str](), dict[str, tuple[str, str]]()
    if skip != "branch":
        tiles = {s: a for s, _, a in re.findall(r"(\w+)\s*\[\s*(\w+)\s*\]\s*=\s*(\w+)\s*\[\s*\w+\s*\+\s*\2\s*\]",
                                                around.decode("utf-8", "replace"))}
        shared = set(re.findall(r"__shared__[^;=]*?(\w+)\s*\[", source[facts.body_start : facts.body_end].decode("utf-8", "replace")))
        bare = without_skip(source, pb, found.j, i, accs, skip, tiles, found.t, shared)
        if isinstance(bare, str):
            return bare
        chunk, undo = bare
    for a in sorted(set(re.findall(rf"(?<![\w.])(?<!->)(\w+)\s*\[\s*{i}\s*\]", chunk))):
        p = facts.param(a)
        if p is not None and p.pointer and not p.written and scalar_type(facts, a):
            h = fresh(facts, source, f"{a}_{i}")
            chunk = re.sub(rf"(?<![\w.])(?<!->){a}\s*\[\s*{i}\s*\]", h, chunk)
            undo = [re.sub(rf"(?<![\w.])(?<!->){a}\s*\[\s*{i}\s*\]", h, u) for u in undo]
            loads[h] = (a, scalar_type(facts, a))
    out = Copies({n: [fresh(facts, source, f"{n}_{r}") for r in range(b)] for n in [*sorted(names), *loads]}, loads)
    for s in repeat:
        out.edits.append(Edit(s.start_byte, s.end_byte, f"\n{indent_of(source, s.start_byte)}".join(
            out.rename(text(source, s), r) for r in range(b))))
    pp = indent_of(source, pair.start_byte)
    opening, closing = ("do {", "} while (0);") if re.search(r"\bcontinue\b", chunk) else ("{", "}")
    out.edits.append(Edit(pb.start_byte, pb.end_byte, "{" + "".join(
        f"\n{pp}    {opening}" + _shift(out.rename(chunk, r)) + f"\n{pp}    {closing}" for r in range(b)) + f"\n{pp}}}"))
    cons = guard.child_by_field_name("consequence")
    assert cons is not None
    gp, post = indent_of(source, guard.start_byte), _body(source, cons)
    if undo:  # the j == i term taken out again, once a body, after the sums are complete
        post = f"\n{gp}    {{" + "".join(f"\n{gp}        {u}" for u in undo) + f"\n{gp}    }}" + post
    out.edits.append(Edit(cons.start_byte, cons.end_byte, "{" + "".join(
        f"\n{gp}    if ({out.names[live][r]}) {{" + _shift(out.rename(post, r)) + f"\n{gp}    }}" for r in range(b)) + f"\n{gp}}}"))
    return out


def _declared(source: bytes, d: Node) -> str:
    inner = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
    m = re.search(r"\w+", text(source, inner))
    return m.group(0) if m else ""


def _body(source: bytes, node: Node) -> str:
    """A statement's text as the lines of a block one level in from the statement's own line (a newline before each)."""
    pad = indent_of(source, node.start_byte) + "    "
    if node.type != "compound_statement":
        return f"\n{pad}{text(source, node)}"
    chunk = text(source, node)[1:-1].rstrip()
    return chunk if chunk.startswith("\n") else f"\n{pad}{chunk.strip()}"


def _shift(chunk: str) -> str:
    return re.sub(r"\n(?=[^\n])", "\n    ", chunk)
