"""Whether an index expression steps by exactly one element with a loop variable: checked numerically, function-like
macros expanded (`#define IDX(r, c) ((r) * N + (c))`), the expression evaluated at k and k + 1 for several random
values of every other name. Read by vector-loads and by the lanes and quads of split-reduction and warp-rows."""
from __future__ import annotations

import random
import re

from s2s.lang.cexpr import EvalError, evaluate
from s2s.lang.textsplit import split_top_level

FUNC_MACRO = re.compile(r"^\s*#\s*define\s+(\w+)\(([^)]*)\)\s+(.+)$", re.M)
TERM = re.compile(r"^\s*(\w+)\s*\[(.+)\]\s*$", re.S)


def expand_macros(expr: str, macros: dict[str, tuple[list[str], str]]) -> str:
    for _ in range(8):
        changed = False
        for name, (params, body) in macros.items():
            m = re.search(rf"\b{name}\s*\(", expr)
            if not m:
                continue
            depth, j = 1, m.end()
            while j < len(expr) and depth:
                depth += {"(": 1, ")": -1}.get(expr[j], 0)
                j += 1
            args = split_top_level(expr[m.end():j - 1])
            if len(args) != len(params):
                continue
            out = body
            for p, a in zip(params, args):
                out = re.sub(rf"\b{p}\b", f"({a})", out)
            expr = expr[:m.start()] + f"({out})" + expr[j:]
            changed = True
        if not changed:
            break
    return expr


def unit_stride(expr: str, var: str) -> bool:
    """True when expr(var + 1) - expr(var) == 1 for random integer values of every name."""
    rng = random.Random(7)
    for _ in range(4):
        env: dict[str, int] = {}

        def value(name: str, env: dict[str, int] = env) -> int:
            return env.setdefault(name, rng.randint(3, 997))

        def at(k: int, env: dict[str, int] = env) -> float | int:
            return evaluate(expr, lambda n: k if n == var else env.setdefault(n, rng.randint(3, 997)))

        try:
            base = value(var)
            a, b = at(base), at(base + 1)
        except (EvalError, ZeroDivisionError):
            return False
        if b - a != 1:
            return False
    return True
