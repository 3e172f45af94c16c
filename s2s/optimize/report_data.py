"""What the report shows, read from an MEP's history: every candidate's speedup with its spread, the noise band, the
winner, and the original and the winner against the device's roofline. Each part is optional: an older history,
or one without a noise band, re-timing or roofline numbers, gives what is there and says what is not.

Read from the history (written by the optimize loop, `s2s verify` and benchmarks):
  candidate result `reference` / `variant` {median_us, spread_us (IQR)}   -> the speedup's spread
  candidate result `retimed` {speedup, reference, variant}, `first` {...}  -> the re-timed speedup (the one reported) and
                                                                            the first measurement (s2s.optimize.winner)
  meta `winner` {id, speedup, why}                                          -> the declared winner, or why none was
  meta `noise_band`: {"low": 0.97, "high": 1.03} (the original timed against itself), or a number r meaning 1 +- r
  meta `roofline` (s2s.mep.roofline.record)                                 -> the work of a launch and the device roof
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from s2s.mep.history import Row
from s2s.mep.roofline import Point as RoofPoint
from s2s.mep.roofline import Roof, Work, compulsory_bytes, datasheet_roof, point


@dataclass(frozen=True)
class Candidate:
    """One evaluated candidate as plotted: its speedup and interquartile interval, re-timed where it was."""
    index: int  # evaluation order (1-based)
    id: str
    status: str
    speedup: float | None
    low: float | None
    high: float | None
    retimed: float | None
    retimed_low: float | None
    retimed_high: float | None
    failed_on_capture: bool

    @property
    def shown(self) -> float | None:
        """The speedup the report stands behind: the re-timed one when there is one."""
        return self.retimed if self.retimed is not None else self.speedup


def interval(result: dict[str, Any] | None) -> tuple[float, float] | None:
    """The speedup's interval from the two medians and IQRs: (ref - iqr/2) / (var + iqr/2) .. (ref + iqr/2) / (var - iqr/2)."""
    if not result:
        return None
    ref, var = result.get("reference") or {}, result.get("variant") or {}
    try:
        mr, sr = float(ref["median_us"]), float(ref.get("spread_us") or 0.0)
        mv, sv = float(var["median_us"]), float(var.get("spread_us") or 0.0)
    except (KeyError, TypeError, ValueError):
        return None
    if mr <= 0 or mv <= 0:
        return None
    lo = max(mr - sr / 2, 0.0) / (mv + sv / 2)
    hi = (mr + sr / 2) / max(mv - sv / 2, mv * 0.05)
    return lo, hi


def retimed(result: dict[str, Any] | None) -> dict[str, Any] | None:
    r = (result or {}).get("retimed")
    return r if isinstance(r, dict) and isinstance(r.get("speedup"), (int, float)) else None


def candidates(rows: list[Row]) -> list[Candidate]:
    out = []
    for i, r in enumerate(r for r in rows if r.status != "pending"):
        rt = retimed(r.result)
        first = (r.result or {}).get("first") if rt else None  # a re-timed row keeps its first measurement here
        has_first = isinstance(first, dict) and bool(first.get("speedup"))
        measured = first if has_first else r.result
        speedup = (float(first["speedup"]) if has_first and first else r.speedup) if r.status == "ok" else None
        iv = interval(measured) if r.status == "ok" else None
        rv = interval(rt) if rt else None
        out.append(Candidate(i + 1, r.id, r.status, speedup, iv[0] if iv else None, iv[1] if iv else None,
                             float(rt["speedup"]) if rt else None, rv[0] if rv else None, rv[1] if rv else None,
                             r.failed_on_capture))
    return out


def noise_band(raw: str | None) -> tuple[float, float] | None:
    """The band of speedups the original reaches against itself, from meta `noise_band`; None when not measured."""
    if not raw:
        return None
    try:
        v = json.loads(raw)
    except ValueError:
        return None
    if isinstance(v, (int, float)) and 0 <= v < 1:
        return 1.0 - float(v), 1.0 + float(v)
    if isinstance(v, dict):
        lo, hi = v.get("low", v.get("lo")), v.get("high", v.get("hi"))
        if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and 0 < lo <= hi:
            return float(lo), float(hi)
    return None


@dataclass(frozen=True)
class RooflineView:
    work: Work
    roof: Roof
    note: str
    original: RoofPoint | None
    winner: RoofPoint | None
    flops_known: bool = True  # False: only the compulsory bytes of mep.toml are known (a bandwidth view)


def roofline_view(recorded: tuple[Work, Roof, str] | None, best: Row | None, rows: list[Row],
                  manifest: Any = None) -> RooflineView | None:
    """The original's and the winner's achieved rates against the roof (the re-timed times where there are). Without
    recorded work, a bandwidth view from mep.toml's buffers on the measured device's datasheet roof, where both are known."""
    flops_known = True
    if recorded is None:
        device = next(((r.result or {}).get("device") for r in rows if (r.result or {}).get("device")), "")
        roof0 = datasheet_roof(str(device))
        nbytes = compulsory_bytes(manifest) if manifest is not None else None
        if roof0 is None or nbytes is None:
            return None
        recorded, flops_known = (Work(nbytes, 0.0), roof0, "compulsory bytes of mep.toml's buffers; flops not known"), False
    work, roof, note = recorded
    ref_us = best.ref_us if best else next((r.ref_us for r in rows if r.ref_us), None)
    var_us = best.var_us if best else None
    rt = retimed(best.result) if best else None
    if rt:
        ref_us = (rt.get("reference") or {}).get("median_us") or ref_us
        var_us = (rt.get("variant") or {}).get("median_us") or var_us
    return RooflineView(work, roof, note, point(work, ref_us, roof) if ref_us else None,
                        point(work, var_us, roof) if var_us else None, flops_known)
