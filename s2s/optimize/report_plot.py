"""report.png: every candidate's speedup with its spread, coloured by verdict, the noise band and the winner; beside
it, where the history holds the kernel's work, the original and the winner on the device's roofline; and, where the
candidates carry the cost model's predictions, predicted against measured."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from s2s.mep.roofline import floor_us

from .report_data import Candidate, ModelAccuracy, RooflineView

COLOURS = {"ok": "#2a9d4a", "wrong-output": "#d62728", "compile-failed": "#7f7f7f", "runtime-failed": "#ff7f0e",
           "timed-out": "#9467bd", "duplicate": "#bcbd22"}


def plot(path: Path, cands: list[Candidate], band: tuple[float, float] | None, best_id: str | None,
         roof: RooflineView | None, title: str, accuracy: ModelAccuracy | None = None) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    judged = accuracy is not None and len(accuracy.judged) >= 2
    panels = 1 + (roof is not None) + judged
    fig, axes = plt.subplots(1, panels, figsize=(6.4 * panels, 4.2), dpi=110, squeeze=False)
    _candidates(axes[0][0], cands, band, best_id)
    if roof is not None:
        _roofline(axes[0][1], roof)
    if judged and accuracy is not None:
        _model(axes[0][panels - 1], accuracy, best_id)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def _candidates(ax: Any, cands: list[Candidate], band: tuple[float, float] | None, best_id: str | None) -> None:
    timed = [c.shown for c in cands if c.shown]
    top = max([*timed, *(c.high for c in cands if c.high)], default=2.0)
    bottom = min([*timed, *(c.low for c in cands if c.low)], default=1.0)
    floor_y = min(bottom, 1.0) / 1.35  # candidates without a timing sit on this line
    ax.set_yscale("log")
    ax.axhline(1.0, color="black", lw=0.8)
    if band is not None:
        ax.axhspan(band[0], band[1], color="#999999", alpha=0.25, lw=0, label=f"noise band {band[0]:.2f}-{band[1]:.2f}x")
    seen: set[str] = set()
    for c in cands:
        colour = COLOURS.get(c.status, "#17becf")
        label = c.status if c.status not in seen and not c.failed_on_capture else None  # the legend's marker: a dot
        if label:
            seen.add(c.status)
        if c.speedup is None:
            ax.scatter([c.index], [floor_y], marker="x", color=colour, s=28, label=label, zorder=3)
            continue
        if c.low is not None and c.high is not None:
            ax.vlines(c.index, c.low, c.high, color=colour, lw=1.2, alpha=0.7)
        if c.failed_on_capture:
            ax.scatter([c.index], [c.speedup], color="black", s=36, marker="X", zorder=3)
        else:
            ax.scatter([c.index], [c.speedup], color=colour, s=22, marker="o", label=label, zorder=3,
                       alpha=0.45 if c.retimed is not None else 1.0)
        if c.retimed is not None:
            if c.retimed_low is not None and c.retimed_high is not None:
                ax.vlines(c.index + 0.25, c.retimed_low, c.retimed_high, color="#1f4e9c", lw=1.6)
            ax.scatter([c.index + 0.25], [c.retimed], color="#1f4e9c", marker="D", s=22, zorder=4,
                       label="re-timed" if "re-timed" not in seen else None)
            seen.add("re-timed")
    win = next((c for c in cands if c.id == best_id and c.shown), None)
    if win is not None:
        ax.scatter([win.index], [win.shown], s=170, facecolors="none", edgecolors="black", lw=1.5, zorder=5, label="winner")
        ax.annotate(f"{win.id}: {win.shown:.2f}x", (win.index, win.shown), textcoords="offset points", xytext=(6, 8), fontsize=8)
    if any(c.failed_on_capture for c in cands):
        ax.scatter([], [], marker="X", color="black", label="failed on captured data")
    if any(c.speedup is None for c in cands):
        ax.text(0.99, floor_y, "no timing ", transform=ax.get_yaxis_transform(), ha="right", va="bottom", fontsize=7, color="#555555")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_ylim(floor_y / 1.2, top * 1.4)
    from matplotlib.ticker import FuncFormatter

    fmt = FuncFormatter(lambda v, _pos: f"{v:.3g}x")
    ax.yaxis.set_major_formatter(fmt)
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _pos: f"{v:.2g}" if f"{v:.2g}"[0] in "235" else ""))
    ax.set_xlabel("candidate (evaluation order)")
    ax.set_ylabel("speedup over the original (x, IQR bars)")
    ax.grid(alpha=0.3, which="both")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="best")  # never over the winner


def _roofline(ax: Any, v: RooflineView) -> None:
    bw, peak = v.roof.bandwidth_gbs, v.roof.fp32_gflops
    fl = floor_us(v.work, v.roof)
    if v.work.flops <= 0:  # a pure data mover: bandwidth is the only roof
        names, rates = [], []
        for name, p in (("original", v.original), ("winner", v.winner)):
            if p is not None:
                names.append(name)
                rates.append(p.gbs)
        ax.barh(names, rates, color=["#7f7f7f", "#2a9d4a"][: len(rates)])
        ax.axvline(bw, color="#d62728", lw=1.2, label=f"roof {bw:.0f} GB/s")
        ax.set_xlabel("achieved GB/s (compulsory bytes / time)")
        ax.set_title(f"{'no flops' if v.flops_known else 'flops not known'}: bandwidth only; memory floor {fl:.1f} µs",
                     fontsize=9)
        ax.legend(fontsize=7)
        return
    ridge = peak / bw
    lo_i = min(v.work.intensity, ridge) / 30
    hi_i = max(v.work.intensity, ridge) * 30
    xs = [lo_i, ridge, hi_i]
    ax.plot(xs, [min(peak, bw * x) for x in xs], color="#d62728", lw=1.5,
            label=f"roof: {bw:.0f} GB/s, {peak / 1e3:.1f} TFLOP/s")
    for name, p, colour in (("original", v.original, "#7f7f7f"), ("winner", v.winner, "#2a9d4a")):
        if p is None:
            continue
        ax.scatter([v.work.intensity], [p.gflops], color=colour, s=40, zorder=3,
                   label=f"{name}: {p.time_us:.1f} µs, {p.fraction_of_floor:.0%} of the floor")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo_i, hi_i)
    top = peak * 2
    bottom = min([peak / 1e4, *(p.gflops / 3 for p in (v.original, v.winner) if p is not None and p.gflops > 0)])
    ax.set_ylim(max(bottom, 1e-3), top)
    ax.set_xlabel("arithmetic intensity (flop / compulsory byte)")
    ax.set_ylabel("achieved GFLOP/s")
    ax.set_title(f"roofline floor {fl:.1f} µs ({v.roof.device})", fontsize=9)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="lower right")


def _model(ax: Any, acc: ModelAccuracy, best_id: str | None) -> None:
    """Predicted against measured speedup (or time, without the original's prediction), one dot per verified candidate."""
    by_speedup = all(j.predicted_speedup is not None for j in acc.judged)
    xs = [j.predicted_speedup if by_speedup else j.predicted_us for j in acc.judged]
    ys = [j.measured_speedup if by_speedup else (j.measured_us or 0.0) for j in acc.judged]
    worst = {j.id for j in acc.worst if j.wrong_by >= 1.5}
    colours = ["#1f4e9c" if j.id == best_id else "#d62728" if j.id in worst else "#2a9d4a" for j in acc.judged]
    ax.scatter(xs, ys, c=colours, s=24, zorder=3)
    for j, x, y in zip(acc.judged, xs, ys):
        if j.id in worst or j.id == best_id:
            ax.annotate(j.id, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
    pos = [v for v in (*xs, *ys) if v and v > 0]
    lo, hi = (min(pos) / 1.5, max(pos) * 1.5) if pos else (0.5, 2.0)
    ax.set_xscale("log")
    ax.set_yscale("log")
    from matplotlib.ticker import FuncFormatter

    unit = "x" if by_speedup else " µs"
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:.3g}{unit}"))
        axis.set_minor_formatter(FuncFormatter(lambda v, _pos: f"{v:.2g}" if f"{v:.2g}"[0] in "25" else ""))
    if by_speedup:
        ax.plot([lo, hi], [lo, hi], color="black", lw=0.8, label="prediction = measurement")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        ax.set_xlabel("predicted speedup (cost model)")
        ax.set_ylabel("measured speedup")
    else:
        ax.set_xlabel("predicted µs (cost model)")
        ax.set_ylabel("measured µs")
    rho = f"{acc.spearman:+.2f}" if acc.spearman is not None else "n/a"
    ax.set_title(f"cost model: Spearman {rho} over {len(acc.judged)} verified; red: most wrong", fontsize=9)
    ax.grid(alpha=0.3, which="both")
    if by_speedup:
        ax.legend(fontsize=7, loc="best")
