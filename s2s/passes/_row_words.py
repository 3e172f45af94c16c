"""row-coarsen's float4 form: the reads that step by one element with the column and the row's store as float4 words."""
from __future__ import annotations

import re

from s2s.lang.edits import Refused
from s2s.lang.kernel_facts import KernelFacts
from s2s.lang.parsing import parse, src

from ._common import walk
from ._index_steps import elem, steps, word


def vector_lines(source: bytes, facts: KernelFacts, expr: str, out: str, out_index: str, col: str, acc: str,
            acc_type: str, row_len: int, head_text: str, macros: dict[str, int]
            ) -> tuple[str, list[str]] | Refused | None:
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
    body = []
    for lane in range(4):
        e = expr
        for start, end, name in sorted(pieces, reverse=True):
            e = e[:start] + f"{name}.{lanes[lane]}" + e[end:]
        e = re.sub(word(col), f"({col} + {lane})", e)
        body.append(f"        {acc}[{col} + {lane}] += {e};")
    vlines = [f"for ({head_text}) {{", "    #pragma unroll", f"    for (int {col} = 0; {col} < {row_len}; {col} += 4) {{",
              *("        " + w for w in words), *body, "    }", "}", "#pragma unroll"]
    if store_ok:
        vals = ", ".join(f"{acc}[{col} + {lane}]" for lane in range(4))
        vlines += [f"for (int {col} = 0; {col} < {row_len}; {col} += 4)",
                   f"    *(float4*)&{out}[{out_index}] = make_float4({vals});"]
        checked.append(out)
    else:
        vlines += [f"for (int {col} = 0; {col} < {row_len}; ++{col})", f"    {out}[{out_index}] = {acc}[{col}];"]
    check = " && ".join(f"((unsigned long long){a} & 15) == 0" for a in dict.fromkeys(checked))
    return check, vlines
