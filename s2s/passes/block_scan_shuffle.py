"""block-scan-shuffle: a block's Hillis-Steele prefix sum in shared memory becomes warp shuffles and one warp of totals.

Shape: a top-level statement loads one value per thread, `S[..][t] = e;` (t being threadIdx.x, S a `__shared__` array,
single- or double-buffered, `S[p * B + t]` too), then `__syncthreads();` and a loop doubling from 1 below B (`for (off = 1;
off < B; off <<= 1)`) that reads `S[..][t - off]` under `t >= off`, adds it, writes only S[..][t] and synchronizes. After it
the loop leaves the inclusive sum of the loaded values of threads 0..t in S[..][t] (in whichever buffer), so what follows
may only read a thread's own element: those reads become the scanned register. Each warp scans its 32 values with
`__shfl_up_sync`, lane 31 stores the warp's total, the first warp scans the B / 32 totals the same way, and each warp adds
the totals of the warps before it: 2 barriers instead of 2 log2(B), no bank traffic for S. B must be a multiple of 32 up
to 1024, a compile-time constant (a `static_assert` checks it), and the block must hold B threads in x, as the loop's
bound already assumes. Sums are added in another order (within the MEP's tolerance).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from tree_sitter import Node

from s2s.lang.edits import Edit, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts

from ._common import body_node, fresh, indent_of, statements, text, walk

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = """\
#define B 1024
__global__ void scan_blocks(const float* in, float* out)
{
    __shared__ float buf[2][B];
    int t = threadIdx.x;
    int g = blockIdx.x * B + t;
    int src = 0;
    buf[0][t] = in[g];
    __syncthreads();
    for (int off = 1; off < B; off <<= 1) {
        float v = buf[src][t];
        if (t >= off)
            v += buf[src][t - off];
        buf[1 - src][t] = v;
        src = 1 - src;
        __syncthreads();
    }
    out[g] = buf[src][t];
}
"""
EXAMPLE_AFTER = """\
#define B 1024
__global__ void scan_blocks(const float* in, float* out)
{
    int t = threadIdx.x;
    int g = blockIdx.x * B + t;
    int src = 0;
    float buf_v = in[g];
    {
        static_assert((B) >= 32 && (B) <= 1024 && (B) % 32 == 0, "block-scan-shuffle: B");
        __shared__ float buf_w[32];
        const int lane = (t) % 32, warp = (t) / 32;
        for (int off1 = 1; off1 < 32; off1 <<= 1) {
            float up = __shfl_up_sync(0xffffffffu, buf_v, off1);
            if (lane >= off1) buf_v += up;
        }
        if (lane == 31) buf_w[warp] = buf_v;
        __syncthreads();
        if (warp == 0) {
            float tot = lane < (B) / 32 ? buf_w[lane] : (float)0;
            for (int off1 = 1; off1 < 32; off1 <<= 1) {
                float up = __shfl_up_sync(0xffffffffu, tot, off1);
                if (lane >= off1) tot += up;
            }
            buf_w[lane] = tot;
        }
        __syncthreads();
        if (warp > 0) buf_v += buf_w[warp - 1];
    }
    out[g] = buf_v;
}
"""
_SUB = r"\[([^\[\]]*)\]"


@dataclass(frozen=True)
class BlockScanShuffle:
    name: ClassVar[str] = "block-scan-shuffle"
    priority: ClassVar[int] = 45  # the built-in search's order: structural rewrites first
    space: ClassVar[tuple[str, ...]] = ("block-scan-shuffle",)

    def applies(self, facts: KernelFacts) -> bool | str:
        if facts.dialect == "opencl":
            return "warp shuffles have no portable OpenCL 1.2 equivalent"
        if not facts.shared:
            return "no shared-memory array to scan"
        return True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        body = body_node(source, facts)
        stmts = statements(body)
        tvars = {"threadIdx.x"} | {v for s in stmts if s.type == "declaration" for v in _aliases(source, s)}
        why = "needs a top-level loop `for (off = 1; off < B; off <<= 1)` reading S[t - off] of a __shared__ array S"
        for k, loop in enumerate(stmts):
            if loop.type != "for_statement" or k < 2 or text(source, stmts[k - 1]) != "__syncthreads();":
                continue
            found = _hillis_steele(source, loop, _shared_names(facts), tvars)
            if isinstance(found, str):
                why = found
                continue
            array, t, b = found
            load = _load(source, stmts[k - 2], array, t)
            if isinstance(load, Refused):
                return load
            named = set(re.findall(r"[A-Za-z_]\w*", b)) & ({p.name for p in facts.params} | set(facts.locals))
            if re.search(r"\b(blockDim|gridDim|threadIdx|blockIdx)\b", b) or named:
                return Refused(f"the scan's extent {b} must be a compile-time constant (the shuffles need a multiple of 32 "
                               "up to 1024, checked by a static_assert)")
            if re.search(r"\breturn\b", source[facts.body_start : loop.start_byte].decode("utf-8", "replace")):
                return Refused("a return before the scan: every thread of the block must reach the shuffles")
            if any(re.search(rf"\b{array}\b", text(source, s)) for s in stmts[: k - 2] if not _declares(source, s, array)):
                return Refused(f"{array} is used before its load: the scan must start from one value per thread")
            decl = next((s for s in stmts[: k - 2] if _declares(source, s, array)), None)
            elem = _element_type(source, decl, array) if decl is not None else None
            if decl is None or elem is None:
                return Refused(f"{array} must be a __shared__ array declared in the kernel")
            v = fresh(facts, source, f"{array}_v")
            reads = _own_reads(source, stmts[k + 1 :], array, t, _assigned(source, loop))
            if isinstance(reads, str):
                return Refused(reads)
            edits = (Edit(*_whole_lines(source, decl), ""),  # S is no longer used
                     Edit(stmts[k - 2].start_byte, loop.end_byte, self._code(source, facts, stmts[k - 2], load, v, t, b, elem, array)),
                     *(Edit(r.start_byte, r.end_byte, v) for r in reads))
            return Rewrite(edits, None, f"warp-shuffle scan instead of the shared-memory Hillis-Steele scan over {array}")
        return Refused(why)

    def _code(self, source: bytes, facts: KernelFacts, at: Node, value: str, v: str, t: str, b: str, elem: str, array: str) -> str:
        off, up, tot = fresh(facts, source, "off"), fresh(facts, source, "up"), fresh(facts, source, "tot")
        lane, warp, w = fresh(facts, source, "lane"), fresh(facts, source, "warp"), fresh(facts, source, f"{array}_w")

        def scan(x: str, pad: str) -> list[str]:
            return [f"{pad}for (int {off} = 1; {off} < 32; {off} <<= 1) {{",
                    f"{pad}    {elem} {up} = __shfl_up_sync(0xffffffffu, {x}, {off});",
                    f"{pad}    if ({lane} >= {off}) {x} += {up};",
                    f"{pad}}}"]
        lines = [f"{elem} {v} = {value};",
                 "{",
                 f"    static_assert(({b}) >= 32 && ({b}) <= 1024 && ({b}) % 32 == 0, \"block-scan-shuffle: B\");",
                 f"    __shared__ {elem} {w}[32];",
                 f"    const int {lane} = ({t}) % 32, {warp} = ({t}) / 32;",
                 *scan(v, "    "),
                 f"    if ({lane} == 31) {w}[{warp}] = {v};",
                 "    __syncthreads();",
                 f"    if ({warp} == 0) {{",
                 f"        {elem} {tot} = {lane} < ({b}) / 32 ? {w}[{lane}] : ({elem})0;",
                 *scan(tot, "        "),
                 f"        {w}[{lane}] = {tot};",
                 "    }",
                 "    __syncthreads();",
                 f"    if ({warp} > 0) {v} += {w}[{warp} - 1];",
                 "}"]
        return ("\n" + indent_of(source, at.start_byte)).join(lines)


def _aliases(source: bytes, decl: Node) -> list[str]:
    """Locals declared as exactly threadIdx.x (`int t = threadIdx.x;`)."""
    out = []
    for d in decl.children_by_field_name("declarator"):
        value = d.child_by_field_name("value") if d.type == "init_declarator" else None
        if value is not None and text(source, value).replace(" ", "") == "threadIdx.x":
            out.append(text(source, d.child_by_field_name("declarator")))
    return out


def _flat(code: str) -> str:
    """The code without the blanks around punctuation (`else temp[p * N + t]` -> `else temp[p*N+t]`)."""
    return re.sub(r"\s+", " ", re.sub(r"\s*([^\w\s])\s*", r"\1", code)).strip()


def _shared_names(facts: KernelFacts) -> tuple[str, ...]:
    """The arrays of the kernel's `__shared__` declarations (facts.shared holds the declarations' text)."""
    return tuple(m.group(1) for d in facts.shared for m in [re.search(r"(\w+)\s*\[", d)] if m is not None)


def _own(sub: str, t: str) -> bool:
    """A last subscript naming the thread's own element: `t`, or `p * B + t` (a buffer chosen by p)."""
    return sub == t or re.fullmatch(rf".+\*.+\+{re.escape(t)}", sub) is not None


