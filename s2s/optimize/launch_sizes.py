"""Host-sized memory carried to a new block: the MEP's sizes that are expressions of the block, evaluated for another.

An OpenCL `__local` argument gets its bytes from the host (`clSetKernelArg(k, i, size, NULL)`), usually computed from
the work-group. Where mep.toml writes its count as an expression of the block (`count_expr = "block_x * (block_y + 1)"`,
names `block_x`, `block_y`, `block_z` or `get_local_size(0..2)`), a pipeline that changes the block gets the count
for its block (the variant's `local_counts`); the expression must give the recorded count at the recorded block.
Anything else (a count from host names, CUDA's `launch.shared_mem`, one number) stays refused with the reason
(s2s.lang.launch_memory).
"""
from __future__ import annotations

import re
from collections.abc import Sequence

from s2s.lang.cexpr import SIZEOF, try_evaluate
from s2s.lang.launch_memory import manifest_sized

_BLOCK = {"block_x": 0, "block_y": 1, "block_z": 2}
_LOCAL_SIZE = re.compile(r"\bget_local_size\s*\(\s*([012])\s*\)")


def scaling(params: Sequence[tuple[str, str, object, str]]) -> tuple[str, ...]:
    """The `__local` arguments (name, space, count, count_expr) whose count is an expression of the block."""
    return tuple(name for name, space, _count, expr in params if space == "local" and _of_block(expr))


def scaled_counts(params: Sequence[tuple[str, str, object, str]], shared_mem: object, old: tuple[int, ...],
                  new: tuple[int, ...]) -> tuple[tuple[str, int], ...] | str:
    """Each host-sized `__local` argument's count at block `new`, or why the block cannot change: memory the MEP does
    not size from the block, or an expression that does not give the recorded count at block `old`."""
    if shared_mem not in (0, "0", None, ""):
        return manifest_sized([], shared_mem)
    out = []
    for name, space, count, expr in params:
        if space != "local":
            continue
        if not _of_block(expr):
            return manifest_sized([(name, space)], 0) + (f" (count_expr = {expr!r}: not an expression of block_x, block_y, "
                                                        "block_z)" if expr else "")
        at_old, at_new = _count(expr, old), _count(expr, new)
        if at_old is None or at_new is None or at_new <= 0:
            return f"count_expr of __local argument {name} ({expr!r}) cannot be evaluated for a block"
        if at_old != count:
            return f"count_expr of __local argument {name} ({expr!r}) gives {at_old} at block {_dims(old)}, mep.toml's count is {count}"
        out.append((name, at_new))
    return tuple(out)


def _of_block(expr: str) -> bool:
    return bool(expr) and (bool(_LOCAL_SIZE.search(expr)) or any(re.search(rf"\b{n}\b", expr) for n in _BLOCK))


def _count(expr: str, block: tuple[int, ...]) -> int | None:
    dims = (tuple(block) + (1, 1, 1))[:3]
    text = _LOCAL_SIZE.sub(lambda m: str(dims[int(m.group(1))]), expr)
    value = try_evaluate(text, lambda n: dims[_BLOCK[n]] if n in _BLOCK else None, SIZEOF.get)
    return int(value) if value is not None and float(value).is_integer() else None


def _dims(block: tuple[int, ...]) -> str:
    return "x".join(str(b) for b in block)
