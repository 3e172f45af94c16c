"""stencil-registers{cols>1}' stores after the streamed rows: a point's tail that is one `A[idx] = acc;` with idx
stepping by one along x writes the thread's C adjacent sums of a row as one float2/float4 word where all C points pass
the exit guards and the address is aligned (checked at run time), else point by point as before."""
from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

from s2s.lang.affine import Poly
from s2s.lang.kernel_facts import KernelFacts
from s2s.lang.kernel_model import KernelModel

from ..common.tree import single_store, text, walk
from ._stencil import spliced

_WORD = {2: "float2", 4: "float4"}


def row_stores(source: bytes, facts: KernelFacts, model: KernelModel, tail: list[Node], sum_names: tuple[str, str], after: list[str],
               dead: str, shape: tuple[int, int, str, str], decls: tuple[tuple[str, str], ...], xbase: str,
               fresh_name: Callable[[str], str]) -> list[str] | None:
    """The store phase's lines, or None where the tail is not one word-able store of the sum. sum_names: the sum and
    its (cy, cx) array; shape: (factor, cols, the row and column loop names); decls: (name, declaration) of y and x;
    after: the tail as the point loop has it (the path for points off the word)."""
    f, cols, cy, cx = shape
    (acc, sums), dead = sum_names, dead or "(false)"
    (yv, ydecl), (xv, xdecl) = decls
    store = single_store(source, tail)
    if store is None or text(source, store[1]) != acc:
        return None
    left = store[0]
    arg = left.child_by_field_name("argument")
    p = facts.param(text(source, arg)) if arg is not None and arg.type == "identifier" else None
    write = next((a for a in model.accesses if a.write and a.start == left.start_byte), None)
    if arg is None or p is None or not p.pointer or p.base_type.replace("const ", "").strip() != "float" or write is None \
            or len(write.index) != 1 or write.index[0] is None or write.index[0].coeff(xv) != Poly.const(1):
        return None
    at = spliced(source, left.start_byte, left.end_byte,
                 [(n.start_byte, n.end_byte, xbase) for n in walk(left) if n.type == "identifier" and text(source, n) == xv])
    whole, o = fresh_name("whole"), fresh_name("o")
    lanes = ", ".join(f"{sums}[{cy}][{k}]" for k in range(cols))
    return ["#pragma unroll", f"for (int {cy} = 0; {cy} < {f}; ++{cy}) {{", f"    {ydecl}", f"    bool {whole} = true;",
            "    #pragma unroll", f"    for (int {cx} = 0; {cx} < {cols}; ++{cx}) {{", f"        {xdecl}",
            f"        {whole} = {whole} && !{dead};", "    }", f"    float* {o} = &{at};",
            f"    if ({whole} && (size_t)(void*){o} % {4 * cols} == 0) {{",
            f"        *({_WORD[cols]}*){o} = make_{_WORD[cols]}({lanes});", "    } else {", "        #pragma unroll",
            f"        for (int {cx} = 0; {cx} < {cols}; ++{cx}) {{", f"            {xdecl}", f"            if {dead}",
            "                continue;"] + [f"            {ln}" if ln else ln for ln in after] + ["        }", "    }", "}"]
