"""Which element an elementwise kernel's subscript reads: its own (`x[i]`, `X(i)` through macros, or `x[i + OFF]` in a
loop whose OFF is the same for all its elements), a neighbour or a stride (a polynomial in `i`), or a gather (anything
else: a table `g[i % D]`, a broadcast `w[0]`)."""
from __future__ import annotations

import random
import re

from s2s.lang.affine import poly_of
from s2s.lang.cexpr import EvalError, evaluate
from s2s.lang.parsing import parse

from ..common.tree import walk


def steps_with(index: str, var: str) -> bool:
    """Whether `index` is a polynomial in which `var` appears (`i + 1`, `2 * i`, `(i) * INCX`): a neighbour or a strided
    access, which a stencil or gather pass moves, not a table read (`i % D`, `idx[i]`) or a broadcast (`0`, `k`)."""
    tree = parse(f"long s2s_index = {index};".encode(), "cuda")
    value = next((n.child_by_field_name("value") for n in walk(tree.root_node) if n.type == "init_declarator"), None)
    poly = poly_of(value, f"long s2s_index = {index};".encode())
    return poly is not None and any(var in mono for mono, _ in poly.terms)


def is_own_index(index: str, var: str, objects: dict[str, str]) -> bool:
    """index(var) == var for random values of var and of every other name (object-like macros substituted)."""
    rng = random.Random(11)
    for _ in range(4):
        env: dict[str, int] = {var: rng.randint(5, 1 << 20)}

        def resolve(name: str, env: dict[str, int] = env) -> int | str:
            return objects[name] if name in objects else env.setdefault(name, rng.randint(3, 997))

        try:
            if evaluate(index, resolve) != env[var]:
                return False
        except (EvalError, ZeroDivisionError, RecursionError):
            return False
    return True


def unit_offset(index: str, var: str, objects: dict[str, str], uniform: frozenset[str]) -> str:
    """OFF where `index` is `var + OFF` with OFF an expression of the names in `uniform` (and object-like macros), the
    same for every value of var (checked numerically); "" where it is not."""
    words = set(re.findall(r"[A-Za-z_]\w*", index))
    for name in list(words & set(objects)):
        words |= set(re.findall(r"[A-Za-z_]\w*", objects[name]))
    if not words - {var} - set(objects) <= uniform or var not in words:
        return ""
    rng = random.Random(13)
    for _ in range(4):
        env = {n: rng.randint(3, 997) for n in words - {var} - set(objects)}
        shifts = set()
        for v in (rng.randint(5, 1 << 20), rng.randint(5, 1 << 20)):
            values: dict[str, int] = {**env, var: v}

            def resolve(name: str, values: dict[str, int] = values) -> int | str:
                return objects[name] if name in objects else values[name]

            try:
                shifts.add(evaluate(index, resolve) - v)
            except (EvalError, ZeroDivisionError, RecursionError, KeyError):
                return ""
        if len(shifts) != 1:
            return ""
    return re.sub(rf"\b{re.escape(var)}\b", "0", index)
