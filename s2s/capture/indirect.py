"""Launch sites whose kernel expression names no kernel of the tree: a function pointer (`kernel<<<g, b>>>(x, n)` with
`void (*kernel)(float*, int) = &twice`), a helper template's parameter (`k<<<g, b>>>(args...)` in
`template <typename F, ...> void launch_1d(F k, ...)`). Which kernel such a site runs is known at run time only: the
profile names it by the function it launches (profile.py), and the capture runtime records it in the slot of the kernel
it is (instrument.py, templates/capture/runtime_cuda.h.j2).

    launched_name(site) -> "ns::k"
    is_indirect(site, kernel_names) -> bool
    indirect_sites(launches, kernel_names) -> [LaunchSite]
"""
from __future__ import annotations

from collections.abc import Iterable

from s2s.base.records import LaunchSite

from .launch_forms import DEVICE_LAUNCH_KINDS


def launched_name(site: LaunchSite) -> str:
    """The name a launch's text gives its kernel, without template arguments or blanks (`ns::k<float, 4>` -> `ns::k`)."""
    return site.kernel.split("<")[0].replace(" ", "")


def is_indirect(site: LaunchSite, kernel_names: Iterable[str]) -> bool:
    """Whether a chevron (or hipLaunchKernelGGL) launch's kernel expression names none of `kernel_names` (the names the tree defines kernels
    by; a qualified name matches by its last part)."""
    names = kernel_names if isinstance(kernel_names, (set, frozenset)) else set(kernel_names)
    return site.kind in DEVICE_LAUNCH_KINDS and launched_name(site).split("::")[-1] not in names


def indirect_sites(launches: Iterable[LaunchSite], kernel_names: Iterable[str]) -> list[LaunchSite]:
    """The chevron launches of `launches` whose kernel is known at run time only, in order of file and position."""
    names = set(kernel_names)
    return sorted((s for s in launches if is_indirect(s, names)), key=lambda s: (s.file, s.start_byte))
