"""The roofline of report.html as inline SVG: the device's roof (bandwidth slope, FP32 ceiling) on log-log axes with the
original and the winner at the kernel's arithmetic intensity, each with its achieved rate and fraction of the floor.
Written by hand so the HTML report stands alone (no image file, no plotting library needed to read it)."""
from __future__ import annotations

import html
import math

from s2s.mep.roofline import Point, floor_us

from .report_data import RooflineView

W, H = 600, 380
LEFT, RIGHT, TOP, BOTTOM = 72, 16, 28, 84  # below the axes: the x label, then the legend
POINTS = (("original", "#7f7f7f"), ("winner", "#2a9d4a"))


def roofline_svg(v: RooflineView) -> str:
    """One <svg> element: the roofline with the original and the winner, or, where the kernel's flops are not known
    (or it has none), achieved bandwidth bars against the bandwidth roof."""
    if v.work.flops <= 0:
        return _bandwidth(v)
    bw, peak = v.roof.bandwidth_gbs, v.roof.fp32_gflops
    ridge = peak / bw
    x0, x1 = min(v.work.intensity, ridge) / 30, max(v.work.intensity, ridge) * 30
    got = [p for _, p in _points(v) if p.gflops > 0]
    y0 = max(min([peak / 1e4, *(p.gflops / 3 for p in got)]), 1e-3)
    y1 = peak * 2

    def sx(x: float) -> float:
        return LEFT + (math.log10(x) - math.log10(x0)) / (math.log10(x1) - math.log10(x0)) * (W - LEFT - RIGHT)

    def sy(y: float) -> float:
        return H - BOTTOM - (math.log10(y) - math.log10(y0)) / (math.log10(y1) - math.log10(y0)) * (H - TOP - BOTTOM)

    out = [_open(f"roofline of {v.roof.device}: the original and the winner against the floor")]
    out += _grid(x0, x1, y0, y1, sx, sy)
    xs = [x0, ridge, x1]
    roof = " ".join(f"{sx(x):.1f},{sy(min(peak, bw * x)):.1f}" for x in xs)
    out.append(f'<polyline class="roof" points="{roof}" fill="none" stroke="#d62728" stroke-width="2"/>')
    out.append(f'<text x="{sx(ridge):.1f}" y="{sy(peak) - 6:.1f}" font-size="11" fill="#d62728" text-anchor="middle">'
               f'{bw:.0f} GB/s, {peak / 1e3:.1f} TFLOP/s FP32</text>')
    out.append(f'<line x1="{sx(v.work.intensity):.1f}" y1="{TOP}" x2="{sx(v.work.intensity):.1f}" y2="{H - BOTTOM}" '
               'stroke="#999" stroke-dasharray="3,3"/>')
    for k, (name, p) in enumerate(_points(v)):
        if p.gflops <= 0:
            continue
        colour = dict(POINTS)[name]
        cx, cy = sx(v.work.intensity), sy(p.gflops)
        label = f"{name}: {p.time_us:.2f} µs, {p.gflops:.0f} GFLOP/s, {p.gbs:.0f} GB/s, {p.fraction_of_floor:.1%} of the floor"
        out.append(f'<circle class="point {name}" cx="{cx:.1f}" cy="{cy:.1f}" r="6" fill="{colour}">'
                   f'<title>{html.escape(label)}</title></circle>')
        ly = H - BOTTOM + 50 + 16 * k  # the legend, under the axis label
        out.append(f'<circle cx="{LEFT + 12}" cy="{ly - 4}" r="5" fill="{colour}"/><text x="{LEFT + 22}" y="{ly}" '
                   f'font-size="11">{html.escape(f"{name}: {p.time_us:.2f} µs, {p.gflops:.0f} GFLOP/s, {p.fraction_of_floor:.1%} of the floor")}</text>')
    out.append(_labels("arithmetic intensity (flop / compulsory byte)", "achieved GFLOP/s",
                       f"floor {floor_us(v.work, v.roof):.2f} µs on {v.roof.device}"))
    return "\n".join(out) + "\n</svg>"


