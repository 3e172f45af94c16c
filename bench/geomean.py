"""The one geometric mean of the benchmarks: over every kernel attempted.

The caller passes 1.0 (or None) for a kernel without an accepted win: refused on the application's data, failed,
not run before the deadline, no verified variant faster than the original. None, NaN and non-positive values
count as 1.0; every other value is kept as given.
"""
from __future__ import annotations

import math
from collections.abc import Iterable


def geomean(speedups: Iterable[float | None]) -> float:
    """exp(mean(log s)) over every entry (1.0 for an empty list)."""
    logs = [math.log(float(s)) if isinstance(s, (int, float)) and not math.isnan(s) and s > 0 else 0.0 for s in speedups]
    return math.exp(sum(logs) / len(logs)) if logs else 1.0
