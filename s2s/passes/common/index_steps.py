"""Index arithmetic the register passes check numerically (row-coarsen, walk-registers), and a pointer's element type."""
from __future__ import annotations

import random
import re

from s2s.lang.cexpr import EvalError, evaluate
from s2s.lang.kernel_facts import KernelFacts


def word(name: str) -> str:
    return rf"(?<![\w.>]){re.escape(name)}\b"


def steps(expr: str, var: str, macros: dict[str, int], by: int = 4) -> int | None:
    """expr(var + 1) - expr(var) when it is the same for random values of every other name (macros at their values);
    None when it is not, or when the expression cannot be evaluated. With `by`, also None unless expr(var = 0) is a
    multiple of `by` at every sample."""
    rng = random.Random(11)
    step: int | None = None
    for _ in range(5):
        env: dict[str, int] = {}

        def at(v: int, env: dict[str, int] = env) -> float | int:
            return evaluate(expr, lambda n: v if n == var else macros[n] if n in macros else env.setdefault(n, rng.randint(3, 997)))
        try:
            base, d = at(0), at(1) - at(0)
        except (EvalError, ZeroDivisionError, KeyError):
            return None
        if not isinstance(d, int) or (step is not None and d != step) or (by and base % by):
            return None
        step = d
    return step


def constant(text: str, macros: dict[str, int]) -> int | None:
    try:
        v = evaluate(text, lambda n: macros.get(n))
    except (EvalError, ZeroDivisionError):
        return None
    return v if isinstance(v, int) else None


def elem(source: bytes, facts: KernelFacts, name: str) -> str:
    """The element type of a pointer parameter or a pointer declared in the body (`const float* a = ...`)."""
    p = facts.param(name)
    if p is not None:
        return p.base_type.replace("const", "").strip() if p.pointer else ""
    body = source[facts.body_start:facts.body_end].decode("utf-8", "replace")
    m = re.search(rf"(?:const\s+)?(\w+)\s*(?:const\s+)?\*\s*(?:const\s+|__restrict__\s+)*{re.escape(name)}\s*=", body)
    return m.group(1) if m else ""


def value(expr: str, env: dict[str, int]) -> int | None:
    try:
        v = evaluate(expr, lambda n: env.get(n))
    except (EvalError, ZeroDivisionError):
        return None
    return v if isinstance(v, int) else None


def diff(expr: str, var: str, env: dict[str, int]) -> int | None:
    a, b = value(expr, {**env, var: 7}), value(expr, {**env, var: 8})
    return None if a is None or b is None else b - a


def whole(off: int | None, step: int | None) -> int | None:
    """off / step where it is a whole number of steps."""
    return None if off is None or not step or off % step else off // step


def offset(expr: str, base: str, env: dict[str, int]) -> int | None:
    a, b = value(expr, env), value(base, env)
    return None if a is None or b is None else a - b