def _hillis_steele(source: bytes, loop: Node, shared: tuple[str, ...], tvars: set[str]) -> tuple[str, str, str] | str:
    """(S, t, B) of a Hillis-Steele scan loop over the shared array S, or why it is not one."""
    init, cond, step, body = (loop.child_by_field_name(f) for f in ("initializer", "condition", "update", "body"))
    head = re.fullmatch(r"(?:(?:unsigned\s+)?int|unsigned)\s+(\w+)\s*=\s*1\s*;?", text(source, init).strip())
    if head is None or cond is None or step is None or body is None:
        return "the scan loop must declare its offset from 1: for (int off = 1; off < B; off <<= 1)"
    off = head.group(1)
    bound = re.fullmatch(rf"{off}\s*<\s*(.+)", text(source, cond).strip())
    if bound is None or text(source, step).replace(" ", "") not in {f"{off}<<=1", f"{off}*=2", f"{off}={off}*2", f"{off}+={off}"}:
        return "the offset must double from 1 below B: for (int off = 1; off < B; off <<= 1)"
    flat = _flat(text(source, body))
    if "__syncthreads();" not in flat:
        return "the scan loop must synchronize the block (__syncthreads) between steps"
    for s in shared:
        for t in tvars:
            pick = rf"\b{re.escape(s)}(?:\[[^\[\]]*\])*\[(?:[^\[\]]*\*[^\[\]]*\+)?{re.escape(t)}-{off}\]"
            if not re.search(pick, flat):
                continue
            held = re.findall(rf"\b(\w+)\+?={pick};", flat)  # `add = S[t - d]; ... S[t] += add;`
            if not re.search(rf"(\+=|\+){pick}|{pick}\+", flat) and \
                    not any(re.search(rf"\+={a};|\+{a}\b|\b{a}\+", flat) for a in held):
                return f"the scan adds nothing: {s}[.. t - {off}] must be combined with + (a sum scan)"
            if not any(g in flat for g in (f"{t}>={off}", f"{off}<={t}", f"{t}-{off}>=0")):
                return f"the read of {s}[.. t - {off}] must be guarded by `{t} >= {off}`"
            for m in re.finditer(rf"\b{re.escape(s)}((?:{_SUB})+)(?:=(?!=)|\+=)", flat):
                if not _own(re.findall(_SUB, m.group(1))[-1], t):
                    return f"the scan loop writes {s} at {m.group(1)}: only a thread's own element S[..][{t}] may be written"
            if re.search(r"\b(atomic\w*|__shfl\w*)\s*\(|\[[^\[\]]*\](?:=(?!=)|\+=|-=)", re.sub(rf"\b{re.escape(s)}(?:{_SUB})+", "", flat)):
                return "the scan loop writes memory other than the scanned array (or uses atomics or shuffles)"
            return s, t, bound.group(1).strip()
    return f"no read of a __shared__ array at [t - {off}] in the loop (t = threadIdx.x)"


