"""Automatic error repair without an LLM: fixes for the faults that break old code on new toolkits.

Each fixer reads the compiler's diagnostics and the source and returns a new source or None.
"""
from __future__ import annotations

import re
from collections.abc import Callable

# CUDA 13 removed these; the replacements keep the meaning.
RENAMES = {
    "cudaThreadSynchronize": "cudaDeviceSynchronize",
    "cudaThreadExit": "cudaDeviceReset",
    "cudaThreadGetLimit": "cudaDeviceGetLimit",
    "cudaThreadSetLimit": "cudaDeviceSetLimit",
    "cudaThreadGetCacheConfig": "cudaDeviceGetCacheConfig",
    "cudaThreadSetCacheConfig": "cudaDeviceSetCacheConfig",
    "hipThreadSynchronize": "hipDeviceSynchronize",
}
SHUFFLES = ("__shfl_down", "__shfl_up", "__shfl_xor", "__shfl", "__any", "__all", "__ballot")
INCLUDES = {
    "printf": "<cstdio>", "memcpy": "<cstring>", "memset": "<cstring>", "sqrt": "<cmath>", "fabs": "<cmath>",
    "INT_MAX": "<climits>", "FLT_MAX": "<cfloat>", "uint32_t": "<cstdint>", "int64_t": "<cstdint>", "size_t": "<cstddef>",
    "assert": "<cassert>", "cooperative_groups": "<cooperative_groups.h>", "cg": "<cooperative_groups.h>",
    "__half": "<cuda_fp16.h>", "half": "<cuda_fp16.h>", "__float2half": "<cuda_fp16.h>",
}
_UNDEFINED = re.compile(r'identifier "([A-Za-z_]\w*)" is undefined|use of undeclared identifier \'([A-Za-z_]\w*)\'|'
                        r"'([A-Za-z_]\w*)' was not declared|namespace \"([A-Za-z_]\w*)\" has no member|name followed by \"::\" must be a class or namespace name")

Fixer = Callable[[str, str], "str | None"]


def _undefined(log: str) -> list[str]:
    return [next(g for g in m.groups() if g) for m in _UNDEFINED.finditer(log) if any(m.groups())]


_UNSYNCED = re.compile(r"\b(__shfl_down|__shfl_up|__shfl_xor|__shfl|__any|__all|__ballot)\s*\(")


def rename_removed_apis(source: str) -> tuple[str, list[str]]:
    """Removed runtime APIs replaced by their successors; also the names that were replaced."""
    out, renamed = source, []
    for old, new in RENAMES.items():
        if re.search(rf"\b{old}\b", out):
            out = re.sub(rf"\b{old}\b", new, out)
            renamed.append(old)
    return out, renamed


_NOT_A_TYPE = frozenset("return else case throw co_return co_yield new delete sizeof".split())


def own_definitions(source: str, names: set[str]) -> set[str]:
    """Those of `names` the source defines itself: an overload (`float4 __shfl_down(const float4 v, ...)`, which its
    calls resolve to) or a macro (`#define __ballot(p) ...`); the rewrite leaves those as written."""
    out = set()
    for name in names:
        word = re.escape(name)
        if re.search(rf"^[ \t]*#[ \t]*define[ \t]+{word}\b", source, re.M):
            out.add(name)
            continue
        for m in re.finditer(rf"(?<![\w.>])([A-Za-z_][\w:]*(?:<[^<>;()]*>)?)[\s*&]+{word}\s*\(", source):
            if m.group(1) not in _NOT_A_TYPE:
                out.add(name)
                break
    return out


def sync_shuffles(source: str) -> tuple[str, list[str]]:
    """Warp intrinsics without a mask (gone for sm_70+) as their *_sync forms over the whole warp; a name the source
    defines itself (its own overload or macro) is its own and stays."""
    found = set(_UNSYNCED.findall(source))
    names = sorted(found - own_definitions(source, found))
    if not names:
        return source, []
    return _UNSYNCED.sub(lambda m: f"{m.group(1)}_sync(0xffffffffu, " if m.group(1) in names else m.group(0), source), names


def fix_removed_apis(source: str, log: str) -> str | None:
    out, renamed = rename_removed_apis(source)
    return out if renamed else None


def fix_unsynced_shuffles(source: str, log: str) -> str | None:
    if not any(s in log for s in SHUFFLES):
        return None
    out, names = sync_shuffles(source)
    return out if names else None


def fix_missing_includes(source: str, log: str) -> str | None:
    wanted = {INCLUDES[n] for n in _undefined(log) if n in INCLUDES}
    if "cooperative_groups" in log and "cooperative_groups" in source:
        wanted.add("<cooperative_groups.h>")
    new = [h for h in sorted(wanted) if f"#include {h}" not in source]
    if not new:
        return None
    return "".join(f"#include {h}  // s2s repair: missing include\n" for h in new) + source


def fix_const_discard(source: str, log: str) -> str | None:
    """`float* p = x;` where x is const: make the local const (the kernel only reads through it)."""
    m = re.search(r'a value of type "const (\w+) \*" cannot be used to initialize an entity of type "\1 \*"', log)
    if not m:
        return None
    t = m.group(1)
    out = re.sub(rf"(?<!const )\b{t}\s*\*\s*(\w+)\s*=\s*", rf"const {t}* \1 = ", source, count=1)
    return out if out != source else None


FIXERS: tuple[tuple[str, Fixer], ...] = (
    ("removed-apis", fix_removed_apis),
    ("unsynced-shuffles", fix_unsynced_shuffles),
    ("missing-includes", fix_missing_includes),
    ("const-discard", fix_const_discard),
)


def builtin_repair(source: str, log: str) -> tuple[str, str] | None:
    """(new source, fixer name) from the first fixer that changes something, or None."""
    for name, fixer in FIXERS:
        out = fixer(source, log)
        if out is not None and out != source:
            return out, name
    return None