def _points(v: RooflineView) -> list[tuple[str, Point]]:
    return [(name, p) for name, p in (("original", v.original), ("winner", v.winner)) if p is not None]


def _bandwidth(v: RooflineView) -> str:
    bw = v.roof.bandwidth_gbs
    top = max([bw, *(p.gbs for _, p in _points(v))]) * 1.1

    def sx(g: float) -> float:
        return LEFT + g / top * (W - LEFT - RIGHT)

    why = "no flops" if v.flops_known else "flops not known"
    out = [_open(f"achieved bandwidth of the original and the winner against {bw:.0f} GB/s ({why})")]
    for k, (name, p) in enumerate(_points(v)):
        y = TOP + 30 + 70 * k
        label = f"{name}: {p.time_us:.2f} µs, {p.gbs:.0f} GB/s, {p.fraction_of_floor:.1%} of the floor"
        out.append(f'<rect class="point {name}" x="{LEFT}" y="{y}" width="{sx(p.gbs) - LEFT:.1f}" height="36" '
                   f'fill="{dict(POINTS)[name]}"><title>{html.escape(label)}</title></rect>')
        out.append(f'<text x="{LEFT + 6}" y="{y + 52}" font-size="11">{html.escape(label)}</text>')
    out.append(f'<line class="roof" x1="{sx(bw):.1f}" y1="{TOP}" x2="{sx(bw):.1f}" y2="{H - BOTTOM}" stroke="#d62728" '
               f'stroke-width="2"/><text x="{sx(bw) - 4:.1f}" y="{TOP + 12}" font-size="11" fill="#d62728" '
               f'text-anchor="end">roof {bw:.0f} GB/s</text>')
    out.append(_labels("achieved GB/s (compulsory bytes / time)", "",
                       f"{why}: bandwidth only; memory floor {floor_us(v.work, v.roof):.2f} µs on {v.roof.device}"))
    return "\n".join(out) + "\n</svg>"


def _open(title: str) -> str:
    return (f'<svg class="roofline" xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
            f'font-family="sans-serif" role="img"><title>{html.escape(title)}</title>'
            f'<rect x="{LEFT}" y="{TOP}" width="{W - LEFT - RIGHT}" height="{H - TOP - BOTTOM}" fill="none" stroke="#333"/>')


def _grid(x0: float, x1: float, y0: float, y1: float, sx: object, sy: object) -> list[str]:
    out = []
    for k in range(math.ceil(math.log10(x0)), math.floor(math.log10(x1)) + 1):
        x = sx(10.0 ** k)  # type: ignore[operator]
        out.append(f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{H - BOTTOM}" stroke="#ddd"/>'
                   f'<text x="{x:.1f}" y="{H - BOTTOM + 14}" font-size="10" text-anchor="middle">{_tick(10.0 ** k)}</text>')
    for k in range(math.ceil(math.log10(y0)), math.floor(math.log10(y1)) + 1):
        y = sy(10.0 ** k)  # type: ignore[operator]
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{W - RIGHT}" y2="{y:.1f}" stroke="#ddd"/>'
                   f'<text x="{LEFT - 4}" y="{y + 3:.1f}" font-size="10" text-anchor="end">{_tick(10.0 ** k)}</text>')
    return out


def _labels(x: str, y: str, title: str) -> str:
    out = (f'<text x="{(LEFT + W - RIGHT) / 2:.0f}" y="{H - BOTTOM + 30}" font-size="11" text-anchor="middle">{html.escape(x)}</text>'
           f'<text x="{LEFT}" y="{TOP - 10}" font-size="11">{html.escape(title)}</text>')
    if y:
        out += (f'<text x="14" y="{(TOP + H - BOTTOM) / 2:.0f}" font-size="11" text-anchor="middle" '
                f'transform="rotate(-90 14 {(TOP + H - BOTTOM) / 2:.0f})">{html.escape(y)}</text>')
    return out


def _tick(v: float) -> str:
    for div, suffix in ((1e6, "M"), (1e3, "k")):
        if v >= div:
            return f"{v / div:g}{suffix}"
    return f"{v:g}"
