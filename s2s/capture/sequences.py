"""Launch sequences in a measured profile: the host loops that launch kernels again and again (issue 28, step 1).

    sequences(launches, sites) -> [Sequence]

A sequence is what one loop nest of a host function launches: the launches whose site sits in the same outermost loop
of that function, in the order the application made them (a function with a warm-up loop and a timed loop, or a loop
per case of a switch, has one sequence per loop: a window across two of them would hold the host's work between). For each: the kernels, the launches and the iterations (the launches of its least
launched kernel), the GPU time, the mean time of one launch, the host's mean gap between one launch's end and the
next one's start, and whether it is launch-bound: a launch of under LAUNCH_BOUND_US of GPU work is dominated by what
a launch costs on its own (a few microseconds), and such loops gain from fewer launches (a CUDA Graph, fused or
persistent kernels) rather than from faster kernels. The gaps come from the instrumented run, which waits for each
launch to finish: they hold the host's own work between launches and the instrumentation's synchronization, so they
are an upper bound on what the application itself leaves idle.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from s2s.base.records import LaunchSite

from .profile import Launch

LAUNCH_BOUND_US = 20.0  # a development loop of 10 us launches (2.6 us gaps) ran 1.39x faster as one graph on its replay


@dataclass
class Sequence:
    function: str
    file: str
    loop_line: int = 0  # the line of the outermost loop holding the sites
    kernels: list[str] = field(default_factory=list)  # in the order of their first launch
    sites: list[str] = field(default_factory=list)
    launches: int = 0
    gpu_ms: float = 0.0
    gaps_us: list[float] = field(default_factory=list)
    per_kernel: dict[str, int] = field(default_factory=dict)

    @property
    def loop_id(self) -> str:
        """FILE:FUNCTION@LINE, LINE its outermost loop's (`s2s sequence --function` takes it)."""
        return f"{self.file}:{self.function}@{self.loop_line}"

    @property
    def iterations(self) -> int:
        return min(self.per_kernel.values()) if self.per_kernel else 0

    @property
    def mean_launch_us(self) -> float:
        return 1e3 * self.gpu_ms / self.launches if self.launches else 0.0

    @property
    def launch_bound(self) -> bool:
        return self.launches > 1 and self.mean_launch_us < LAUNCH_BOUND_US

    def as_dict(self) -> dict[str, Any]:
        return {"function": self.function, "file": self.file, "loop_line": self.loop_line, "kernels": self.kernels, "sites": self.sites,
                "launches": self.launches, "iterations": self.iterations, "launches_per_kernel": self.per_kernel,
                "gpu_ms": round(self.gpu_ms, 6), "mean_launch_us": round(self.mean_launch_us, 3),
                "mean_gap_us": round(statistics.mean(self.gaps_us), 3) if self.gaps_us else None,
                "launch_bound": self.launch_bound}


def sequences(launches: list[Launch], sites: list[LaunchSite]) -> list[Sequence]:
    """The sequences of `launches` (a profile's, in order) by the scan's `sites`, most GPU time first; launches whose
    site is in no loop, or unknown to the scan, belong to none."""
    where = {f"{s.file}:{s.line}": s for s in sites}
    found: dict[tuple[str, str, int], Sequence] = {}
    last: dict[tuple[str, str, int], Launch] = {}
    for la in launches:
        site = where.get(la.site)
        if site is None or not site.in_loop:
            continue
        key = (site.file, site.enclosing_function or "?", site.loop_line)
        seq = found.setdefault(key, Sequence(function=key[1], file=key[0], loop_line=key[2]))
        if la.kernel not in seq.kernels:
            seq.kernels.append(la.kernel)
        if la.site not in seq.sites:
            seq.sites.append(la.site)
        seq.launches += 1
        seq.per_kernel[la.kernel] = seq.per_kernel.get(la.kernel, 0) + 1
        seq.gpu_ms += max(la.ms, 0.0)
        before = last.get(key)
        if before is not None and before.end_us is not None and la.begin_us is not None:
            seq.gaps_us.append(max(0.0, la.begin_us - before.end_us))
        last[key] = la
    return sorted((s for s in found.values() if s.launches > 1), key=lambda s: -s.gpu_ms)
