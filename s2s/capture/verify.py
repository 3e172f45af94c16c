"""`s2s verify MEP [--top N]`: check the verified variants again on the application's captured data.

A variant verified on the MEP's generated inputs can still be wrong on the application's own (other sizes,
real magnitudes, padding values that random data never has). Once a capture is attached (`s2s capture
... --into MEP`), verify runs the verified variants, fastest first, on it (correctness only, no timing)
and records each verdict in the history: `History.best()`, and so `s2s reintegrate --variant best`, skip
a variant that failed, and `reintegrate` refuses such a variant by id, or one not yet checked on the
capture the MEP holds now. Each verdict is one transaction: a killed verify resumes where it stopped.
A failure stays recorded when another capture is attached later: the variant was wrong on the
application's data once; a pass counts only for the capture it was checked on.
"""
from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from s2s.base.errors import UserError
from s2s.base.fsutil import atomic_write
from s2s.mep.history import History, Row
from s2s.mep.manifest import Manifest, load
from s2s.mep.measure import OK, Measurement

if TYPE_CHECKING:
    from s2s.mep.backends import BuildResult


@dataclass(frozen=True)
class Checked:
    id: str
    origin: str
    speedup: float
    verdict: str  # as a Measurement's: ok | wrong-output | ...
    message: str  # where it failed, empty when it passed
    earlier: bool  # checked before on this capture, not run again


@dataclass(frozen=True)
class Verified:
    capture: str  # [capture] from: which launch of which run
    checked: list[Checked]
    best: Row | None


def capture_key(m: Manifest, mep_dir: Path) -> str:
    """Names the data the MEP holds now: the digest `s2s capture` wrote, else (older MEPs) the index's sha256."""
    if m.capture.get("digest"):
        return str(m.capture["digest"])
    index = Path(mep_dir) / str(m.capture.get("index", "capture/index.json"))
    return hashlib.sha256(index.read_bytes()).hexdigest()[:16] if index.is_file() else ""


def refusal(row: Row, m: Manifest, mep_dir: Path) -> tuple[str, str | None] | None:
    """(message, hint) saying why `row` must not be reintegrated as far as captured data go, or None."""
    if row.failed_on_capture:
        why = (row.captured_result or {}).get("message") or row.captured
        return (f"variant {row.id} failed on the application's captured data ({row.captured}: {why}); "
                "it is never reintegrated", "--variant best takes the fastest variant that passed on it")
    if m.capture and (row.captured != OK or row.captured_key != capture_key(m, mep_dir)):
        return (f"variant {row.id} has not been checked on the application's data captured in this MEP",
                f"run `s2s verify {mep_dir}` first")
    return None


def _failure(m: Measurement) -> str:
    bad = [f"{o.name}: {o.message}" if o.message else o.name for o in m.outputs if not o.ok]
    text = " ".join(("; ".join(bad) or next(iter(m.messages), m.verdict)).split())
    return text if len(text) <= 240 else text[:237] + "..."


def verify(mep: str | Path, top: int | None = None, jobs: int | None = None,
           report: Callable[[Checked], None] | None = None) -> Verified:
    """Check the history's verified variants on the captured data, fastest first, until `top` of them passed."""
    from s2s.base.devicelock import device_lock
    from s2s.mep import evaluate as ev

    mep_dir = Path(mep)
    m = load(mep_dir)
    if not m.capture:
        raise UserError("this MEP holds no captured data", file=str(mep_dir / "mep.toml"),
                        hint="attach the application's data: s2s capture TREE --kernel NAME --build-cmd CMD --run-cmd CMD "
                             f"--into {mep_dir}")
    if not (mep_dir / "history.sqlite").is_file():
        raise UserError("this MEP has no optimization history", file=str(mep_dir), hint="run `s2s optimize` first")
    if top is not None and top < 1:
        raise UserError(f"--top {top}: at least 1")
    key = capture_key(m, mep_dir)
    jobs = max(1, jobs or os.cpu_count() or 1)
    hist = History(mep_dir / "history.sqlite")
    try:
        order = sorted((r for r in hist.rows() if r.status == OK and r.speedup), key=lambda r: -(r.speedup or 0.0))
        checked: list[Checked] = []
        built: dict[str, BuildResult] = {}
        for at, row in enumerate(order):
            if top is not None and sum(c.verdict == OK for c in checked) >= top:
                break
            if row.failed_on_capture or (row.captured == OK and row.captured_key == key):
                checked.append(Checked(row.id, row.origin, row.speedup or 0.0, str(row.captured),
                                       str((row.captured_result or {}).get("message", "")), earlier=True))
            else:
                if row.id not in built:  # this one and the next few to check, compiled in parallel
                    ids = [r.id for r in order[at:] if not r.failed_on_capture and r.captured_key != key][:jobs]
                    built.update(zip(ids, ev.build_many(mep_dir, ids, jobs=jobs)))
                with device_lock():
                    got = ev.run_built(built.pop(row.id), time=False)
                verdict, message = got.verdict, "" if got.ok else _failure(got)
                hist.mark_captured(row.id, verdict, key, {"from": m.capture.get("from", ""), "message": message,
                                                          "measurement": got.to_json()})
                checked.append(Checked(row.id, row.origin, row.speedup or 0.0, verdict, message, earlier=False))
            if report:
                report(checked[-1])
        best = hist.best()
        _write_best(mep_dir, hist, best)
    finally:
        hist.close()
    return Verified(capture=str(m.capture.get("from", "")), checked=checked, best=best)


def _write_best(mep_dir: Path, hist: History, best: Row | None) -> None:
    """variants/BEST (as `s2s optimize` writes it) names the best variant that did not fail on the captured data."""
    path = mep_dir / "variants" / "BEST"
    if best is None:
        path.unlink(missing_ok=True)
        return
    hist.set_meta("best", best.id)
    if path.parent.is_dir():
        atomic_write(path, (best.id + "\n").encode())


def hold_to_app_data(tree: str | Path, kernel: str, mep: str | Path, build_cmd: str, run_cmd: str, *, top: int = 1,
                     timeout: float = 1800.0) -> Verified:
    """Capture `kernel` from a real run of the application into the already-optimized MEP (`capture --into`), then
    check its verified variants there (`verify`): afterwards `best` names the fastest that is right on that data."""
    from s2s.capture import capture

    capture(str(tree), kernel, build_cmd, run_cmd, into=str(mep), timeout=timeout)
    return verify(mep, top=top)
