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
  candidate columns `predicted_us`, `prediction`; meta `cost_model`        -> the cost model judged (model_accuracy)
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


@dataclass(frozen=True)
class Judged:
    """One verified candidate's prediction against its measurement."""
    id: str
    origin: str
    predicted_us: float
    measured_us: float | None  # the variant's median (re-timed where it was)
    predicted_speedup: float | None  # the original's prediction over this one's; None without the original's
    measured_speedup: float
    wrong_by: float  # >= 1: predicted over measured speedup or its inverse (calibrated times without the original's)
    optimistic: bool  # the model expected it faster than it was


@dataclass(frozen=True)
class ModelAccuracy:
    """How well the cost model ranked the verified candidates of one MEP (s2s.optimize.cost.record)."""
    candidates: int  # candidates in the history
    predicted: int  # of them with a prediction
    judged: tuple[Judged, ...]  # verified ones with a prediction and a measured speedup, fastest measured first
    spearman: float | None  # rank correlation of predicted and measured speedups; None below 3 or without spread
    predicted_best: str | None
    measured_best: str | None
    predicted_best_rank: int | None  # where the predicted best came in the measurements (1: it was the fastest)
    side_agreement: tuple[int, int] | None  # (right, of): candidates predicted faster/slower than the original that were
    original_us: float | None
    model_device: str
    measured_device: str

    @property
    def worst(self) -> tuple[Judged, ...]:
        """The predictions furthest from their measurements, at most three, the most wrong first."""
        return tuple(sorted(self.judged, key=lambda j: -j.wrong_by)[:3])

    def as_json(self) -> dict[str, Any]:
        from dataclasses import asdict

        return {**{k: v for k, v in asdict(self).items() if k != "judged"}, "judged": [asdict(j) for j in self.judged],
                "worst": [j.id for j in self.worst]}


def ranks(values: list[float]) -> list[float]:
    """1-based ranks, ties given their average rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(xs: list[float], ys: list[float]) -> float | None:
    """Spearman's rank correlation (Pearson's over average ranks); None below 3 pairs or when either side is constant."""
    if len(xs) != len(ys) or len(xs) < 3:
        return None
    rx, ry = ranks(xs), ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx, syy = sum((a - mx) ** 2 for a in rx), sum((b - my) ** 2 for b in ry)
    return sxy / (sxx * syy) ** 0.5 if sxx > 0 and syy > 0 else None


def model_accuracy(rows: list[Row], original_us: float | None, model_device: str = "",
                   band: tuple[float, float] | None = None) -> ModelAccuracy | None:
    """The cost model's predictions judged against the measured speedups of the verified candidates (re-timed where they
    were); None when no candidate carries a prediction (a history from before predictions were recorded). Speedups, not
    raw times, are compared: they cancel the model's absolute error and the machine's drift between evaluations. Without
    the original's prediction, a candidate's error is its predicted/measured time ratio over the median ratio."""
    predicted = [r for r in rows if r.predicted_us]
    if not predicted:
        return None
    shown = {c.id: c for c in candidates(rows)}
    pairs = [(r, shown[r.id].shown) for r in predicted if r.status == "ok" and r.id in shown and shown[r.id].shown]
    measured_us = {r.id: _variant_us(r) for r, _ in pairs}
    judged: list[Judged] = []
    if original_us:
        for r, ms in pairs:
            ps = original_us / float(r.predicted_us or 1.0)
            judged.append(Judged(r.id, r.origin, float(r.predicted_us or 0.0), measured_us[r.id], ps, float(ms or 1.0),
                                 max(ps / float(ms or 1.0), float(ms or 1.0) / ps), ps > float(ms or 1.0)))
    else:
        times = [(r, ms, measured_us[r.id]) for r, ms in pairs if measured_us[r.id]]
        ratios = sorted(float(r.predicted_us or 0.0) / float(t or 1.0) for r, _, t in times)
        mid = ratios[len(ratios) // 2] if ratios else 1.0
        for r, ms, t in times:
            q = float(r.predicted_us or 0.0) / float(t or 1.0) / mid
            judged.append(Judged(r.id, r.origin, float(r.predicted_us or 0.0), t, None, float(ms or 1.0), max(q, 1 / q), q < 1))
    judged.sort(key=lambda j: -j.measured_speedup)
    rho = spearman([-j.predicted_us for j in judged], [j.measured_speedup for j in judged])
    predicted_best = min(judged, key=lambda j: j.predicted_us).id if judged else None
    measured_best = judged[0].id if judged else None
    rank = next((i + 1 for i, j in enumerate(judged) if j.id == predicted_best), None)
    side = None
    if original_us and judged:
        lo, hi = band or (1.0, 1.0)
        called = [j for j in judged if not lo <= j.measured_speedup <= hi]  # inside the noise band: neither side
        side = (sum(1 for j in called if ((j.predicted_speedup or 1.0) > 1.0) == (j.measured_speedup > hi)), len(called))
    device = next((str((r.result or {}).get("device")) for r in rows if (r.result or {}).get("device")), "")
    return ModelAccuracy(len(rows), len(predicted), tuple(judged), rho, predicted_best, measured_best, rank, side,
                         original_us, model_device, device)


def _variant_us(r: Row) -> float | None:
    rt = retimed(r.result)
    us = ((rt or {}).get("variant") or {}).get("median_us") or r.var_us
    return float(us) if us else None
