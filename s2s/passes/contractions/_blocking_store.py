"""What contraction-blocking reads off the kernel's text: which store its full blocks may write as float4
(s2s/passes/contractions/_blocking_full.py writes them), whether a type name means float."""
from __future__ import annotations

import re

from s2s.lang.contraction import Contraction
from s2s.lang.kernel_model import KernelModel
from s2s.lang.typedefs import typedefs

_ASSIGN = re.compile(r"\s*([^=;]+?)\s*=(?!=)\s*(.+?)\s*;\s*", re.S)


def one_store(source: bytes, c: Contraction, model: KernelModel) -> tuple[str, str] | None:
    """(place, value) of the one plain store after the loop, `value` "" where it stores the accumulator itself: a
    global accumulator with nothing after the loop, or a local one stored once (`C[i * n + j] = alpha * s;`). The place
    must be an element the model reads as affine in the thread's row and column, so that the run-time check at three
    places (the tile's origin, one row down, one column along) holds for the whole tile. None for anything else."""
    if not c.target_decl:
        hit = c.target_array and not c.after and any(a.write and a.text == c.target and a.affine for a in model.accesses)
        return (c.target, "") if hit else None
    if len(c.after) != 1:
        return None
    s, e = c.after[0]
    m = _ASSIGN.fullmatch(source[s:e].decode())
    if m is None or m.group(1)[-1] in "+-*/%&|^<>!":
        return None
    place, value = m.groups()
    ok = any(a.write and a.affine and a.text == place and s <= a.start < e for a in model.accesses)
    return (place, value) if ok else None


def is_float(name: str, source: bytes, dialect: str) -> bool:
    """`float`, or a name that means float wherever the file defines it: `typedef float real;`, `#define DATA_TYPE float`
    (every definition of it; one that says double under an #ifdef makes it unknown)."""
    name = name.replace("const ", "").strip()
    for _ in range(4):  # a short chain of aliases
        if name == "float":
            return True
        text = source.decode("utf-8", "replace")
        macro = {m.group(1).strip() for m in re.finditer(rf"^[ \t]*#[ \t]*define[ \t]+{re.escape(name)}[ \t]+([^\n/]*)", text, re.M)}
        alias = set(typedefs(text, dialect).get(name, []))
        targets = macro | alias
        if len(targets) != 1:
            return False
        name = targets.pop()
    return False

