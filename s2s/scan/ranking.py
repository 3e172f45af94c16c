"""Ranking hotspots: GPU time from a profile when one is given, a static estimate otherwise."""
from __future__ import annotations

from s2s.base.records import Hotspot, Index, Kernel, LaunchSite


def static_estimate(index: Index) -> list[Hotspot]:
    """Loop depth of the body and launch sites inside host loops stand in for time."""
    spots = []
    for k in index.kernels:
        sites = launches_of(index, k)
        host = sum(10 ** min(s.loop_depth, 3) for s in sites) or 1
        score = float(host * (4 ** min(k.loop_depth, 4)))
        spots.append(Hotspot(kernel=k, score=score, source="estimate", calls=len(sites),
                             instantiations=tuple(sorted({s.template_args for s in sites if s.template_args}))))
    return sorted(spots, key=lambda h: (-h.score, h.kernel.file, h.kernel.line))


def launches_of(index: Index, kernel: Kernel) -> list[LaunchSite]:
    out = []
    for s in index.launches:
        name = s.kernel.removeprefix("::")
        if name == kernel.qualified or name == kernel.name or name.split("::")[-1] == kernel.name and (
            "::" not in name or kernel.qualified.endswith(name)
        ):
            out.append(s)
    return out


def profile_ranking(index: Index, profile_path: str) -> tuple[list[Hotspot], list[str]]:
    from .profiles import load_profile, match_profile

    profile = load_profile(profile_path)
    keyed = {f"{k.file}:{k.line}": k for k in index.kernels}
    matched = match_profile(profile, [(key, k.qualified) for key, k in keyed.items()])
    spots = []
    for key, k in keyed.items():
        m = matched.by_kernel.get(key)
        sites = launches_of(index, k)
        inst = tuple(sorted(set(m.instantiations) | {s.template_args for s in sites if s.template_args})) if m else ()
        spots.append(Hotspot(kernel=k, score=m.total_ns if m else 0.0, source=f"profile:{profile.tool}",
                             calls=m.calls if m else 0, instantiations=inst))
    spots.sort(key=lambda h: (-h.score, h.kernel.file, h.kernel.line))
    return spots, list(matched.unmatched)
