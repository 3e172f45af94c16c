"""The scan's persistent cache: per-file results keyed by content hash and the tool's version.

Two files per scanned tree under `$S2S_CACHE_DIR`, else `$XDG_CACHE_HOME/s2s`, else `~/.cache/s2s` (delete them
at will):

* `ROOT.index`: by path, the size, mtime, inode change time and inode a file's sha256 was taken at (so an unchanged
  rescan reads no file, and a file renamed over another or rewritten with its size and mtime put back is read again;
  a file changed less than two seconds before a scan is hashed again next time, as git does with racy entries) and its
  lines; by a key over that hash, the file's path, language and the macros it can see, the file's `FileResult`;
  and the digest of the whole tree's (path, hash) list with the answer it gave, so an unchanged tree is answered
  from this file alone.
* `ROOT.preambles`: by content hash, each file's `Preamble`, read only when some file changed.

Writes are atomic (a temporary file renamed over the old one), so concurrent scans never see half a file: the last
one wins, and every entry in either is right for its key. A file that cannot be read back is a one-line warning and
a full rescan. Only the records of `s2s` and plain containers are unpickled.
"""
from __future__ import annotations

import hashlib
import io
import os
import pickle
import tempfile
import time
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

FORMAT = "s2s-scan-cache/2"
_ALLOWED = {
    ("s2s.base.records", "Kernel"), ("s2s.base.records", "LaunchSite"), ("s2s.base.records", "ParseProblem"),
    ("s2s.base.records", "Param"), ("s2s.scan.preamble", "Preamble"), ("s2s.scan.preamble", "Define"),
    ("s2s.scan.launch_macros", "LaunchMacro"), ("s2s.scan.parallel", "FileResult"), ("builtins", "frozenset"),
    ("builtins", "set"),
}
RACY_SECONDS = 2.0


def default_cache_dir() -> Path:
    env = os.environ.get("S2S_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "s2s"


@cache
def tool_version() -> str:
    """Changes whenever the scan could give another answer: the parser and grammar versions, the queries, and the code
    of the scan and language layers."""
    import importlib.metadata as md

    import s2s
    from s2s.base.resources import grammars_dir

    h = hashlib.sha256(FORMAT.encode())
    for dist in ("tree-sitter", "tree-sitter-cuda"):
        try:
            h.update(f"{dist}={md.version(dist)};".encode())
        except md.PackageNotFoundError:
            h.update(f"{dist}=?;".encode())
    pkg = Path(s2s.__file__).parent
    for path in sorted([*(pkg / "scan").glob("*.py"), *(pkg / "lang").glob("*.py"), *grammars_dir().glob("*.scm"),
                        pkg / "base" / "records.py"]):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:32]


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in _ALLOWED:
            raise pickle.UnpicklingError(f"unexpected {module}.{name}")
        return super().find_class(module, name)


@dataclass
class TreeAnswer:
    """What the whole tree gave last time, for an unchanged rescan: each file's result key ("" where the pre-filter
    skipped it) and the tree-wide limits."""
    digest: str = ""
    keys: dict[str, str] = field(default_factory=dict)
    limits: tuple[str, ...] = ()


@dataclass
class Pack:
    stats: dict[str, tuple[int, int, str, int, tuple[int, int]]] = field(default_factory=dict)  # rel -> (size, mtime_ns, sha256, lines, stamp)
    results: dict[str, Any] = field(default_factory=dict)  # result key -> FileResult
    answer: TreeAnswer = field(default_factory=TreeAnswer)
    preambles: dict[str, Any] = field(default_factory=dict)  # sha256 -> Preamble
    foreign: dict[str, Any] = field(default_factory=dict)  # sha256 -> includes of files the walk does not list


def file_stamp(st: os.stat_result) -> tuple[int, int]:
    """(inode change time, inode number): with the size and mtime, what says a file is unchanged without reading it.
    A file renamed over another or rewritten with its old size and mtime put back (`touch -r`) has a new ctime or
    inode (no program can set the ctime back), as git's index knows; a chmod also changes the ctime and costs one
    re-read."""
    return st.st_ctime_ns, st.st_ino


