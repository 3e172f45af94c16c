"""The optimization history of one MEP: every candidate, its edits, build log, verdict and timings.

SQLite in WAL mode, one transaction per finished evaluation, so `s2s optimize` killed at any point
(even with kill -9) resumes without losing finished work. A variant checked again on the application's
captured data (`s2s verify`) carries that verdict too; one that failed there is never the best.
"""
from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from s2s.base.errors import UserError

SCHEMA = """
CREATE TABLE IF NOT EXISTS candidates (
    id TEXT PRIMARY KEY,
    round INTEGER NOT NULL,
    origin TEXT NOT NULL,          -- "pass:register-accumulation,warp-rows{lanes=32}" | "llm:model" | "replay" | "pattern:..."
    parent TEXT,
    source_sha TEXT NOT NULL,
    launch TEXT,                   -- JSON launch override or NULL
    status TEXT NOT NULL,          -- pending | ok | wrong-output | compile-failed | runtime-failed | timed-out | duplicate
    speedup REAL,
    ref_us REAL,
    var_us REAL,
    build_log TEXT,
    repairs INTEGER DEFAULT 0,
    result TEXT,                   -- JSON of the measurement
    created REAL NOT NULL,
    finished REAL
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS llm_calls (
    id INTEGER PRIMARY KEY AUTOINCREMENT, candidate TEXT, purpose TEXT, model TEXT,
    prompt_tokens INTEGER, completion_tokens INTEGER, cost REAL, seconds REAL, created REAL
);
"""
# added after the first release; History adds them to an older file when it opens it
ADDED_COLUMNS = (
    ("captured", "TEXT"),          # verdict on the application's captured data (s2s verify), NULL: not checked
    ("captured_key", "TEXT"),      # which capture: [capture] digest of mep.toml at the check
    ("captured_result", "TEXT"),   # JSON: {from, message, measurement}
    ("predicted_us", "REAL"),      # the cost model's time for one launch when the candidate was proposed; NULL: none
    ("prediction", "TEXT"),        # JSON of that prediction: {bound, flops, dram_bytes, l1_bytes, fill, device}
)
COLUMNS = ("id, round, origin, parent, source_sha, launch, status, speedup, ref_us, var_us, repairs, result, "
           "captured, captured_key, captured_result, predicted_us, prediction")


@dataclass(frozen=True)
class Row:
    id: str
    round: int
    origin: str
    parent: str | None
    source_sha: str
    launch: dict[str, Any] | None
    status: str
    speedup: float | None
    ref_us: float | None
    var_us: float | None
    repairs: int
    result: dict[str, Any] | None
    captured: str | None = None  # verdict on the application's captured data; None: not checked
    captured_key: str | None = None
    captured_result: dict[str, Any] | None = None
    predicted_us: float | None = None  # the cost model's prediction (s2s.optimize.cost), beside the measured var_us
    prediction: dict[str, Any] | None = None

    @property
    def failed_on_capture(self) -> bool:
        return self.captured is not None and self.captured != "ok"


# SQLite's answers that mean the file itself is bad; any other (read-only, full disk, I/O, cannot open) is the place's
_DAMAGED = {11, 26}  # SQLITE_CORRUPT, SQLITE_NOTADB


def _open_error(path: Path, exc: sqlite3.DatabaseError) -> UserError:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None and code & 0xFF not in _DAMAGED:
        return UserError(f"cannot use the optimization history: {exc} (the file is not damaged; its directory or disk is "
                         "read-only, full or failing)", file=str(path),
                         hint="free space or make the MEP writable, then run again")
    return UserError(f"the optimization history is damaged ({exc})", file=str(path),
                     hint="move it away to start the history afresh; its variants/ stay usable by id")


