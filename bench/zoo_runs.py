"""What the one-shot zoo benches share (gpu_underfill.py, gpu_zoo_bandwidth.py): their slice of the kernels (--part I/K),
a scratch folder for the MEPs, and one row per kernel, timed, a kernel's failure a row of the table and not the end of
the run."""
from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def part_of(names: list[str], part: str, prog: str) -> list[str] | None:
    """Every K-th name from the I-th (`part` is I/K); None, with a one-line message, when `part` is not I/K."""
    i, _, n = part.partition("/")
    if not (i.isdigit() and n.isdigit() and 1 <= int(i) <= int(n)):
        print(f"{prog}: --part {part}: want I/K with 1 <= I <= K", file=sys.stderr)
        return None
    return names[int(i) - 1::int(n)]


def stem_of(base: str, part: str) -> str:
    """The result files' name: BASE, or BASE_partIofK for a part."""
    return base if part == "1/1" else f"{base}_part{part.replace('/', 'of')}"


@contextmanager
def workdir(given: str, prefix: str) -> Iterator[Path]:
    """`given`, or a temporary folder removed afterwards."""
    if given:
        yield Path(given)
        return
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        yield Path(tmp)


def rows_of(names: list[str], one: Callable[[str], dict[str, Any]]) -> list[dict[str, Any]]:
    """`one(name)` for each kernel with its seconds; an exception becomes that kernel's row (`error`)."""
    rows = []
    for name in names:
        t0 = time.time()
        try:
            rows.append({**one(name), "seconds": round(time.time() - t0, 1)})
        except Exception as exc:  # noqa: BLE001 - one kernel's failure is a row of the table, not the end of the run
            rows.append({"kernel": name, "error": f"{type(exc).__name__}: {exc}"})
        print(f"{name}: {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    return rows