class ScanCache:
    def __init__(self, directory: Path, root: Path) -> None:
        self.dir = directory / "scan"
        stem = hashlib.sha256(str(root).encode()).hexdigest()[:24]
        self.index_path = self.dir / f"{stem}.index"
        self.preambles_path = self.dir / f"{stem}.preambles"
        self.root = root
        self.warnings: list[str] = []
        self.old = Pack()
        self.new = Pack()
        self.started = time.time()
        self._preambles_loaded = False

    # -- reading -------------------------------------------------------------------------------
    def load(self) -> None:
        doc = self._read(self.index_path)
        if doc is None:
            return
        try:
            stats, results, answer = doc["stats"], doc["results"], doc["answer"]
            digest, keys, limits = answer
            if not (isinstance(stats, dict) and isinstance(results, dict) and isinstance(keys, dict)):
                raise ValueError("malformed")
        except (KeyError, TypeError, ValueError) as exc:
            self._damaged(self.index_path, exc)
            return
        foreign = doc.get("foreign", {})
        self.old = Pack(stats, results, TreeAnswer(digest, keys, tuple(limits)),
                        foreign=foreign if isinstance(foreign, dict) else {})

    def preambles(self) -> dict[str, Any]:
        """The cached preambles (read on first use: an unchanged tree never needs them)."""
        if not self._preambles_loaded:
            self._preambles_loaded = True
            doc = self._read(self.preambles_path)
            if doc is not None and isinstance(doc.get("preambles"), dict):
                self.old.preambles = doc["preambles"]
            elif doc is not None:
                self._damaged(self.preambles_path, ValueError("malformed"))
        return self.old.preambles

    def _read(self, path: Path) -> dict[str, Any] | None:
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            self.warnings.append(f"scan cache {path} unreadable ({exc.strerror}); scanning without it")
            return None
        try:
            doc = _Unpickler(io.BytesIO(raw)).load()
            if not isinstance(doc, dict) or doc.get("format") != FORMAT:
                raise ValueError("not a scan cache")
        except Exception as exc:  # noqa: BLE001 - any damage to the file is the same to the user: rescan
            self._damaged(path, exc)
            return None
        if doc.get("version") != tool_version() or doc.get("root") != str(self.root):
            return None  # another version of s2s wrote it: nothing in it applies
        return doc

    def _damaged(self, path: Path, exc: BaseException) -> None:
        if not any("damaged" in w for w in self.warnings):  # one line, however many of its files are hurt
            self.warnings.append(f"scan cache {path} is damaged ({type(exc).__name__}); rescanning every file")

    def known(self, rel: str, size: int, mtime_ns: int, stamp: tuple[int, int]) -> tuple[str, int] | None:
        """(sha256, lines) recorded for this path, if its size, mtime and `stamp` (inode change time and inode number,
        `file_stamp`) are unchanged."""
        entry = self.old.stats.get(rel)
        if entry is None or len(entry) != 5 or entry[0] != size or entry[1] != mtime_ns or entry[4] != stamp:
            return None
        return entry[2], entry[3]

    # -- writing -------------------------------------------------------------------------------
    def record(self, rel: str, size: int, mtime_ns: int, sha: str, lines: int, stamp: tuple[int, int]) -> None:
        """Remember the hash of this path at this size and mtime, unless the file changed so recently that another
        write in the same clock tick could keep both (it is hashed again next time, as git does with racy entries)."""
        if self.started - mtime_ns / 1e9 >= RACY_SECONDS:
            self.new.stats[rel] = (size, mtime_ns, sha, lines, stamp)

    def save(self) -> None:
        """Write what changed: the index when any entry did, the preambles when a new one was read."""
        new, old = self.new, self.old
        if new.stats != old.stats or new.results.keys() != old.results.keys() or new.answer != old.answer \
                or new.foreign != old.foreign:
            answer = (new.answer.digest, new.answer.keys, list(new.answer.limits))
            self._write(self.index_path, {"stats": new.stats, "results": new.results, "answer": answer,
                                          "foreign": new.foreign})
        if new.preambles and new.preambles.keys() != self.preambles().keys():
            self._write(self.preambles_path, {"preambles": new.preambles})

    def _write(self, path: Path, body: dict[str, Any]) -> None:
        doc = {"format": FORMAT, "version": tool_version(), "root": str(self.root), **body}
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=f".{path.name}-", suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as fh:
                    pickle.dump(doc, fh, protocol=pickle.HIGHEST_PROTOCOL)
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as exc:
            self.warnings.append(f"scan cache {path} not written ({exc.strerror})")
