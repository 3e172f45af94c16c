"""The journal of an in-place change: written beside the backup before the first file of the user's tree is
touched, removed once the change is kept or rolled back. One left behind means the change was interrupted
(kill -9, power loss); `pending` finds it and `restore` puts the backed-up files back.

    <backups>/<stamp>/journal.json   {"tree": ..., "files": [relative paths], "written": {path: sha256 of what s2s
                                      wrote}, "sessions": [[id, start time]], "mep": ..., "pid": ..., "started": ...}
    <backups>/<stamp>/files/<rel>    the original bytes

A journal is data: `restore` writes only inside the tree it is allowed (the MEP's), only the journal's relative paths
that stay inside that tree, only from backups inside the journal's own directory; it first ends the sessions of the
build and test commands the interrupted run started, and overwrites only a file that holds what the journal records s2s
wrote there (a file the user changed since, or one without that record, is kept).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from .errors import UserError
from .fsutil import atomic_write

JOURNAL = "journal.json"


@dataclass(frozen=True)
class Journal:
    dir: Path
    tree: Path
    files: tuple[str, ...]
    written: dict[str, str] = field(default_factory=dict)  # relative path -> sha256 of the bytes s2s wrote there
    sessions: tuple[tuple[int, float], ...] = ()  # (session id, start time) of each command the change ran
    mep: str | None = None
    markers: tuple[str, ...] = ()  # each command's S2S_RUN_ID (s2s.base.procs): its processes that left the session

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


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _write(j: Journal) -> None:
    atomic_write(j.path, json.dumps({"tree": str(j.tree), "files": list(j.files), "written": j.written,
                                     "sessions": [list(s) for s in j.sessions], "markers": list(j.markers),
                                     "mep": j.mep, "pid": os.getpid(), "started": time.time()}, indent=1).encode())


def begin(backup: Path, tree: Path, originals: dict[str, bytes], new: dict[str, bytes] | None = None,
          mep: Path | None = None) -> Journal:
    """Back up `originals` (relative path -> bytes) and write the journal, in that order. `new`: what is about to
    be written (its hashes are kept, so that a restore can tell the user's later edits from ours)."""
    for rel, data in originals.items():
        dest = backup / "files" / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(dest, data)
    j = Journal(backup, Path(tree), tuple(originals), {rel: _sha(data) for rel, data in (new or {}).items()},
                mep=str(mep) if mep else None)
    _write(j)
    return j


def add_session(j: Journal, sid: int, marker: str = "") -> Journal:
    """Record the session a build or test command was just started in, and its marker; the journal on disk says so
    before it runs on."""
    from .sessions import start_time

    j2 = Journal(j.dir, j.tree, j.files, j.written, j.sessions + ((sid, start_time(sid) or time.time()),), j.mep,
                 j.markers + ((marker,) if marker else ()))
    _write(j2)
    return j2


def end(j: Journal, *, keep_backup: bool) -> None:
    j.path.unlink(missing_ok=True)
    if not keep_backup:
        import shutil

        shutil.rmtree(j.dir, ignore_errors=True)


def _parse(path: Path) -> Journal:
    raw = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(raw, dict) or not isinstance(raw["tree"], str) or not isinstance(raw["files"], list):
        raise TypeError("journal")
    written = raw.get("written") or {}
    if not isinstance(written, dict):
        raise TypeError("written")
    sessions = tuple((int(s[0]), float(s[1])) for s in raw.get("sessions") or [])
    markers = tuple(str(m) for m in raw.get("markers") or [] if re.fullmatch(r"\d+\.\d+\.[0-9a-f]{8}", str(m)))
    mep = raw.get("mep")
    return Journal(path.parent, Path(raw["tree"]), tuple(str(f) for f in raw["files"]),
                   {str(k): str(v) for k, v in written.items()}, sessions, str(mep) if mep else None, markers)


def pending(backups: Path) -> list[Journal]:
    out = []
    for path in sorted(Path(backups).glob(f"*/{JOURNAL}")):
        try:
            out.append(_parse(path))
        except OSError as exc:  # the place, not the journal: it is kept, and so is the advice to finish the restore
            raise UserError(f"cannot read the journal of an interrupted in-place reintegration ({exc.strerror or exc})",
                            file=str(path), hint="make it readable, then run --restore") from None
        except (ValueError, KeyError, TypeError, IndexError):
            raise UserError("unreadable journal of an interrupted in-place reintegration", file=str(path),
                            hint=f"restore the files under {path.parent / 'files'} by hand, then delete {path}") from None
    return out


def _checked(j: Journal, trees: list[Path]) -> list[tuple[str, Path, Path]]:
    """(relative path, file in the tree, its backup) of each journal entry; a UserError, before anything is written,
    when the journal's tree is not one of `trees`, an entry leads outside it, or a backup is missing."""
    from .paths import contained

    tree = j.tree.resolve()
    if tree not in [t.resolve() for t in trees]:
        raise UserError(f"the journal names the tree {j.tree}, not this MEP's application tree "
                        f"({', '.join(str(t) for t in trees)}); nothing was restored", file=str(j.path),
                        hint=f"restore the files under {j.dir / 'files'} by hand if they are yours, then delete {j.path}")
    out = []
    for rel in j.files:
        target = contained(rel, tree, entry="files", source=j.path, where="the journal's tree")
        backup = contained(rel, j.dir / "files", entry="files", source=j.path, where="the journal's backup")
        if not backup.is_file():
            raise UserError(f"the backup of {rel} is missing ({backup}); nothing was restored", file=str(j.path),
                            hint=f"check {tree / rel} by hand, then delete {j.path}")
        if os.path.lexists(target) and not target.is_file():  # a directory, a FIFO: s2s never wrote one in place
            raise UserError(f"files = {rel!r}: {target} is not a regular file; nothing was restored", file=str(j.path),
                            hint=f"restore the files under {j.dir / 'files'} by hand if they are yours, then delete {j.path}")
        out.append((rel, target, backup))
    return out


def restore(j: Journal, trees: list[Path]) -> list[str]:
    """End the recorded sessions, then write every backed-up file back (through symlinks: a symlinked source stays a
    symlink) unless the user changed it after s2s wrote it; the journal goes. One line per file says what happened."""
    from .procs import kill_marked
    from .sessions import end_session

    entries = _checked(j, trees)
    for sid, started in j.sessions:
        if not end_session(sid, started):
            raise UserError(f"processes of session {sid}, started by the interrupted reintegration, are still running; "
                            "nothing was restored", file=str(j.path), hint=f"end them (kill -9 -- -{sid}), then run --restore again")
    for marker in j.markers:  # what left those sessions (setsid, a daemon) still carries its command's marker
        if not kill_marked(marker):
            raise UserError("processes started by the interrupted reintegration (outside its sessions) are still "
                            "running; nothing was restored", file=str(j.path), hint="run --restore again")
    lines = []
    for rel, target, backup in entries:
        original = backup.read_bytes()
        current = target.read_bytes() if target.is_file() else None
        ours = j.written.get(rel)
        if current == original:
            lines.append(f"{j.tree / rel} already holds the original")
        elif ours is None and current is not None:  # a journal that does not say what s2s wrote: nothing is overwritten
            lines.append(f"kept {j.tree / rel}: the journal does not record what s2s wrote there; the original is in {backup}")
        elif ours is not None and current is not None and _sha(current) != ours:
            lines.append(f"kept {j.tree / rel}: it changed after s2s wrote it (your edit?); the original is in {backup}")
        else:
            try:
                atomic_write(target, original)
            except OSError as exc:  # a full disk, a read-only tree: the journal stays, so that --restore can finish
                raise UserError(f"cannot restore {target} ({exc.strerror or exc}); the journal and its backups stay",
                                file=str(j.path), hint="free space or make the tree writable, then run --restore again") from None
            lines.append(f"restored {j.tree / rel} from {j.dir / 'files'}")
    end(j, keep_backup=True)
    return lines
