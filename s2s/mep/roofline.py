"""A kernel's roofline floor: the time its compulsory bytes and flops need on a device, and how near a measurement came.

The floor is max(bytes / bandwidth, flops / peak FP32 rate): nothing that moves those bytes and does those flops
can be faster. Bandwidth is the device's measured copy bandwidth when one is given (what a copy kernel reaches
is the honest roof for a streaming kernel), else the datasheet peak. The work of one kernel launch (bytes, flops)
is recorded in the MEP's history (meta key `roofline`) by whoever knows it (a benchmark's catalog, a kernel
model); `s2s report` draws the original and the winner against the roof from it.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

META_KEY = "roofline"


@dataclass(frozen=True)
class Roof:
    """A device's ceilings: DRAM bandwidth (GB/s) and non-tensor FP32 rate (GFLOP/s), with where they came from."""
    device: str
    bandwidth_gbs: float
    fp32_gflops: float
    source: str


# datasheet figures (SXM parts); the measured copy bandwidth replaces the bandwidth where a benchmark measured it
DATASHEET = (
    ("H200", Roof("NVIDIA H200", 4800.0, 66900.0, "NVIDIA H200 datasheet: 4.8 TB/s HBM3e, 67 TFLOP/s FP32")),
    ("H100", Roof("NVIDIA H100", 3350.0, 66900.0, "NVIDIA H100 SXM datasheet: 3.35 TB/s, 67 TFLOP/s FP32")),
    ("A100", Roof("NVIDIA A100", 2039.0, 19500.0, "NVIDIA A100 80GB SXM datasheet: 2.04 TB/s, 19.5 TFLOP/s FP32")),
    ("MI300X", Roof("AMD MI300X", 5300.0, 163400.0, "AMD MI300X datasheet: 5.3 TB/s, 163.4 TFLOP/s FP32")),
)


def datasheet_roof(device: str) -> Roof | None:
    """The datasheet roof of a device named like `NVIDIA H200` (None for a device not in the table)."""
    for key, roof in DATASHEET:
        if key.lower() in device.lower():
            return roof
    return None


def measured_roof(device: str, copy_gbs: float | None) -> Roof | None:
    """The datasheet roof with its bandwidth replaced by a measured copy bandwidth (bytes read + written per second)."""
    base = datasheet_roof(device)
    if base is None or not copy_gbs:
        return base
    return Roof(base.device, float(copy_gbs), base.fp32_gflops,
                f"measured copy bandwidth {copy_gbs:.0f} GB/s; FP32 peak from the datasheet ({base.source})")


@dataclass(frozen=True)
class Work:
    """What one launch must do at least: bytes to and from DRAM (each array touched once) and floating-point operations."""
    bytes: float
    flops: float

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes if self.bytes else 0.0


def floor_us(work: Work, roof: Roof) -> float:
    """The roofline floor of one launch in µs."""
    return max(work.bytes / (roof.bandwidth_gbs * 1e3), work.flops / (roof.fp32_gflops * 1e3))


def bound(work: Work, roof: Roof) -> str:
    """Which roof holds the floor: `memory` or `compute`."""
    return "memory" if work.bytes / roof.bandwidth_gbs >= work.flops / roof.fp32_gflops else "compute"


@dataclass(frozen=True)
class Point:
    """A measured launch on the roofline: achieved rates and the fraction of the floor reached (1.0 = at the floor)."""
    time_us: float
    gbs: float
    gflops: float
    fraction_of_floor: float


def point(work: Work, time_us: float, roof: Roof) -> Point:
    t = max(time_us, 1e-9)
    return Point(time_us, work.bytes / (t * 1e3), work.flops / (t * 1e3), floor_us(work, roof) / t)


def compulsory_bytes(manifest: Any) -> float | None:
    """Bytes one launch must move at least, from mep.toml: every buffer read once, outputs written once (inout twice).
    None when an element size is unknown (a struct, a template type)."""
    from s2s.lang.cexpr import SIZEOF

    total = 0.0
    for p in manifest.params:
        if p.role == "scalar" or not isinstance(p.count, int):
            continue
        size = SIZEOF.get(" ".join(str(p.elem).replace("const ", "").split()))
        if size is None:
            return None
        total += p.count * size * (2 if p.role == "inout" else 1)
    return total or None


def record(history: Any, work: Work, roof: Roof, note: str = "") -> None:
    """Store the launch's work and the device's roof in a History (meta `roofline`), for the report."""
    history.set_meta(META_KEY, json.dumps({"work": asdict(work), "roof": asdict(roof), "note": note}))


def recorded(history: Any) -> tuple[Work, Roof, str] | None:
    """The work and roof recorded in a History, None when absent or unreadable (the report then leaves the roofline out)."""
    raw = history.meta(META_KEY)
    if not raw:
        return None
    try:
        d = json.loads(raw)
        return Work(**d["work"]), Roof(**d["roof"]), str(d.get("note", ""))
    except (ValueError, KeyError, TypeError):
        return None


def record_in_mep(mep_dir: Path, work: Work, roof: Roof, note: str = "") -> None:
    from .history import History

    hist = History(Path(mep_dir) / "history.sqlite")
    try:
        record(hist, work, roof, note)
    finally:
        hist.close()
