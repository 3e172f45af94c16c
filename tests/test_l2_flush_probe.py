"""bench/l2_flush_probe.py's arithmetic and table (the measurement itself needs a GPU and CuPy)."""
from __future__ import annotations

import importlib.util
from types import ModuleType

from conftest import ROOT


def _probe() -> ModuleType:
    spec = importlib.util.spec_from_file_location("l2_flush_probe", ROOT / "bench" / "l2_flush_probe.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_rates_and_fractions_of_the_copy_bandwidth() -> None:
    """64 MiB in 16 µs is 4194 GB/s, 100% of a 4194 GB/s copy; in 32 µs half of it; a missing time stays missing."""
    probe = _probe()
    copy = 64 * (1 << 20) / 16e3
    rows = probe.summarize([{"mb": 64, "flush": "none", "median_us": 16.0}, {"mb": 64, "flush": "memset", "median_us": 32.0},
                            {"mb": 128, "flush": "read"}], copy)
    assert abs(rows[0]["gbs"] - 4194.304) < 1e-6 and abs(rows[0]["fraction_of_copy"] - 1.0) < 1e-9
    assert abs(rows[1]["fraction_of_copy"] - 0.5) < 1e-9
    assert rows[2]["gbs"] is None and rows[2]["fraction_of_copy"] is None
    md = probe.markdown({"device": "H200", "commit": "abc", "copy_gbs": copy, "flush_mb": 100, "rows": rows})
    assert "| 64 | memset | 32.0 | 2097 | 50% |" in md and "| 128 | read | - | - | - |" in md and "(100 MB)" in md
