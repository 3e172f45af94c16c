"""Rendering a scan: a table for people, a JSON object for programs."""
from __future__ import annotations

import dataclasses
import json
from typing import Any

from rich.console import Console
from rich.table import Table

from s2s.base.records import Hotspot, Index

SCHEMA = "s2s.scan/1"


def scan_json(index: Index, spots: list[Hotspot], unmatched: list[str]) -> str:
    rank = {(h.kernel.file, h.kernel.line): (i + 1, h) for i, h in enumerate(spots)}
    kernels: list[dict[str, Any]] = []
    for k in index.kernels:
        pos, spot = rank[(k.file, k.line)]
        item = _fields(k)
        item["params"] = [_fields(p) for p in k.params]
        item.update(rank=pos, score=spot.score, score_source=spot.source, calls=spot.calls,
                    instantiations=list(spot.instantiations))
        kernels.append(item)
    kernels.sort(key=lambda d: d["rank"])
    doc = {
        "schema": SCHEMA,
        "root": index.root,
        "ranking": spots[0].source if spots else "estimate",
        "ranking_note": "static estimate (loop depth, launches inside loops): not measured time"
        if not spots or spots[0].source == "estimate" else "GPU time from the profile, in ns",
        "kernels": kernels,
        "launches": [_fields(s) for s in index.launches],
        "problems": [_fields(p) for p in index.problems],
        "limits": list(index.limits),
        "unmatched_profile_names": unmatched,
        "stats": {"files": index.files_scanned, "lines": index.lines_scanned, "seconds": round(index.seconds, 3),
                  **{k: int(v) for k, v in index.extra.items() if k in _COUNTS and k != "files"}},
    }
    return json.dumps(doc, indent=2)


def _fields(record: Any) -> dict[str, Any]:
    """A flat record's fields by name, in order (what dataclasses.asdict gives for records of plain values, without its
    deep copies: 20k kernels render in a fraction of the time)."""
    return {f.name: getattr(record, f.name) for f in dataclasses.fields(record)}


def print_scan(index: Index, spots: list[Hotspot], unmatched: list[str], console: Console) -> None:
    estimate = not spots or spots[0].source == "estimate"
    title = "Kernels ranked by " + ("a STATIC ESTIMATE (no profile given)" if estimate else f"GPU time ({spots[0].source})")
    table = Table(title=title)
    for col in ("#", "kernel", "where", "lang", "params", "launches", "score" if estimate else "GPU ms"):
        table.add_column(col)
    for i, h in enumerate(spots, 1):
        k = h.kernel
        score = f"{h.score:.0f}" if estimate else f"{h.score / 1e6:.3f}"
        params = ", ".join(p.text for p in k.params)
        tmpl = f" <{'; '.join(h.instantiations)}>" if h.instantiations else ""
        table.add_row(str(i), k.qualified + tmpl, f"{k.file}:{k.line}", k.language,
                      params if len(params) < 60 else params[:57] + "...", str(h.calls), score)
    console.print(table)
    lt = Table(title="Launch sites")
    for col in ("kernel", "where", "kind", "grid", "block", "in function", "in loop"):
        lt.add_column(col)
    for s in index.launches:
        lt.add_row(s.kernel + (f"<{s.template_args}>" if s.template_args else ""), f"{s.file}:{s.line}", s.kind,
                   s.grid, s.block, s.enclosing_function, "yes" if s.in_loop else "")
    console.print(lt)
    for p in index.problems:
        console.print(f"[yellow]problem[/] {p.file}:{p.line}:{p.column}: {p.message}", highlight=False)
    for limit in index.limits:
        console.print(f"[yellow]limit[/] {limit}", highlight=False)
    for name in unmatched:
        console.print(f"[yellow]profile[/] no source kernel matches '{name}'", highlight=False)
    counts = ", ".join(f"{index.extra[k]} {what}" for k, what in _COUNTS.items() if k in index.extra and k != "files")
    console.print(f"{index.files_scanned} files{f' ({counts})' if counts else ''}, {index.lines_scanned} lines "
                  f"in {index.seconds:.2f} s", highlight=False)


# the scan's counts (Index.extra), as the last line names them
_COUNTS = {"files": "files", "parsed": "parsed", "skipped": "skipped by the pre-filter", "cached": "from the cache",
           "unreadable": "unreadable", "jobs": "processes"}
