"""The device an MEP's optimization targets, read from what the MEP measured (s2s/lang/target_device.py describes it).

Where it comes from, most trusted first: the device the MEP's evaluations ran on (each measurement's `device`, the
latest one), with the copy bandwidth a benchmark measured there (history meta `roofline`, when its roof says
"measured"); nothing known: the H200. The optimize loop re-reads the device after each measurement, so a fresh MEP
targets the device it runs on from its second round on.
"""
from __future__ import annotations

from typing import Any

from s2s.lang.target_device import H200, TargetDevice, device_named
from s2s.mep.roofline import recorded


def target_of(history: Any, measured: str = "") -> TargetDevice:
    """The target device from an MEP's history (s2s.mep.history.History) and the device of the latest measurement
    (`measured`, "" when none yet)."""
    name = measured or _last_device(history)
    copy = _measured_copy(history, name)
    return device_named(name, copy) if name else H200


def _last_device(history: Any) -> str:
    for row in reversed(history.rows()):
        device = str((row.result or {}).get("device") or "")
        if device and device != "?":
            return device
    return ""


def _measured_copy(history: Any, name: str) -> float | None:
    """Bytes/s of the copy bandwidth measured on the device `name` (the roofline a benchmark recorded), None if none."""
    got = recorded(history)
    if got is None:
        return None
    roof = got[1]
    if not roof.source.startswith("measured") or not name or device_named(roof.device).name != device_named(name).name:
        return None
    return roof.bandwidth_gbs * 1e9
