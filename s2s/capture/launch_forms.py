"""The launch forms the CUDA capture and profile runtimes instrument, in one place: a chevron `k<<<g, b, s, q>>>(args)`,
HIP's `hipLaunchKernelGGL(k, g, b, s, q, args...)` (also `HIP_KERNEL_NAME(k<T, N>)` and `(k<T>)` as its first
argument) and the runtime API's `cudaLaunchKernel((const void*)k, g, b, args, s, q)` (`args`: pointers to the
arguments; cooperative and HIP spellings too). Both are a call expression that is a statement of its own; they differ only in where the kernel is
written. HIP applications built for NVIDIA GPUs (hipcc on nvcc, or nvcc through the HIP-to-CUDA shim) run on the
CUDA runtime, so the same runtime calls record them.

    DEVICE_LAUNCH_KINDS
    kernel_expression(site, call, data, enc) -> "ns::k<float, 4>"
"""
from __future__ import annotations

import re
from typing import Any

from s2s.base.encoding import decode
from s2s.base.records import LaunchSite
from s2s.lang.textsplit import split_top_level

HIP_GGL = "hipLaunchKernelGGL"
# the runtime API's launches: `cudaLaunchKernel((const void*)k, grid, block, args, shmem, stream)`, `args` an array of
# pointers to the kernel's arguments (also cooperative, and HIP's spellings)
RUNTIME_LAUNCHES = frozenset({"cudaLaunchKernel", "cudaLaunchCooperativeKernel", "hipLaunchKernel",
                              "hipLaunchCooperativeKernel"})
DEVICE_LAUNCH_KINDS = frozenset({"chevron", HIP_GGL}) | RUNTIME_LAUNCHES  # the kinds instrumented with the CUDA runtimes
_CAST = re.compile(r"\(\s*(?:const\s+)?void\s*\*\s*\)|reinterpret_cast\s*<[^<>]*>|static_cast\s*<[^<>]*>")
_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def kernel_expression(site: LaunchSite, call: Any, data: bytes, enc: str) -> str:
    """The kernel as the launch at `call` writes it, without comments: a chevron's function expression, or the first
    argument of hipLaunchKernelGGL with its parentheses and HIP_KERNEL_NAME(...) taken off (`k<float, 4>`)."""
    if site.kind == HIP_GGL:
        args = call.child_by_field_name("arguments")
        inner = _COMMENT.sub(" ", decode(data[args.start_byte + 1:args.end_byte - 1], enc)) if args is not None else ""
        parts = split_top_level(inner, angle=True)
        first = parts[0].strip() if parts else ""
        while True:
            named = re.fullmatch(r"HIP_KERNEL_NAME\s*\((.*)\)", first, re.S)
            if named:
                first = named.group(1).strip()
            elif first.startswith("(") and first.endswith(")"):
                first = first[1:-1].strip()
            else:
                break
        return first or site.kernel
    if site.kind in RUNTIME_LAUNCHES:  # `(const void*)k<float>`, `reinterpret_cast<const void*>(&k)`: `k<float>`
        given = runtime_arguments(call, data, enc)[:1]
        kernel = _CAST.sub(" ", given[0]).strip() if given else ""
        while kernel.startswith("(") and kernel.endswith(")") or kernel.startswith("&"):
            kernel = kernel[1:-1].strip() if kernel.startswith("(") else kernel[1:].strip()
        return kernel or site.kernel
    fn = call.child_by_field_name("function")
    return _COMMENT.sub(" ", decode(data[fn.start_byte:fn.end_byte], enc)).strip() if fn is not None else site.kernel


def runtime_arguments(call: Any, data: bytes, enc: str) -> list[str]:
    """The arguments of a runtime API launch call, as written (comments taken out)."""
    args = call.child_by_field_name("arguments")
    return [_COMMENT.sub(" ", decode(data[c.start_byte:c.end_byte], enc)).strip()
            for c in (args.named_children if args is not None else []) if c.type != "comment"]
