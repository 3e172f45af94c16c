"""The digits of a flat thread index split by `/` and `%` as delinearize-2d reads them from the kernel's first statements:
digit declarations (one per declaration, or several sharing one), the guards between them, and t as the digits spell it."""
from __future__ import annotations

from tree_sitter import Node

from s2s.lang import index_split as ix
from s2s.lang.affine import Poly
from s2s.lang.parsing import parse

from ..common.tree import statements, text, walk


def header(source: bytes, stmts: list[Node], t: str, sizes: set[str]) -> tuple[list[ix.Digit] | str, list[Node]]:
    """The digit declarations and the guards (return or block form) before the work, in order."""
    digits: list[ix.Digit] = []
    guards: list[Node] = []
    seq, i = stmts, 1
    while i < len(seq):
        s = seq[i]
        found = digits_of(source, s, t)
        if found:
            for d in found:
                unproven = sorted((d.div.names | (d.mod.names if d.mod is not None else frozenset())) - sizes)
                if unproven:
                    return f"{d.var}: {', '.join(unproven)} is no kernel parameter nor a compile-time value the build cannot change", guards
            digits += found
        elif s.type == "if_statement" and s.child_by_field_name("alternative") is None and seq is stmts \
                and (returns(s.child_by_field_name("consequence")) or i == len(seq) - 1):
            guards.append(s)  # an early exit, or the guarded block that holds the rest of the kernel
            cons = s.child_by_field_name("consequence")
            if not returns(cons):
                if cons is None or cons.type != "compound_statement":
                    break
                seq, i = statements(cons), 0
                continue
        elif bare(s) and t not in ix.idents_in(source, s):
            pass  # `int l, j1;`: names declared without values, read later by the work
        elif s.type == "declaration" and t in ix.idents_in(source, s):
            return f"'{text(source, s)}' is not {t} / D, {t} % E or ({t} / D) % E with sizes D and E", guards
        else:
            break
        i += 1
    return digits, guards

def bare(s: Node) -> bool:
    """A declaration of names without values (`int l, j1; double tmp;`): it computes nothing."""
    return s.type == "declaration" and all(d.type in {"identifier", "pointer_declarator", "array_declarator"} and
                                           not any(c.type == "init_declarator" for c in walk(d))
                                           for d in s.children_by_field_name("declarator"))


def guard_cond(guard: Node) -> Node:
    c = guard.child_by_field_name("condition")
    assert c is not None
    return c


def returns(cons: Node | None) -> bool:
    return cons is not None and (cons.type == "return_statement" or (cons.type == "compound_statement" and
                                                                     [c.type for c in statements(cons)] == ["return_statement"]))



def decl_type(source: bytes, decl: Node) -> str:
    """The type a declaration gives its names (`int` of `int y = p / W, x = p % W;`)."""
    first = decl.child_by_field_name("declarator")
    return source[decl.start_byte:first.start_byte].decode().strip() if first is not None else "int"


def digits_of(source: bytes, s: Node, t: str) -> list[ix.Digit]:
    """The digits a declaration holds: one (`int i = t / n;`), or several sharing it (`int y = t / W, x = t % W;`),
    each declarator a digit; [] where any is not."""
    if s.type != "declaration":
        return []
    one = ix.digit_of(source, s, t)
    if one is not None:
        return [one]
    decls = s.children_by_field_name("declarator")
    if len(decls) < 2:
        return []
    ty = decl_type(source, s).encode()
    out = []
    for d in decls:  # each declarator as a declaration of its own, read as digit_of reads one
        alone = ty + b" " + source[d.start_byte:d.end_byte] + b";"
        stmt = next((n for n in walk(parse(alone, "cuda").root_node) if n.type == "declaration"), None)
        digit = ix.digit_of(alone, stmt, t) if stmt is not None else None
        if digit is None:
            return []
        out.append(ix.Digit(digit.var, digit.div, digit.mod, s))
    return out


def spelled(source: bytes, t_decl: Node, chain: list[ix.Digit]) -> str:
    """t as its digits spell it, top digit first (`(y * W + x)`), in t's own type where the digits' is narrower."""
    t_type, d_type = decl_type(source, t_decl), decl_type(source, chain[-1].decl)
    parts = []
    for d in reversed(chain):
        var = f"({t_type}){d.var}" if d is chain[-1] and t_type != d_type else d.var
        div = d.div.text()
        parts.append(var if d.div == Poly.const(1) else f"{var} * {div if len(d.div.terms) == 1 and '+' not in div else f'({div})'}")
    return "(" + " + ".join(parts) + ")"
