"""Resuming after kill -9: candidates the history holds as `pending` (written and registered, never evaluated)
go back into the first round, each once, under its own id."""
from __future__ import annotations

from pathlib import Path

from s2s.mep.history import History
from s2s.mep.variant import Variant

from .candidate import Candidate, LaunchOverride


def _dim3(v: object) -> tuple[int, int, int]:
    xs = [int(x) for x in v] if isinstance(v, list) else [1]  # type: ignore[union-attr]
    xs = (xs + [1, 1])[:3]
    return xs[0], xs[1], xs[2]


def pending_candidates(history: History, mep_dir: Path, kernel_file: str) -> list[Candidate]:
    """The pending rows as candidates; a row whose variant is gone or altered is closed as failed (not left pending)."""
    out = []
    for row in history.rows():
        if row.status != "pending":
            continue
        vdir = Path(mep_dir) / "variants" / row.id
        try:
            source = (vdir / kernel_file).read_bytes()
            meta = Variant.read(vdir)
        except Exception:  # noqa: BLE001 - any damage: the row is closed below
            source, meta = b"", Variant()
        launch = None
        if row.launch:
            launch = LaunchOverride(_dim3(row.launch.get("grid")), _dim3(row.launch.get("block")),
                                    int(row.launch.get("shared_mem") or 0))
        cand = Candidate(source, row.origin, row.parent, launch, meta.note, meta.launch_rules)
        if source and cand.id == row.id:
            out.append(cand)
        else:
            history.finish(row.id, "compile-failed", {"messages": ["the variant's files were lost when an earlier run was "
                                                                   "interrupted"]})
    return out


def with_pending(pending: list[Candidate], fresh: list[Candidate]) -> list[Candidate]:
    """The pending candidates first, then the fresh ones, each id once."""
    seen: set[str] = set()
    out = []
    for c in [*pending, *fresh]:
        if c.id not in seen:
            seen.add(c.id)
            out.append(c)
    return out
