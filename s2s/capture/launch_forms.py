"""The launch forms the CUDA capture and profile runtimes instrument, in one place: a chevron `k<<<g, b, s, q>>>(args)`
and HIP's `hipLaunchKernelGGL(k, g, b, s, q, args...)` (also `HIP_KERNEL_NAME(k<T, N>)` and `(k<T>)` as its first
argument). Both are a call expression that is a statement of its own; they differ only in where the kernel is
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
DEVICE_LAUNCH_KINDS = frozenset({"chevron", HIP_GGL})  # the kinds instrumented with the CUDA runtimes
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
    fn = call.child_by_field_name("function")
    return _COMMENT.sub(" ", decode(data[fn.start_byte:fn.end_byte], enc)).strip() if fn is not None else site.kernel
