"""s2s.base.fsutil.move_into: a staged MEP moved into its place (capture): renamed on one file system (a capture's
gigabytes were copied a second time by copytree), merged into what the place holds, copied across file systems."""
from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from s2s.base import fsutil
from s2s.base.fsutil import move_into


def _staged(root: Path) -> Path:
    (root / "capture" / "launch3").mkdir(parents=True)
    (root / "capture" / "launch3" / "a.before.npy").write_bytes(b"A" * 1000)
    (root / "mep.toml").write_text("new\n")
    return root


def test_entries_are_renamed_and_merged_into_the_place(tmp_path: Path) -> None:
    src = _staged(tmp_path / "staged")
    inode = (src / "capture" / "launch3" / "a.before.npy").stat().st_ino
    dst = tmp_path / "mep"
    (dst / "capture" / "launch1").mkdir(parents=True)
    (dst / "capture" / "launch1" / "old.npy").write_bytes(b"old")
    (dst / "mep.toml").write_text("old\n")
    (dst / "history.sqlite").write_bytes(b"kept")
    move_into(src, dst)
    assert (dst / "capture" / "launch3" / "a.before.npy").stat().st_ino == inode  # renamed, not copied
    assert (dst / "mep.toml").read_text() == "new\n" and (dst / "history.sqlite").read_bytes() == b"kept"
    assert (dst / "capture" / "launch1" / "old.npy").exists()  # merged, as copytree(dirs_exist_ok=True) does
    assert not any(p.is_file() for p in src.rglob("*"))


def test_a_file_replaces_a_directory_of_its_name(tmp_path: Path) -> None:
    src = tmp_path / "s"
    src.mkdir()
    (src / "x").write_text("file")
    (tmp_path / "d" / "x").mkdir(parents=True)
    move_into(src, tmp_path / "d")
    assert (tmp_path / "d" / "x").read_text() == "file"


def test_across_file_systems_it_copies_then_removes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = _staged(tmp_path / "staged")
    real = os.replace

    def cross(a: str | Path, b: str | Path) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")
    monkeypatch.setattr(fsutil.os, "replace", cross)
    move_into(src, tmp_path / "mep")
    monkeypatch.setattr(fsutil.os, "replace", real)
    assert (tmp_path / "mep" / "capture" / "launch3" / "a.before.npy").read_bytes() == b"A" * 1000
    assert (tmp_path / "mep" / "mep.toml").read_text() == "new\n" and not any(src.iterdir())


def test_other_errors_are_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = _staged(tmp_path / "staged")

    def full(a: str | Path, b: str | Path) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(fsutil.os, "replace", full)
    with pytest.raises(OSError, match="No space"):
        move_into(src, tmp_path / "mep")
