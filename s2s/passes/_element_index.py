"""Which element an elementwise kernel's subscript reads: its own (`x[i]`, `X(i)` through macros), a neighbour or a
stride (a polynomial in `i`), or a gather (anything else: a table `g[i % D]`, a broadcast `w[0]`)."""
from __future__ import annotations

import random

from s2s.lang.affine import poly_of
from s2s.lang.cexpr import EvalError, evaluate
from s2s.lang.parsing import parse

from ._common import walk


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
