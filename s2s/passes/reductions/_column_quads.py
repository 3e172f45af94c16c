"""Four adjacent outputs per thread in split-reduction's splits mode, read in float4 words (the `quad=4` option).

A column walk split over `splits` threads along y (`for (k = S + s; k < B; k += splits) part += A[k*n + j] * x[k];`)
reads one 4-byte element per thread and row: with 16 outputs a block a warp reads 64-byte pieces of two rows. Here
thread x of the block owns the outputs j = 4 x .. 4 x + 3 and reads them as one float4 per row, four accumulators, so
a warp of 8 x-threads reads 128-byte pieces of 4 rows with a quarter of the load instructions. Every array indexed by
the output index must step by one element with it (checked numerically, macros expanded) and be affine in k; each
quad's words must be 16-byte aligned on the first two rows of the walk (checked at run time: with an affine index
every row then is); a quad that is not, or whose last outputs fall outside the guard, takes the scalar splits loop
for each of its four outputs. Each output's partial sums are added in the same order as in the scalar splits form.
"""
from __future__ import annotations

import random
import re

from s2s.lang.cexpr import EvalError, evaluate
from s2s.lang.kernel_facts import KernelFacts
from s2s.lang.reduction_loop import ReductionLoop
from s2s.lang.textsplit import split_top_level

from ..common.thread_index import elem_type
from ..common.tree import fresh
from ._unit_stride import FUNC_MACRO, TERM, expand_macros, unit_stride


def column_quads(facts: KernelFacts, source: bytes, r: ReductionLoop, names: dict[str, str], splits: int, cols: int,
                 acc_ty: str, stmt: str, tail: list[str]) -> list[str] | None:
    """Lines replacing the kernel's body from the output index's declaration to the guarded loop's end (CUDA), or None
    where the term does not qualify. `stmt` accumulates into names['part']; `tail` (the statements after the loop, then
    "}") runs for one output under `if (s == 0 && inside) {`."""
    txt = lambda s, e: source[s:e].decode()  # noqa: E731
    part, v, k = names["part"], r.var, r.k
    got = quad_factors(facts, source, r, part, stmt)
    if got is None:
        return None
    op, factors = got
    wide = [f for f in factors if isinstance(f, tuple)]
    start = txt(*r.init)
    q, ok, w = (fresh(facts, source, x) for x in (f"{v}4", "quad_ok", "w"))
    parts = [fresh(facts, source, f"{part}{c}") for c in range(4)]
    decl = re.sub(rf"\b{re.escape(v)}\b", q, txt(r.mapping[0], r.value[0]), count=1)
    own = txt(r.mapping[0], r.value[0])  # "int j = ": each output's block declares the original index again
    at = lambda e, row: re.sub(rf"\b{re.escape(k)}\b", f"({row})", re.sub(rf"\b{re.escape(v)}\b", f"({q})", e))  # noqa: E731
    first = [f"reinterpret_cast<unsigned long long>(&{a}[{at(e, row)}])" for a, e in wide for row in (start, f"({start}) + 1")]
    word = {f: f"{w}{n}" for n, f in enumerate(dict.fromkeys(wide))}
    loads = [f"const float4 {word[f]} = *reinterpret_cast<const float4*>(&{f[0]}[{at(f[1], k)}]);" for f in word]
    adds = [f"{parts[c]} {op} {' * '.join(f'{word[f]}.{x}' if isinstance(f, tuple) else f for f in factors)};"
            for c, x in enumerate("xyzw")]
    s, red, off, tx = names["s"], names["red"], names["off"], "threadIdx.x"
    loop = f"for (int {k} = {start} + {s}; {r.upper}; {k} += {splits})"
    code = [f"{decl}({txt(*r.value)}) * 4;", f"__shared__ {acc_ty} {red}[{splits}][{4 * cols}];", f"const int {s} = threadIdx.y;",
            f"{acc_ty} {', '.join(f'{p} = 0' for p in parts)};",
            f"bool {ok} = (({' | '.join(first)}) & 15) == 0;"]
    code += [f"{{ {own}{q} + {c}; {ok} = {ok} && ({r.inside}); }}" for c in range(4)]
    code += [f"if ({ok}) {{", f"    {loop} {{", *(f"        {x}" for x in loads + adds), "    }", "} else {"]
    for c in range(4):
        code += [f"    {{ {own}{q} + {c};", f"        {acc_ty} {part} = 0;", f"        if ({r.inside})", f"            {loop}",
                 f"                {stmt.strip()}", f"        {parts[c]} = {part};", "    }"]
    code += ["}", *(f"{red}[{s}][4 * {tx} + {c}] = {parts[c]};" for c in range(4)), "__syncthreads();",
             f"if ({s} == 0) {{", f"    for (int {off} = 1; {off} < {splits}; ++{off}) {{",  # four independent chains, each in order
             *(f"        {parts[c]} += {red}[{off}][4 * {tx} + {c}];" for c in range(4)), "    }", "}"]
    for c in range(4):
        code += [f"{{ {own}{q} + {c};", f"    {acc_ty} {part} = {parts[c]};",
                 f"    if ({s} == 0 && ({r.inside})) {{", *(f"    {x}" for x in tail), "}"]
    return code


