"""report.html's roofline, drawn as inline SVG: the roof's knee at the ridge point, the original and the winner at the
kernel's intensity (the faster one higher), or bandwidth bars where the flops are not known. Parsed, not pixel-compared."""
from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from s2s.mep.roofline import Work, datasheet_roof, point
from s2s.optimize.report_data import RooflineView
from s2s.optimize.report_svg import roofline_svg

NS = "{http://www.w3.org/2000/svg}"
H200 = datasheet_roof("NVIDIA H200")


def _parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)  # well-formed XML, or this raises
    assert root.tag == f"{NS}svg" and root.get("class") == "roofline"
    return root


def test_roofline_places_the_original_and_winner_under_the_roof() -> None:
    assert H200 is not None
    gemm = Work(bytes=3 * 1024**2 * 4.0, flops=2 * 1024.0**3)  # intensity 170 flop/byte: right of the ridge (13.9)
    v = RooflineView(gemm, H200, "test", point(gemm, 1400.0, H200), point(gemm, 90.0, H200))
    root = _parse(roofline_svg(v))
    circles = {c.get("class"): c for c in root.iter(f"{NS}circle") if c.get("class")}
    orig, win = circles["point original"], circles["point winner"]
    assert orig.get("cx") == win.get("cx")  # the same kernel: the same intensity
    assert float(win.get("cy") or 0) < float(orig.get("cy") or 0)  # faster: a higher rate, nearer the top
    assert "of the floor" in (win.findtext(f"{NS}title") or "")
    roof = next(p for p in root.iter(f"{NS}polyline") if p.get("class") == "roof")
    (x0, y0), (xr, yr), (x1, y1) = [tuple(map(float, pt.split(","))) for pt in (roof.get("points") or "").split()]
    assert x0 < xr < x1 and y0 > yr == y1  # the bandwidth slope rises to the ridge, then the flat compute ceiling
    texts = " ".join(t.text or "" for t in root.iter(f"{NS}text"))
    assert "4800 GB/s, 66.9 TFLOP/s FP32" in texts and "floor" in texts and "winner: 90.00 µs" in texts
    # the winner sits at or below the roof's ceiling line (a higher y coordinate), as nothing beats the floor here
    assert float(win.get("cy") or 0) >= yr


def test_without_flops_the_svg_shows_bandwidth_bars_against_the_roof() -> None:
    assert H200 is not None
    copy = Work(bytes=2 * 64e6, flops=0.0)
    v = RooflineView(copy, H200, "bytes only", point(copy, 100.0, H200), point(copy, 40.0, H200), flops_known=False)
    root = _parse(roofline_svg(v))
    bars = {r.get("class"): float(r.get("width") or 0) for r in root.iter(f"{NS}rect") if r.get("class")}
    assert bars["point winner"] == pytest.approx(bars["point original"] * 2.5, rel=1e-3)  # GB/s in proportion
    assert any(line.get("class") == "roof" for line in root.iter(f"{NS}line"))
    assert "flops not known: bandwidth only" in " ".join(t.text or "" for t in root.iter(f"{NS}text"))
