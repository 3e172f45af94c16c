"""delinearize-2d: a flat 1-D thread index split by `/` and `%` becomes a 2-D (or, with a batch, 3-D) launch.

`t = blockIdx.x*blockDim.x + threadIdx.x; i = t / N; j = t % N` (or `i = t % M; j = t / M`, or `b = t / (M*N);
r = (t / N) % M; c = t % N`) is a mixed-radix numbering of the outputs: when every divisor is the product of the
moduli below it, and the sizes are kernel parameters or compile-time values, the digits are read from the launch
instead: the unit-stride digit from x (the writes stay coalesced), the next from y, a batch from z. The guard keeps
its own terms (`t < M*N` becomes `i < M`) and gains a bound for every digit it did not bound. The kernel's
2-D shape is then what contraction-tiling and register-accumulation tile. The new grid is computed from the sizes
(`extent:` launch rule). The digits may share one declaration (`int y = p / W, x = p % W;`); another read of t
(`out[p] = s`) becomes the number the digits spell (`(y * W + x)`, t's own type). Declarations of names without
values (C89's `int i, j; double tmp;`) may come first and between the digits. Behind `normalize` the C89 spelling
`int t, i, j; t = blockIdx.x * ...; i = t % N;` is the split declared (lang/normal_form.py). Refused: t assigned or its address
taken, thread indices elsewhere, barriers, shared memory, atomics.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from tree_sitter import Node

from s2s.lang import index_split as ix
from s2s.lang.edits import Edit, LaunchChange, Refused, Rewrite
from s2s.lang.kernel_facts import THREAD_BUILTIN, KernelFacts
from s2s.lang.kernel_model import kernel_model

from ..common.tree import body_node, indent_of, statements, text, walk
from ._digits import bare, decl_type, guard_cond, header, returns, spelled

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = """\
__global__ void gemm(const float* a, const float* b, float* c, int m, int n, int p)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int i = t / n;
    int j = t % n;
    if (i >= m) return;
    float s = 0.0f;
    for (int k = 0; k < p; k++)
        s += a[i * p + k] * b[k * n + j];
    c[i * n + j] = s;
}
"""
EXAMPLE_AFTER = """\
__global__ void gemm(const float* a, const float* b, float* c, int m, int n, int p)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= m || j >= n) return;
    float s = 0.0f;
    for (int k = 0; k < p; k++)
        s += a[i * p + k] * b[k * n + j];
    c[i * n + j] = s;
}
"""
_ORDER = re.compile(r"\b(__syncthreads|__syncwarp|barrier|work_group_\w+|sub_group_\w+|__shfl\w*|__ballot\w*|__any\w*|__all\w*"
                    r"|__activemask|atomic\w*|atom_\w+|cooperative_groups|this_thread_block)\b")



@dataclass(frozen=True)
class Delinearize2d:
    name: ClassVar[str] = "delinearize-2d"
    WHY_IT_EXISTS: ClassVar[str] = "a flat thread index split by / and %: a 2-D launch the 2-D passes can match"
    priority: ClassVar[int] = 11  # before the tilings: it opens the 2-D shape they tile
    space: ClassVar[tuple[str, ...]] = ("delinearize-2d,contraction-triangle{tile=64 prefetch=true}",  # refused unless triangular
                                        "delinearize-2d,contraction-blocking", "delinearize-2d", "delinearize-2d{block=8x8x8}",
                                        "delinearize-2d,contraction-tiling{tile=32 rows=4}",
                                        "delinearize-2d,contraction-tiling{tile=64 rows=8}",
                                        "delinearize-2d,register-accumulation")
    canonical: ClassVar[bool] = True  # each step tried behind `normalize` too: C89's `int t, i; t = ...; i = t % n;`
    block: tuple[int, ...] = (32, 8)

    def applies(self, facts: KernelFacts) -> bool | str:
        threads = 1
        for b in self.block:
            threads *= b
        if not 2 <= len(self.block) <= 3 or threads % 32 or threads > 1024:
            return "block must be two or three sizes with a multiple of 32 threads, at most 1024"
        if facts.dims != 1 or not facts.var_for("x"):
            return "needs a 1-D thread mapping along x"
        if facts.shared or facts.atomics:
            return "kernel uses shared memory or atomics: they may depend on the 1-D order of the threads"
        return True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        model = kernel_model(source, facts.dialect, facts.name)
        maps = [m for m in model.mapping if m.kind == "global"] if model is not None else []
        if model is None or len(model.mapping) != 1 or len(maps) != 1 or maps[0].axis != "x" or not maps[0].offset.is_zero:
            return Refused("needs one global thread index along x with no offset")
        t, body = maps[0].var, body_node(source, facts)
        stmts = statements(body)
        while stmts and bare(stmts[0]) and not THREAD_BUILTIN.search(text(source, stmts[0])):
            stmts = stmts[1:]  # `int i, j; double tmp;` first (C89): names without values compute nothing
        if not stmts or stmts[0].type != "declaration" or len(stmts[0].children_by_field_name("declarator")) != 1 \
                or not THREAD_BUILTIN.search(text(source, stmts[0])):
            return Refused(f"the kernel must begin with the declaration of {t} alone")
        found = _ORDER.search(text(source, body))
        if found:
            return Refused(f"{found.group(1)} may depend on the 1-D order of the threads")
        helper = next((f for f, code in ix.called_functions(source, facts.dialect, body) if THREAD_BUILTIN.search(code) or _ORDER.search(code)), None)
        if helper:
            return Refused(f"{helper} (called by the kernel) uses thread indices or barriers: it may depend on the 1-D order")
        if any(THREAD_BUILTIN.search(text(source, s)) for s in stmts[1:]):
            return Refused(f"thread indices used outside {t}'s declaration: the kernel may depend on the 1-D order")
        macros = ix.int_macros(source)
        params = {n for n, _, p in model.params if not p}
        digits, guards = header(source, stmts, t, params | set(macros))
        if isinstance(digits, str):
            return Refused(digits)
        chain = ix.radix_chain(digits, t)
        if isinstance(chain, str):
            return Refused(chain)
        if len(chain) == 2 and len(self.block) == 3 and self.block[2] != 1:
            return Refused("a 3-D block for an index split in two")
        names = {d.var for d in chain}
        conds = [guard_cond(g) for g in guards]
        uses: list[Node] = []  # reads of t past the split: the number its digits spell
        for n in walk(body):
            at = n.start_byte
            if n.type == "identifier" and text(source, n) == t and not stmts[0].start_byte <= at < stmts[0].end_byte \
                    and not any(d.decl.start_byte <= at < d.decl.end_byte for d in chain) \
                    and not any(c.start_byte <= at < c.end_byte for c in conds):
                if n.parent is not None and n.parent.type == "pointer_expression":
                    return Refused(f"the address of {t} is taken")
                uses.append(n)
            if n.type in {"assignment_expression", "update_expression"}:
                target = n.child_by_field_name("left" if n.type == "assignment_expression" else "argument")
                if target is not None and text(source, target) in names | {t}:
                    return Refused(f"{text(source, target)} is assigned after its declaration")
        if not guards:
            return Refused(f"needs a guard bounding {chain[-1].var} (or {t}): the launch's size is the only bound")
        out = self._rewrite(source, facts, model, t, chain, guards, stmts[0], macros)
        if isinstance(out, Refused) or not uses:
            return out
        number = spelled(source, stmts[0], chain)
        return Rewrite(out.edits + tuple(Edit(n.start_byte, n.end_byte, number) for n in uses), out.launch, out.note)

    def _rewrite(self, source: bytes, facts: KernelFacts, model, t: str, chain: list[ix.Digit], guards: list[Node],  # type: ignore[no-untyped-def]
                 first: Node, macros: dict[str, int]) -> Rewrite | Refused:
        top, names = chain[-1], {d.var for d in chain} | {t}
        known = {(v, b) for g in guards for x in model.guards if x.start == g.start_byte for v, b in x.upper}
        swaps: list[Edit] = []  # guard terms on t, as terms on the top digit
        for g in guards:
            ret = returns(g.child_by_field_name("consequence"))
            for term in ix.terms(guard_cond(g), source, "||" if ret else "&&"):
                if t not in ix.idents_in(source, term):
                    continue
                q = ix.t_bound(source, term, t, ret)
                q = ix.divide(q, top.div) if q is not None and not q.names & names else None
                if q is None:
                    return Refused(f"the guard term '{text(source, term)}' is not {t} < (a multiple of {top.div.text()})")
                swaps.append(Edit(term.start_byte, term.end_byte, f"{top.var} {'>=' if ret else '<'} {q.text()}"))
                known.add((top.var, q))
        bound = next((b for v, b in sorted(known, key=str) if v == top.var and not b.names & names), None)
        if bound is None or (top.mod is not None and (top.var, top.mod) not in known):
            return Refused(f"needs a guard bounding {top.var} (or {t}) from above by a size")
        extent = [d.mod for d in chain[:-1]] + [top.mod or bound]
        ret = returns(guards[0].child_by_field_name("consequence"))
        extra = [f"{d.var} {'>=' if ret else '<'} {e.text()}" for d, e in zip(chain, extent) if e is not None and (d.var, e) not in known]
        cond = guard_cond(guards[0])
        inner = [c for c in cond.named_children if c.type != "comment"]
        expr = inner[0] if cond.type == "condition_clause" and len(inner) == 1 else cond
        mine = sorted((e for e in swaps if expr.start_byte <= e.start < expr.end_byte), key=lambda e: -e.start)
        edits = [e for e in swaps if e not in mine]
        old = text(source, expr)
        for e in mine:
            old = old[: e.start - expr.start_byte] + e.text + old[e.end - expr.start_byte:]
        if extra:
            op = " || " if ret else " && "
            wrap = expr.type == "conditional_expression" or (ret is False and expr.type == "binary_expression"
                                                            and text(source, expr.child_by_field_name("operator")) == "||")
            old = (f"({old})" if wrap else old) + op + op.join(extra)
        edits.append(Edit(expr.start_byte, expr.end_byte, old))
        pad = indent_of(source, first.start_byte)
        lines = []
        for axis, d in zip("xyz", chain):
            ty = decl_type(source, d.decl)
            gid = f"get_global_id({'xyz'.index(axis)})" if facts.dialect == "opencl" else \
                f"blockIdx.{axis} * blockDim.{axis} + threadIdx.{axis}"
            lines.append(f"{ty} {d.var} = {gid};")
        edits.append(Edit(first.start_byte, first.end_byte, ("\n" + pad).join(lines)))
        edits += [ix.delete_statement(source, decl) for decl in {(d.decl.start_byte, d.decl.end_byte): d.decl for d in chain}.values()]
        block = (tuple(self.block) + (1,))[:3]
        sizes = [ix.value_text(e, macros) for e in extent]
        small = next((f"{a}: {s} outputs, blocks of {b}" for a, s, b in zip("xy", sizes, block) if s.isdigit() and int(s) < b), None)
        if small:
            return Refused(f"the block is wider than the split ({small}): most threads would idle")
        launch = LaunchChange((block[0], block[1], block[2]), "extent:" + "|".join(sizes))
        axes = ", ".join(f"{d.var} from {a} (< {e.text()})" for a, d, e in zip("xyz", chain, extent))
        return Rewrite(tuple(edits), launch, f"{t} split into {axes}")


