"""The one geometric mean of the benchmarks: over every kernel attempted.

The caller passes 1.0 (or None) for a kernel without an accepted win: refused on the application's data, failed,
not run before the deadline, no verified variant faster than the original. None, NaN and non-positive values
count as 1.0; every other value is kept as given.

Every figure says where its kernels come from (`summary` records it): "in-sample" (our samples and kernel zoo, which
the passes were written against), "development corpus" (applications read, tuned or fixed against: NPB-GPU, Parboil,
BabelStream, CloverLeaf, cuda-samples, HeCBench's programs outside the held-out split) or "held-out split" (never
opened; bench/apps/).
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

LABELS = ("in-sample", "development corpus", "held-out split")


def geomean(speedups: Iterable[float | None]) -> float:
    """exp(mean(log s)) over every entry (1.0 for an empty list)."""
    logs = [math.log(float(s)) if isinstance(s, (int, float)) and not math.isnan(s) and s > 0 else 0.0 for s in speedups]
    return math.exp(sum(logs) / len(logs)) if logs else 1.0


def summary(speedups: Iterable[float | None], label: str) -> dict[str, Any]:
    """The geomean (rounded to 3 places, as every result file has it), the number of kernels it counts and their label."""
    if label not in LABELS:
        raise ValueError(f"label {label!r} is not one of {', '.join(LABELS)}")
    values = list(speedups)
    return {"geomean": round(geomean(values), 3), "kernels": len(values), "label": label}