def _load(source: bytes, stmt: Node, array: str, t: str) -> str | Refused:
    """The value `e` of the load `S[..][t] = e;` before the scan, or why there is none."""
    e = stmt.named_children[0] if stmt.type == "expression_statement" and stmt.named_children else None
    left = e.child_by_field_name("left") if e is not None and e.type == "assignment_expression" else None
    right = e.child_by_field_name("right") if e is not None else None
    if e is None or left is None or right is None or text(source, e.child_by_field_name("operator")) != "=":
        return Refused(f"the scan must start from one load `{array}[..][{t}] = e;` right before its `__syncthreads();`")
    subs = re.findall(_SUB, re.sub(r"\s+", "", text(source, left)))
    if not text(source, left).lstrip().startswith(array) or not subs or not _own(subs[-1], t):
        return Refused(f"the scan must start from one load `{array}[..][{t}] = e;` right before its `__syncthreads();`")
    if re.search(rf"\b{array}\b", text(source, right)):
        return Refused(f"the load reads {array} itself")
    return text(source, right)


def _assigned(source: bytes, loop: Node) -> set[str]:
    """Locals declared outside the loop and assigned in it (the buffer selectors `src = 1 - src`)."""
    body = loop.child_by_field_name("body")
    flat = text(source, body) if body is not None else ""
    declared = set(re.findall(r"\b(?:int|unsigned|float|double)\s+(\w+)\s*=", flat))
    return {m for m in re.findall(r"\b(\w+)\s*(?:=(?!=)|\+=|-=|\^=)", flat) if m not in declared} - {"__syncthreads"}