def quad_factors(facts: KernelFacts, source: bytes, r: ReductionLoop, part: str, stmt: str) -> tuple[str, list[tuple[str, str] | str]] | None:
    """The accumulation's operator and its term's factors: (array, expanded index) for each read that steps by one
    element with the output index (a float4 word per quad), else the factor's text; None where the term does not
    qualify (OpenCL, a factor indexed by the output that is not a float array read at unit stride, affine in k)."""
    text = source.decode("utf-8", "replace")
    v, k = r.var, r.k
    m = re.fullmatch(rf"\s*{re.escape(part)}\s*(\+=|-=)\s*(.+?);\s*", stmt, re.S) or \
        re.fullmatch(rf"\s*{re.escape(part)}\s*=\s*{re.escape(part)}\s*\+\s*(.+?);\s*", stmt, re.S)
    if m is None or facts.dialect == "opencl":
        return None
    op, term = ("+=", m.group(1)) if m.lastindex == 1 else (m.group(1), m.group(2))
    macros = {f.group(1): ([p.strip() for p in f.group(2).split(",")], f.group(3)) for f in FUNC_MACRO.finditer(text)}
    factors: list[tuple[str, str] | str] = []
    for factor in split_top_level(term, "*"):
        e = _unwrap(expand_macros(factor, macros))
        if not re.search(rf"\b{re.escape(v)}\b", e):
            factors.append(factor.strip())
            continue
        t = TERM.match(e)
        p = facts.param(t.group(1)) if t is not None else None
        if t is None or p is None or not p.pointer or elem_type(p.type) != "float" or not unit_stride(t.group(2), v) or \
                not _affine(t.group(2), k):
            return None
        factors.append((t.group(1), t.group(2).strip()))
    return (op, factors) if any(isinstance(f, tuple) for f in factors) else None


def _unwrap(e: str) -> str:
    """e without parentheses around the whole of it (a macro's expansion: `(a[(j) * LDA + (i)])`)."""
    e = e.strip()
    while e.startswith("(") and e.endswith(")"):
        depth = 0
        for n, ch in enumerate(e):
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if depth == 0 and n < len(e) - 1:
                return e
        e = e[1:-1].strip()
    return e


def _affine(expr: str, var: str) -> bool:
    """True when expr(var + 2) - 2 expr(var + 1) + expr(var) == 0 for random integer values of every other name."""
    rng = random.Random(11)
    for _ in range(4):
        env = {n: rng.randint(3, 997) for n in re.findall(r"[A-Za-z_]\w*", expr) if n != var}
        base = rng.randint(3, 997)

        def value(at: int, env: dict[str, int] = env) -> float | int:
            return evaluate(expr, lambda name: at if name == var else env[name])

        try:
            a, b, c = (value(base + d) for d in (0, 1, 2))
        except (EvalError, ZeroDivisionError, KeyError):
            return False
        if c - 2 * b + a != 0:
            return False
    return True
