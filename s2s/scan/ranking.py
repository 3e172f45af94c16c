"""Ranking hotspots: GPU time from a profile when one is given, a static estimate otherwise."""
from __future__ import annotations

from s2s.base.records import Hotspot, Index, Kernel, LaunchSite


def static_estimate(index: Index) -> list[Hotspot]:
    """Loop depth of the body and launch sites inside host loops stand in for time."""
    spots = []
    by_name = launches_by_name(index)
    for k in index.kernels:
        sites = _launches_of(by_name, k)
        host = sum(10 ** min(s.loop_depth, 3) for s in sites) or 1
        score = float(host * (4 ** min(k.loop_depth, 4)))
        spots.append(Hotspot(kernel=k, score=score, source="estimate", calls=len(sites),
                             instantiations=tuple(sorted({s.template_args for s in sites if s.template_args}))))
    return sorted(spots, key=lambda h: (-h.score, h.kernel.file, h.kernel.line))


def launches_of(index: Index, kernel: Kernel) -> list[LaunchSite]:
    return [s for s in index.launches if _launches(s, kernel)]


def launches_by_name(index: Index) -> dict[str, list[LaunchSite]]:
    """Launch sites by the last component of the kernel name they launch: each kernel looks at its own only, so
    ranking is linear in kernels plus launches (not their product)."""
    out: dict[str, list[LaunchSite]] = {}
    for s in index.launches:
        out.setdefault(s.kernel.removeprefix("::").split("::")[-1], []).append(s)
    return out


def _launches_of(by_name: dict[str, list[LaunchSite]], kernel: Kernel) -> list[LaunchSite]:
    near = by_name.get(kernel.name, []) + (by_name.get(kernel.qualified.split("::")[-1], [])
                                           if kernel.qualified.split("::")[-1] != kernel.name else [])
    return [s for s in near if _launches(s, kernel)]


def _launches(s: LaunchSite, kernel: Kernel) -> bool:
    name = s.kernel.removeprefix("::")
    return name == kernel.qualified or name == kernel.name or name.split("::")[-1] == kernel.name and (
        "::" not in name or kernel.qualified.endswith(name))


def profile_ranking(index: Index, profile_path: str) -> tuple[list[Hotspot], list[str]]:
    from .profiles import load_profile, match_profile

    profile = load_profile(profile_path)
    keyed = {f"{k.file}:{k.line}": k for k in index.kernels}
    matched = match_profile(profile, [(key, k.qualified) for key, k in keyed.items()])
    spots = []
    by_name = launches_by_name(index)
    for key, k in keyed.items():
        m = matched.by_kernel.get(key)
        sites = _launches_of(by_name, k)
        inst = tuple(sorted(set(m.instantiations) | {s.template_args for s in sites if s.template_args})) if m else ()
        spots.append(Hotspot(kernel=k, score=m.total_ns if m else 0.0, source=f"profile:{profile.tool}",
                             calls=m.calls if m else 0, instantiations=inst))
    spots.sort(key=lambda h: (-h.score, h.kernel.file, h.kernel.line))
    return spots, list(matched.unmatched)
