"""The text of contraction-blocking's tiled body (s2s/passes/contractions/contraction_blocking.py says what it computes and why).

Layout (`size` 128; 64 halves every length, 8 x 8 outputs a thread still): 256 threads (tx, ty in 16 x 16); the
block's 128 x 128 outputs; thread (tx, ty) holds rows ty*4 + {0..3} and ty*4 + 64 + {0..3}, columns tx*4 + {0..3} and
tx*4 + 64 + {0..3}: output m of the thread is row m / 8, column m % 8 of that 8 x 8 set. Shared tiles are k-major rows
of float4 (`As[bk][33]`, 132 floats: the 4 of padding keep the transposed stores of a warp on distinct banks), so a
thread's 8 row values at one k are two aligned float4.
"""
from __future__ import annotations

from s2s.lang.contraction import Contraction, Operand

TILE, THREADS = 128, 256

class BlockingCode:
    """The pieces of the tiled body's text; s2s/passes/contractions/_blocking_body.py's `body` assembles them into one list of
    lines (joined at the body's indent)."""

    def __init__(self, bk: int, vec: bool, prefetch: bool, c: Contraction, n: dict[str, str], cl: bool, source: bytes,
                 size: int = TILE, groups: int = 1, full: bool = False, stores: tuple[str, str] | None = None) -> None:
        self.bk, self.vec, self.prefetch, self.c, self.n, self.cl, self.src = bk, vec, prefetch, c, n, cl, source
        # full: also the text for blocks wholly inside the sizes, without guards (s2s/passes/contractions/_blocking_full.py);
        # stores: (place, value) of the one store after the loop, for float4 stores there where the check allows
        self.full, self.stores = full, stores
        self.groups = groups  # k groups along z (s2s/passes/contractions/_blocking_body.py)
        self.size, self.dim, self.threads = size, size // 8, (size // 8) ** 2  # outputs a side, threads a side, threads
        self.ops = [("A", i, o) for i, o in enumerate(c.a)] + [("B", i, o) for i, o in enumerate(c.b)]

    def txt(self, s: int, e: int) -> str:
        return self.src[s:e].decode()

    # -- the pieces -------------------------------------------------------------------------------------
    def tile(self, side: str, i: int, buf: str = "") -> str:
        return self.n[f"s{side}{i}"] + (f"[{self.n['grp']}]" if self.groups > 1 else "") + buf

    def place(self, side: str, r: str, k: str) -> list[str]:
        """Declarations that put the operand's own index variables at (r, k): r is a row (A) or a column (B)."""
        c = self.c
        var, off = (c.row, c.offsets[0]) if side == "A" else (c.col, c.offsets[1])
        return [f"int {var} = {r}{off};", f"int {c.k} = {k};"]

    def bound(self, side: str) -> tuple[str, str]:
        c = self.c
        return (c.row, c.row_bound) if side == "A" else (c.col, c.col_bound)

    def addr(self, o: Operand) -> str:
        return f"(size_t)&({o.text})" if self.cl else f"(size_t)(const void*)&({o.text})"

    def vload(self, o: Operand) -> str:
        return f"vload4(0, &({o.text}))" if self.cl else f"*(const float4*)&({o.text})"

    def vtype(self) -> str:
        return "float4"

    def checks(self) -> list[str]:
        """Per operand, whether its float4 loads are right and aligned: neighbouring elements along the index the
        loads run on are neighbours in memory (a stride of one float), and its address at the tile's origin and one
        step along the other index are both on a 16-byte boundary (the base aligned, the leading dimension a multiple
        of 4). The same for every thread of the block: a uniform branch."""
        out = []
        c, n = self.c, self.n
        for side, i, o in self.ops:
            flag = n[f"v{side}{i}"]
            origin = n["row0"] if side == "A" else n["col0"]
            if not self.vec:
                out.append(f"const int {flag} = 0;")
                continue
            other, unit = ((f"{origin} + 1", f"{c.lower}"), (origin, f"({c.lower}) + 1")) if o.k_fast else \
                ((origin, f"({c.lower}) + 1"), (f"{origin} + 1", f"{c.lower}"))
            out.append(f"int {flag} = 1;")
            for r, k in ((origin, f"{c.lower}"), other):
                out.append(f"{{ {' '.join(self.place(side, r, k))} {flag} = {flag} && ({self.addr(o)} % 16 == 0); }}")
            out.append(f"{{ {' '.join(self.place(side, origin, f'{c.lower}'))} const size_t {n['p0']} = {self.addr(o)}; "
                       f"{{ {' '.join(self.place(side, *unit))} {flag} = {flag} && ({self.addr(o)} == {n['p0']} + 4); }} }}")
        return out

    def load(self, side: str, i: int, o: Operand, t: str, store: str, fast: bool = False) -> list[str]:
        """The loads of one operand's 128 x bk slice at k = t, each thread's share, into `store(kq, r, value)` form:
        `store` is 'smem' (straight into the shared tile) or the name of a register array (prefetch); `fast`: float4
        loads without a check (a full block whose operands passed the run-time check)."""
        c, n, bk = self.c, self.n, self.bk
        var, lim = self.bound(side)
        flag = n[f"v{side}{i}"]
        e, v = n["e"], n["v"]
        origin = n["row0"] if side == "A" else n["col0"]
        per = self.size // 4 * bk // self.threads  # float4 groups per thread
        lines = ["#pragma unroll", f"for (int {e} = 0; {e} < {per}; ++{e}) {{"]
        g = f"({n['tid']} + {e} * {self.threads})"
        if o.k_fast:  # four neighbouring k of one row (column): stored transposed, k-major
            r, kq = f"{g} / {bk // 4}", f"{g} % {bk // 4} * 4"
            lines += [f"    const int {n['pa']} = {r}, {n['pb']} = {kq};"]
            at = (f"{origin} + {n['pa']}", f"{t} + {n['pb']}")
            inside_all = f"{var} < {lim} && {c.k} + 3 < {c.upper}"
            one = lambda q: (f"{origin} + {n['pa']}", f"{t} + {n['pb']} + {q}")  # noqa: E731
        else:  # four neighbouring rows (columns) of one k: stored as they are
            r, kq = f"{g} % {self.size // 4} * 4", f"{g} / {self.size // 4}"
            lines += [f"    const int {n['pa']} = {r}, {n['pb']} = {kq};"]
            at = (f"{origin} + {n['pa']}", f"{t} + {n['pb']}")
            inside_all = f"{var} + 3 < {lim} && {c.k} < {c.upper}"
            one = lambda q: (f"{origin} + {n['pa']} + {q}", f"{t} + {n['pb']}")  # noqa: E731
        slots = [self.slot(side, i, o, store, comp) for comp in range(4)]
        whole = self.tile(side, i, f"[{n['buf']}]" if self.prefetch else "")
        put = [f"        {whole}[{n['pb']}][{n['pa']} / 4] = {v};"] if store == "smem" and not o.k_fast \
            else [f"        {s} = {v}.{x};" for s, x in zip(slots, "xyzw")]  # one float4 store, or four floats
        if fast:
            return [*lines, f"    {{ {' '.join(self.place(side, *at))}", f"        const {self.vtype()} {v} = {self.vload(o)};", *put, "    }", "}"]
        lines += [f"    {{ {' '.join(self.place(side, *at))}",
                  f"    if ({flag} && {inside_all}) {{",
                  f"        const {self.vtype()} {v} = {self.vload(o)};",
                  *put,
                  "    } else {",  # one element at a time, written out: no loop the cost model would take for the deepest
                  *(f"        {{ {' '.join(self.place(side, *one(q)))} {self.slot(side, i, o, store, q)} = "
                    f"({var} < {lim} && {c.k} < {c.upper}) ? {o.text} : 0.0f; }}" for q in range(4)),
                  "    } }", "}"]
        return lines

    def slot(self, side: str, i: int, o: Operand, store: str, comp: int | str) -> str:
        """Where component `comp` of the thread's e-th float4 of operand (side, i) goes."""
        n = self.n
        if store != "smem":  # a register of the prefetch buffer: [e * 4 + comp]
            return f"{store}[{n['e']} * 4 + {comp}]"
        return self.scalar(side, i, o, f"[{n['buf']}]" if self.prefetch else "", comp)

    def scalar(self, side: str, i: int, o: Operand, buf: str, comp: int | str) -> str:
        """One float of the shared tile (float4 rows, 16-byte aligned): row pb (+ comp) of the k slice, element pa (+ comp)."""
        n = self.n
        ptr = "__local float*" if self.cl else "float*"
        tile = self.tile(side, i, buf)
        if o.k_fast:
            return f"(({ptr}){tile}[{n['pb']} + {comp}])[{n['pa']}]"
        return f"(({ptr}){tile}[{n['pb']}])[{n['pa']} + {comp}]"

    def spill(self, side: str, i: int, o: Operand, reg: str, buf: str) -> list[str]:
        """The prefetched registers of one operand into the shared buffer `buf` (the same places `load` would use)."""
        n, bk = self.n, self.bk
        e, g, q = n["e"], f"({n['tid']} + {n['e']} * {self.threads})", self.size // 4
        pa, pb = (f"{g} / {bk // 4}", f"{g} % {bk // 4} * 4") if o.k_fast else (f"{g} % {q} * 4", f"{g} / {q}")
        out = ["#pragma unroll", f"for (int {e} = 0; {e} < {q * bk // self.threads}; ++{e}) {{",
               f"    const int {n['pa']} = {pa}, {n['pb']} = {pb};"]
        out += [f"    {self.scalar(side, i, o, f'[{buf}]', comp)} = {reg}[{e} * 4 + {comp}];" for comp in range(4)]
        return out + ["}"]

    def fragment(self, side: str, i: int, kk: str, buf: str) -> list[str]:
        """The thread's 8 values of one operand at step kk: two float4 reads of the k-major tile."""
        n = self.n
        reg = n[f"r{side}{i}"]
        me = n["ty"] if side == "A" else n["tx"]
        tile = self.tile(side, i, buf)
        out = [f"float {reg}[8];"]
        for half in (0, 1):
            out.append(f"{{ const float4 {n['v']} = {tile}[{kk}][{me}{f' + {self.dim}' if half else ''}]; " + " ".join(
                f"{reg}[{half * 4 + j}] = {n['v']}.{x};" for j, x in enumerate("xyzw")) + " }")
        return out

    def step(self, kk: str, buf: str) -> list[str]:
        """One k step: the fragments, then every output's accumulation as the original writes it."""
        c, n, m = self.c, self.n, self.n["m"]
        lines = [ln for side, i, _ in self.ops for ln in self.fragment(side, i, kk, buf)]
        swaps = sorted([(s, e, f"{n['acc']}[{m}]") for s, e in c.target_spans]
                       + [(s, e, f"{n[f'rA{i}']}[{m} / 8]") for i, o in enumerate(c.a) for s, e in o.spans]
                       + [(s, e, f"{n[f'rB{i}']}[{m} % 8]") for i, o in enumerate(c.b) for s, e in o.spans])
        stmt, at = "", c.statement[0]
        for s, e, new in swaps:
            stmt, at = stmt + self.txt(at, s) + new, e
        stmt += self.txt(at, c.statement[1])
        return lines + ["#pragma unroll", f"for (int {m} = 0; {m} < 64; ++{m})", f"    {stmt}"]

    def compute(self, t: str, buf: str, fast: bool = False) -> list[str]:
        """The slice at t: all bk steps unrolled where the slice is whole, the steps left where it is the last, short
        one; `fast`: every slice whole (the k range a multiple of bk)."""
        c, bk, kk = self.c, self.bk, self.n["kk"]
        body = self.step(kk, buf)
        if fast:
            return ["#pragma unroll", f"for (int {kk} = 0; {kk} < {bk}; ++{kk}) {{", *("    " + s for s in body), "}"]
        return [f"if ({t} + {bk} <= {c.upper}) {{", "    #pragma unroll", f"    for (int {kk} = 0; {kk} < {bk}; ++{kk}) {{",
                *("        " + s for s in body), "    }", "} else {",
                f"    for (int {kk} = 0; {kk} < {c.upper} - {t}; ++{kk}) {{", *("        " + s for s in body), "    }", "}"]

    def each(self, swap: bool = False) -> list[str]:
        """The loop over the thread's 64 outputs declaring row and col; `swap`: the mirrored place (col, row)."""
        c, n, m = self.c, self.n, self.n["m"]
        (ro, co), (row, col) = c.offsets, ((c.col, c.row) if swap else (c.row, c.col))
        return ["#pragma unroll", f"for (int {m} = 0; {m} < 64; ++{m}) {{",
                f"    int {row} = {n['row0']} + {n['ty']} * 4 + {m} / 8 % 4 + {m} / 32 * {self.size // 2}{ro};",
                f"    int {col} = {n['col0']} + {n['tx']} * 4 + {m} % 4 + {m} % 8 / 4 * {self.size // 2}{co};"]
