"""The journal of an in-place change: written beside the backup before the first file of the user's tree is
touched, removed once the change is kept or rolled back. One left behind means the change was interrupted
(kill -9, power loss); `pending` finds it and `restore` puts the backed-up files back.

    <backups>/<stamp>/journal.json   {"tree": ..., "files": [relative paths], "pid": ..., "started": ...}
    <backups>/<stamp>/files/<rel>    the original bytes
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from .errors import UserError
from .fsutil import atomic_write

JOURNAL = "journal.json"


@dataclass(frozen=True)
class Journal:
    dir: Path
    tree: Path
    files: tuple[str, ...]

    @property
    def path(self) -> Path:
        return self.dir / JOURNAL


def new_backup_dir(backups: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for n in range(1000):
        d = backups / (stamp if n == 0 else f"{stamp}-{n}")
        try:
            d.mkdir(parents=True)
            return d
        except FileExistsError:
            continue
    raise UserError("cannot create a backup directory", file=str(backups))


def begin(backup: Path, tree: Path, originals: dict[str, bytes]) -> Journal:
    """Back up `originals` (relative path -> bytes) and write the journal, in that order."""
    for rel, data in originals.items():
        dest = backup / "files" / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(dest, data)
    j = Journal(backup, Path(tree), tuple(originals))
    atomic_write(j.path, json.dumps({"tree": str(tree), "files": list(originals), "pid": os.getpid(),
                                     "started": time.time()}, indent=1).encode())
    return j


def end(j: Journal, *, keep_backup: bool) -> None:
    j.path.unlink(missing_ok=True)
    if not keep_backup:
        import shutil

        shutil.rmtree(j.dir, ignore_errors=True)


def pending(backups: Path) -> list[Journal]:
    out = []
    for path in sorted(Path(backups).glob(f"*/{JOURNAL}")):
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            out.append(Journal(path.parent, Path(raw["tree"]), tuple(str(f) for f in raw["files"])))
        except (OSError, ValueError, KeyError, TypeError):
            raise UserError("unreadable journal of an interrupted in-place reintegration", file=str(path),
                            hint=f"restore the files under {path.parent / 'files'} by hand, then delete {path}") from None
    return out


def restore(j: Journal) -> list[Path]:
    """Write every backed-up file back (through symlinks: a symlinked source stays a symlink); the journal goes."""
    done = []
    for rel in j.files:
        target = (j.tree / rel).resolve()
        atomic_write(target, (j.dir / "files" / rel).read_bytes())
        done.append(j.tree / rel)
    end(j, keep_backup=True)
    return done