def _own_reads(source: bytes, after: list[Node], array: str, t: str, selectors: set[str]) -> list[Node] | str:
    """The outermost S[..][t] subscripts after the scan (all reads of the thread's own element), or why not."""
    out: list[Node] = []
    for s in after:
        for n in walk(s):
            if n.type != "subscript_expression" or (n.parent is not None and n.parent.type == "subscript_expression"
                                                    and n.parent.child_by_field_name("argument") == n):
                continue
            flat = re.sub(r"\s+", "", text(source, n))
            if not re.match(rf"{array}\[", flat):
                continue
            p = n.parent
            if p is not None and p.type in {"assignment_expression", "update_expression"} and p.child_by_field_name("left") == n:
                return f"{array} is written after the scan: the rewrite keeps the scan in a register"
            if not _own(re.findall(_SUB, flat)[-1], t):
                return f"after the scan only a thread's own element {array}[..][{t}] may be read (found {flat})"
            out.append(n)
    rest = "".join(re.sub(rf"\b{array}(?:\s*\[[^\[\]]*\])+", "", text(source, s)) for s in after)
    if re.search(rf"\b{array}\b", rest):
        return f"{array} is used after the scan other than through a subscript"
    used = sorted(v for v in selectors if re.search(rf"\b{re.escape(v)}\b", rest))
    if used:
        return f"{', '.join(used)} (set by the scan loop) used after it for more than choosing {array}'s buffer"
    return out


def _declares(source: bytes, stmt: Node, name: str) -> bool:
    return stmt.type == "declaration" and re.search(rf"\b{name}\s*\[", text(source, stmt)) is not None \
        and "__shared__" in text(source, stmt)


def _element_type(source: bytes, decl: Node, array: str) -> str | None:
    m = re.fullmatch(rf"__shared__\s+(?:volatile\s+)?([\w ]+?)\s+{array}\s*(?:\[[^\]\[]+\]\s*)+;", text(source, decl).strip())
    return m.group(1) if m is not None else None


def _whole_lines(source: bytes, node: Node) -> tuple[int, int]:
    """The node's byte range widened to its whole lines where only blanks share them (deleting it leaves no blank line)."""
    start, end = node.start_byte, node.end_byte
    line = source.rfind(b"\n", 0, start) + 1
    tail = re.match(rb"[ \t]*\n", source[end:])
    if source[line:start].strip() or tail is None:
        return start, end
    return line, end + tail.end()
