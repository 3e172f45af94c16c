"""row-coarsen's float4 form: the reads that step by one element with the column and the row's store as float4 words."""
from __future__ import annotations

import re

from s2s.lang.edits import Refused
from s2s.lang.kernel_facts import KernelFacts
from s2s.lang.parsing import parse, src

from ..common.index_steps import constant, elem, steps, word
from ..common.tree import walk

_K_LOOP = re.compile(r"\s*int\s+(\w+)\s*=\s*0\s*;\s*\1\s*<\s*(.+?)\s*;\s*(?:\1\s*\+\+|\+\+\s*\1|\1\s*\+=\s*1)\s*")


def vector_lines(source: bytes, facts: KernelFacts, expr: str, out: str, out_index: str, col: str, acc: str,
                 acc_type: str, row_len: int, head_text: str, macros: dict[str, int], kvec: bool = False
                 ) -> tuple[str, list[str]] | Refused | None:
    """(the run-time alignment check, the loop and store in float4 words); None where no word is proven aligned. With
    `kvec`, also the reads that step by one element with k (`a[r * D + k]`, the same for the whole row): the loop over
    k steps by 4, one word each, its 4 steps unrolled (k from 0 to a constant multiple of 4), else Refused."""
    if acc_type.replace("const", "").strip() != "float":
        return Refused("float4 words need a float sum (vec=1 keeps scalars)")
    wrapped = ("int __s2s = " + expr + ";").encode()
    root = parse(wrapped, facts.dialect).root_node
    subs = [n for n in walk(root, descend=lambda n: n.type != "subscript_expression") if n.type == "subscript_expression"]
    lanes = ("x", "y", "z", "w")
    words: list[str] = []
    checked: list[str] = []
    pieces: list[tuple[int, int, str]] = []
    for n in subs:
        arr, idx = n.child_by_field_name("argument"), n.child_by_field_name("indices") or n.child_by_field_name("index")
        if arr is None or idx is None or arr.type != "identifier":
            continue
        itext = src(wrapped, idx).strip()[1:-1].strip() if idx.type == "subscript_argument_list" else src(wrapped, idx)
        if steps(itext, col, macros) == 1 and elem(source, facts, src(wrapped, arr)) == "float":
            name = f"v{len(words)}"
            words.append(f"float4 {name} = *(const float4*)&{src(wrapped, arr)}[{itext}];")
            pieces.append((n.start_byte - 12, n.end_byte - 12, name))
            checked.append(src(wrapped, arr))
    store_ok = steps(out_index, col, macros) == 1 and elem(source, facts, out) == "float"
    if not words and not store_ok:
        return None
    kloop = _K_LOOP.fullmatch(head_text) if kvec else None
    trips = constant(kloop.group(2), macros) if kloop else None
    if kvec and (kloop is None or trips is None or trips % 4):
        return Refused("kvec needs `for (int k = 0; k < K; k++)` with K a compile-time multiple of 4")
    kwords: list[tuple[int, int, str, str]] = []  # (start, end, name, load) of reads one element apart along k
    kvar = kloop.group(1) if kloop else ""
    for n in subs if kvar else []:
        arr, idx = n.child_by_field_name("argument"), n.child_by_field_name("indices")
        if arr is None or idx is None or arr.type != "identifier" or any(p[0] == n.start_byte - 12 for p in pieces):
            continue
        itext = src(wrapped, idx).strip()[1:-1].strip()
        if (steps(itext, kvar, macros) == 1 and steps(itext, col, macros, by=0) == 0
                and elem(source, facts, src(wrapped, arr)) == "float"):
            name = f"a{len(kwords)}"
            kwords.append((n.start_byte - 12, n.end_byte - 12, name, f"float4 {name} = *(const float4*)&{src(wrapped, arr)}[{itext}];"))
            checked.append(src(wrapped, arr))
    if kvec and not kwords:
        return Refused("kvec: no read of the sum steps by one element along k from a multiple of 4")

    def lanes_of(k_lane: int | None) -> list[str]:
        out_lines = []
        for lane in range(4):
            e = expr
            marks = [(a, b, f"{nm}.{lanes[lane]}") for a, b, nm in pieces]
            marks += [(a, b, f"{nm}.{lanes[k_lane]}") for a, b, nm, _ in kwords] if k_lane is not None else []
            for start, end, text in sorted(marks, reverse=True):
                e = e[:start] + text + e[end:]
            e = re.sub(word(col), f"({col} + {lane})", e)
            if k_lane is not None:
                e = re.sub(word(kloop.group(1)), f"({kloop.group(1)} + {k_lane})", e)  # type: ignore[union-attr]
            out_lines.append(f"        {acc}[{col} + {lane}] += {e};")
        return out_lines
    if kloop is None or not kvec:
        vlines = [f"for ({head_text}) {{", "    #pragma unroll", f"    for (int {col} = 0; {col} < {row_len}; {col} += 4) {{",
                  *("        " + w for w in words), *lanes_of(None), "    }", "}", "#pragma unroll"]
    else:
        k = kloop.group(1)
        vlines = [f"for (int {k} = 0; {k} < {kloop.group(2)}; {k} += 4) {{", *("    " + kw[3] for kw in kwords)]
        for k_lane in range(4):
            shifted = [re.sub(word(k), f"({k} + {k_lane})", w) for w in words]
            vlines += ["    #pragma unroll", f"    for (int {col} = 0; {col} < {row_len}; {col} += 4) {{",
                       *("        " + w for w in shifted), *lanes_of(k_lane), "    }"]
        vlines += ["}", "#pragma unroll"]
    if store_ok:
        vals = ", ".join(f"{acc}[{col} + {lane}]" for lane in range(4))
        vlines += [f"for (int {col} = 0; {col} < {row_len}; {col} += 4)",
                   f"    *(float4*)&{out}[{out_index}] = make_float4({vals});"]
        checked.append(out)
    else:
        vlines += [f"for (int {col} = 0; {col} < {row_len}; ++{col})", f"    {out}[{out_index}] = {acc}[{col}];"]
    check = " && ".join(f"((unsigned long long){a} & 15) == 0" for a in dict.fromkeys(checked))
    return check, vlines
