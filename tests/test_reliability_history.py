"""Issue 30: a full disk or a read-only MEP was reported as a "damaged" history, with the advice to move it away
(which discards a healthy history). SQLite's own answers, from real connections held to a full or read-only file."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from s2s.base.errors import UserError
from s2s.mep import history
from s2s.mep.history import History


def _healthy(path: Path) -> None:
    h = History(path)
    h.add("v1", 1, "pass:x", None, "sha", None)
    h.finish("v1", "ok", {"speedup": 1.5})
    h.close()


@pytest.mark.parametrize("place", ["full", "read-only"])
def test_a_full_disk_or_read_only_mep_is_not_called_damaged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            place: str) -> None:
    db = tmp_path / "history.sqlite"
    if place == "read-only":
        _healthy(db)
    real = sqlite3.connect

    def connect(path, timeout=5.0):  # type: ignore[no-untyped-def]
        if place == "read-only":
            return real(f"file:{path}?mode=ro", timeout=timeout, uri=True)
        con = real(path, timeout=timeout)
        con.execute("PRAGMA max_page_count = 1")  # the disk holds one page: SQLITE_FULL on the first table
        return con

    monkeypatch.setattr(history.sqlite3, "connect", connect)
    with pytest.raises(UserError) as err:
        h = History(db)  # a read-only history still opens (report reads it); the first write names the place
        h.add("v2", 2, "pass:y", None, "sha2", None)
    text = err.value.one_line()
    assert "damaged" not in text.replace("not damaged", "") and "move it away" not in text, text
    assert "cannot use the optimization history" in text and ("full" in text or "readonly" in text), text


def test_a_damaged_file_is_still_called_damaged(tmp_path: Path) -> None:
    db = tmp_path / "history.sqlite"
    db.write_bytes(b"not a database at all, " * 100)
    with pytest.raises(UserError) as err:
        History(db)
    assert "is damaged" in err.value.one_line()


@pytest.mark.parametrize("errno_", [13, 5])  # EACCES, EIO
def test_a_pattern_library_that_cannot_be_read_is_not_called_corrupt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                      errno_: int) -> None:
    """The pattern library's place failing (no permission, an I/O error) was "not a readable pattern library" with the
    advice to move it away, which discards a healthy library's winners."""
    import os

    from s2s.optimize.patterns import Library

    lib = tmp_path / "patterns.json"
    lib.write_text('{"schema": "s2s.patterns/1", "patterns": []}')
    real = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        if self == lib:
            raise OSError(errno_, os.strerror(errno_), str(self))
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    with pytest.raises(UserError) as err:
        Library(lib)
    text = err.value.one_line()
    assert "cannot read the pattern library" in text and os.strerror(errno_) in text and "move it away" not in text, text
    assert "--no-patterns" in text
