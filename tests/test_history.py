"""The history store: an older file gains the captured-data columns when opened, and a variant that
failed on the application's captured data is never the best."""
from __future__ import annotations

import sqlite3
from pathlib import Path

from s2s.mep.history import ADDED_COLUMNS, History

OLD_SCHEMA = """
CREATE TABLE candidates (
    id TEXT PRIMARY KEY, round INTEGER NOT NULL, origin TEXT NOT NULL, parent TEXT, source_sha TEXT NOT NULL,
    launch TEXT, status TEXT NOT NULL, speedup REAL, ref_us REAL, var_us REAL, build_log TEXT,
    repairs INTEGER DEFAULT 0, result TEXT, created REAL NOT NULL, finished REAL
);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO candidates (id, round, origin, source_sha, status, speedup, created)
    VALUES ('vfast', 1, 'pass:a', 'a', 'ok', 3.0, 1.0), ('vslow', 1, 'pass:b', 'b', 'ok', 1.5, 2.0);
"""


def _old_file(path: Path) -> Path:
    db = sqlite3.connect(path)
    db.executescript(OLD_SCHEMA)
    db.commit()
    db.close()
    return path


def test_an_older_history_gains_the_columns_and_keeps_its_rows(tmp_path: Path) -> None:
    path = _old_file(tmp_path / "history.sqlite")
    hist = History(path)
    rows = {r.id: r for r in hist.rows()}
    hist.close()
    assert set(rows) == {"vfast", "vslow"} and all(r.captured is None and r.status == "ok" for r in rows.values())
    columns = {r[1] for r in sqlite3.connect(path).execute("PRAGMA table_info(candidates)")}
    assert {name for name, _ in ADDED_COLUMNS} <= columns
    History(path).close()  # opening again changes nothing


def test_a_variant_that_failed_on_captured_data_is_never_the_best(tmp_path: Path) -> None:
    hist = History(_old_file(tmp_path / "history.sqlite"))
    assert hist.best().id == "vfast"  # type: ignore[union-attr]
    hist.mark_captured("vfast", "wrong-output", "k1", {"message": "y: captured input set: 9 values differ"})
    hist.mark_captured("vslow", "ok", "k1", {"message": ""})
    hist.close()
    hist = History(tmp_path / "history.sqlite")  # recorded, not held in memory
    fast = hist.get("vfast")
    assert fast is not None and fast.status == "ok" and fast.failed_on_capture and fast.captured_key == "k1"
    assert fast.captured_result == {"message": "y: captured input set: 9 values differ"}
    assert hist.best().id == "vslow"  # type: ignore[union-attr]
    hist.mark_captured("vslow", "runtime-failed", "k1", {"message": "crashed"})
    assert hist.best() is None
    hist.close()