class History:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        try:
            self.db = sqlite3.connect(self.path, timeout=30)
            if self.db.execute("PRAGMA quick_check").fetchone()[0] != "ok":
                raise sqlite3.DatabaseError("quick_check failed")
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(SCHEMA)
            self.db.commit()
            self._migrate()
        except sqlite3.DatabaseError as exc:
            raise _open_error(self.path, exc) from None

    def _migrate(self) -> None:
        """Add the columns an older history file lacks, in one transaction that a second process waits for."""
        if not self._missing_columns():
            return
        self.db.execute("BEGIN IMMEDIATE")
        try:
            for name, kind in self._missing_columns():  # again: another process may have added them meanwhile
                self.db.execute(f"ALTER TABLE candidates ADD COLUMN {name} {kind}")
            self.db.commit()
        except BaseException:
            self.db.rollback()
            raise

    def _missing_columns(self) -> list[tuple[str, str]]:
        have = {r[1] for r in self.db.execute("PRAGMA table_info(candidates)")}
        return [(name, kind) for name, kind in ADDED_COLUMNS if name not in have]

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """One transaction; a full disk or a read-only MEP is a UserError that names it, never a traceback."""
        try:
            with self.db:
                yield
        except sqlite3.DatabaseError as exc:
            raise _open_error(self.path, exc) from None

    def close(self) -> None:
        self.db.close()

    def add(self, cid: str, round_no: int, origin: str, parent: str | None, source_sha: str,
            launch: dict[str, Any] | None) -> None:
        with self._writing():
            self.db.execute(
                "INSERT OR IGNORE INTO candidates (id, round, origin, parent, source_sha, launch, status, created) "
                "VALUES (?, ?, ?, ?, ?, ?, 'pending', ?)",
                (cid, round_no, origin, parent, source_sha, json.dumps(launch) if launch else None, time.time()),
            )

    def finish(self, cid: str, status: str, result: dict[str, Any] | None = None, build_log: str = "",
               repairs: int = 0) -> None:
        r = result or {}
        with self._writing():
            self.db.execute(
                "UPDATE candidates SET status=?, speedup=?, ref_us=?, var_us=?, build_log=?, repairs=?, result=?, finished=? "
                "WHERE id=?",
                (status, r.get("speedup"), (r.get("reference") or {}).get("median_us"), (r.get("variant") or {}).get("median_us"),
                 build_log[-20000:], repairs, json.dumps(r), time.time(), cid),
            )

    def mark_captured(self, cid: str, verdict: str, key: str, result: dict[str, Any]) -> None:
        """Record how variant `cid` fared on the captured data identified by `key` (one transaction)."""
        with self._writing():
            self.db.execute("UPDATE candidates SET captured=?, captured_key=?, captured_result=? WHERE id=?",
                            (verdict, key, json.dumps(result), cid))

    def set_prediction(self, cid: str, seconds: float, detail: dict[str, Any]) -> None:
        """Record the cost model's predicted time of candidate `cid` (one transaction), kept beside its measurement."""
        with self._writing():
            self.db.execute("UPDATE candidates SET predicted_us=?, prediction=? WHERE id=?",
                            (seconds * 1e6, json.dumps(detail), cid))

    def log_llm(self, candidate: str | None, purpose: str, model: str, prompt_tokens: int, completion_tokens: int,
                cost: float, seconds: float) -> None:
        with self._writing():
            self.db.execute(
                "INSERT INTO llm_calls (candidate, purpose, model, prompt_tokens, completion_tokens, cost, seconds, created) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", (candidate, purpose, model, prompt_tokens, completion_tokens, cost, seconds, time.time()))

    def rows(self) -> list[Row]:
        cur = self.db.execute(f"SELECT {COLUMNS} FROM candidates ORDER BY created")
        return [Row(r[0], r[1], r[2], r[3], r[4], json.loads(r[5]) if r[5] else None, r[6], r[7], r[8], r[9], r[10] or 0,
                    json.loads(r[11]) if r[11] else None, r[12], r[13], json.loads(r[14]) if r[14] else None,
                    r[15], json.loads(r[16]) if r[16] else None)
                for r in cur.fetchall()]

    def get(self, cid: str) -> Row | None:
        return next((r for r in self.rows() if r.id == cid), None)

    def finished_shas(self) -> dict[str, Row]:
        """Finished candidates by source+launch fingerprint: a resumed run never evaluates them again."""
        return {r.source_sha + json.dumps(r.launch, sort_keys=True): r for r in self.rows() if r.status != "pending"}

    def best(self) -> Row | None:
        """The fastest verified variant, leaving out any that failed on the application's captured data."""
        ok = [r for r in self.rows() if r.status == "ok" and r.speedup and not r.failed_on_capture]
        return max(ok, key=lambda r: r.speedup or 0.0) if ok else None

    def set_meta(self, key: str, value: str) -> None:
        with self._writing():
            self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def llm_totals(self) -> dict[str, float]:
        row = self.db.execute("SELECT COUNT(*), COALESCE(SUM(prompt_tokens),0), COALESCE(SUM(completion_tokens),0), "
                              "COALESCE(SUM(cost),0) FROM llm_calls").fetchone()
        return {"calls": row[0], "prompt_tokens": row[1], "completion_tokens": row[2], "cost": row[3]}


def best_of(mep_dir: Path) -> Row | None:
    """The best verified variant of an MEP (opened and closed here), None when there is none or no history."""
    if not (Path(mep_dir) / "history.sqlite").is_file():
        return None
    hist = History(Path(mep_dir) / "history.sqlite")
    try:
        return hist.best()
    finally:
        hist.close()
