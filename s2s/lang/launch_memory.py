"""Memory the host sizes at the launch: what a new block shape would leave sized for the old one.

An OpenCL `__local` pointer argument gets its bytes from `clSetKernelArg(k, i, size, NULL)`, CUDA dynamic shared
memory (`extern __shared__`) from the launch's third argument; both are usually computed from the block (a tile of
the work-group). An MEP records one size (mep.toml: `count` of a `space = "local"` parameter, `launch.shared_mem`),
not a function of the block, so a pass that changes the block must refuse such a kernel, and say why; unless mep.toml
writes the count as an expression of the block (s2s/optimize/launch_sizes.py), which the launch then carries.
"""
from __future__ import annotations

import re

from .kernel_facts import KernelFacts

_LOCAL = re.compile(r"\b(__local|local)\b")
_EXTERN_SHARED = re.compile(r"\bextern\s+(?:__shared__\b[^;]*?|[^;]*?\b__shared__\b[^;]*?)\b(\w+)\s*\[\s*\]\s*;")


def host_sized(source: bytes, facts: KernelFacts) -> str:
    """Why a new block shape would break the kernel's host-sized local or shared memory; "" when it has none."""
    if facts.dialect == "opencl":
        local = [p.name for p in facts.params if p.pointer and _LOCAL.search(p.type) and p.name not in facts.scaled_memory]
        if local:
            return (f"__local argument {', '.join(local)} is sized by the host (clSetKernelArg with a size and NULL), "
                    "for the current work-group; mep.toml records one count, not a function of the block")
        return ""
    m = _EXTERN_SHARED.search(source[facts.start:facts.end].decode("utf-8", "replace"))
    if m:
        return (f"dynamic shared memory ({m.group(1)}, extern __shared__) is sized by the launch's third argument for the "
                "current block; mep.toml records one launch.shared_mem, not a function of the block")
    return ""


def manifest_sized(params: list[tuple[str, str]], shared_mem: object) -> str:
    """The same from an MEP's manifest: (name, space) of its parameters and launch.shared_mem; "" when neither."""
    local = [n for n, space in params if space == "local"]
    if local:
        return f"mep.toml sizes __local argument {', '.join(local)} for the current block (one count, not a function of the block)"
    if shared_mem not in (0, "0", None, ""):
        return f"mep.toml gives launch.shared_mem = {shared_mem} bytes for the current block (not a function of the block)"
    return ""
