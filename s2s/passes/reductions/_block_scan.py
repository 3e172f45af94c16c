"""The Hillis-Steele block scan that block-scan-shuffle replaces: its loop, its load, and what may follow it.

Helpers of one pass, kept apart so that the pass module stays small.
"""
from __future__ import annotations

import re

from tree_sitter import Node

from s2s.lang.edits import Refused
from s2s.lang.kernel_facts import KernelFacts

from ..common.tree import text, walk

_SUB = r"\[([^\[\]]*)\]"


def aliases(source: bytes, decl: Node) -> list[str]:
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


def shared_names(facts: KernelFacts) -> tuple[str, ...]:
    """The arrays of the kernel's `__shared__` declarations (facts.shared holds the declarations' text)."""
    return tuple(m.group(1) for d in facts.shared for m in [re.search(r"(\w+)\s*\[", d)] if m is not None)


def _own(sub: str, t: str) -> bool:
    """A last subscript naming the thread's own element: `t`, or `p * B + t` (a buffer chosen by p)."""
    return sub == t or re.fullmatch(rf".+\*.+\+{re.escape(t)}", sub) is not None


def hillis_steele(source: bytes, loop: Node, shared: tuple[str, ...], tvars: set[str]) -> tuple[str, str, str] | str:
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
            for m in re.finditer(rf"\b{re.escape(s)}((?:\[[^\[\]]*\])+)", flat):
                last = re.findall(_SUB, m.group(1))[-1]
                if not _own(last, t) and not re.fullmatch(rf"(?:[^\[\]]*\*[^\[\]]*\+)?{re.escape(t)}-{off}", last):
                    return f"the scan loop reads {s} at {m.group(1)}: only S[..][{t}] and S[..][{t} - {off}] belong to a scan"
            for m in re.finditer(rf"\b{re.escape(s)}((?:{_SUB})+)(?:=(?!=)|\+=)", flat):
                if not _own(re.findall(_SUB, m.group(1))[-1], t):
                    return f"the scan loop writes {s} at {m.group(1)}: only a thread's own element S[..][{t}] may be written"
            if re.search(r"\b(atomic\w*|__shfl\w*)\s*\(|\[[^\[\]]*\](?:=(?!=)|\+=|-=)", re.sub(rf"\b{re.escape(s)}(?:{_SUB})+", "", flat)):
                return "the scan loop writes memory other than the scanned array (or uses atomics or shuffles)"
            return s, t, bound.group(1).strip()
    return f"no read of a __shared__ array at [t - {off}] in the loop (t = threadIdx.x)"


def load_value(source: bytes, stmt: Node, array: str, t: str) -> str | Refused:
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


def assigned(source: bytes, loop: Node) -> set[str]:
    """Locals declared outside the loop and assigned in it (the buffer selectors `src = 1 - src`)."""
    body = loop.child_by_field_name("body")
    flat = text(source, body) if body is not None else ""
    declared = set(re.findall(r"\b(?:int|unsigned|float|double)\s+(\w+)\s*=", flat))
    return {m for m in re.findall(r"\b(\w+)\s*(?:=(?!=)|\+=|-=|\^=)", flat) if m not in declared} - {"__syncthreads"}


def _selector(access: str, t: str) -> str:
    """Which buffer of S a flattened access `S[..][..t..]` names: its subscripts but the thread's own part of the last."""
    subs = re.findall(_SUB, access)
    last = re.sub(rf"\+?{re.escape(t)}(?:-\w+)?$", "", subs[-1])
    return "".join(f"[{s}]" for s in subs[:-1]) + last


def final_buffer(source: bytes, loop: Node, array: str, t: str, selectors: set[str]) -> str | None:
    """The buffer of S that holds the scan after the loop (as _selector names it), None when the loop does not say:
    the one it reads from where it switches buffers after its accesses (`src = 1 - src` last), the one it writes where
    it switches first (GPU Gems' `pout = 1 - pout` at the top); one buffer without selectors."""
    body = loop.child_by_field_name("body")
    flat = _flat(text(source, body)) if body is not None else ""
    accesses = [(m.start(), _selector(m.group(0), t), bool(m.group(2))) for m in
                re.finditer(rf"\b{re.escape(array)}((?:\[[^\[\]]*\])+)(\+?=(?!=))?", flat)]
    switches = [m.start() for v in selectors for m in re.finditer(rf"\b{re.escape(v)}(?:=(?!=)|\+=|-=|\^=)", flat)]
    if not accesses:
        return None
    if not switches:
        kinds = {sel for _, sel, _ in accesses}
        return kinds.pop() if len(kinds) == 1 else None
    if min(switches) > max(a for a, _, _ in accesses):
        wanted = {sel for _, sel, write in accesses if not write}
    elif max(switches) < min(a for a, _, _ in accesses):
        wanted = {sel for _, sel, write in accesses if write}
    else:
        return None
    return wanted.pop() if len(wanted) == 1 else None


def own_reads(source: bytes, after: list[Node], array: str, t: str, loop: Node) -> list[Node] | str:
    """The outermost S[..][t] subscripts after the scan (all reads of the thread's own element, in the buffer that
    holds the scan), or why not."""
    selectors = assigned(source, loop)
    final = final_buffer(source, loop, array, t, selectors)
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
            if final is None or _selector(flat, t) != final:
                return f"after the scan {flat} may not be the buffer that holds the scan (the loop's last one: {final})"
            out.append(n)
    rest = "".join(re.sub(rf"\b{array}(?:\s*\[[^\[\]]*\])+", "", text(source, s)) for s in after)
    if re.search(rf"\b{array}\b", rest):
        return f"{array} is used after the scan other than through a subscript"
    used = sorted(v for v in selectors if re.search(rf"\b{re.escape(v)}\b", rest))
    if used:
        return f"{', '.join(used)} (set by the scan loop) used after it for more than choosing {array}'s buffer"
    return out


def declares(source: bytes, stmt: Node, name: str) -> bool:
    return stmt.type == "declaration" and re.search(rf"\b{name}\s*\[", text(source, stmt)) is not None \
        and "__shared__" in text(source, stmt)


def element_type(source: bytes, decl: Node, array: str) -> str | None:
    m = re.fullmatch(rf"__shared__\s+(?:volatile\s+)?([\w ]+?)\s+{array}\s*(?:\[[^\]\[]+\]\s*)+;", text(source, decl).strip())
    return m.group(1) if m is not None else None


def whole_lines(source: bytes, node: Node) -> tuple[int, int]:
    """The node's byte range widened to its whole lines where only blanks share them (deleting it leaves no blank line)."""
    start, end = node.start_byte, node.end_byte
    line = source.rfind(b"\n", 0, start) + 1
    tail = re.match(rb"[ \t]*\n", source[end:])
    if source[line:start].strip() or tail is None:
        return start, end
    return line, end + tail.end()
