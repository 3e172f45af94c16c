"""Finding and reading the source files of an application tree."""
from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from s2s.base import encoding
from s2s.base.errors import UserError
from s2s.base.treefiles import read_regular

CUDA_EXTS = {".cu", ".cuh"}
HIP_EXTS = {".hip"}
OPENCL_EXTS = {".cl", ".ocl", ".clh"}
HOST_EXTS = {".c", ".cc", ".cpp", ".cxx", ".c++", ".h", ".hh", ".hpp", ".hxx", ".inl", ".inc", ".ipp", ".tpp"}
SOURCE_EXTS = CUDA_EXTS | HIP_EXTS | OPENCL_EXTS | HOST_EXTS
SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache", "build", "_build",
             ".s2s-backup", "s2s-work"}


@dataclass(frozen=True)
class SourceFile:
    path: Path  # absolute
    rel: str  # relative to the tree root, with forward slashes
    data: bytes

    @cached_property
    def encoding(self) -> str:
        """"utf-8", or "latin-1" for a file that is not valid UTF-8 (`s2s.base.encoding`)."""
        return encoding.encoding_of(self.data)

    def text(self, start: int = 0, end: int | None = None) -> str:
        """The text of bytes start..end, every byte kept (decoded in the whole file's encoding)."""
        return encoding.decode(self.data[start:end], self.encoding)


def language_of(path: str | Path, data: bytes = b"") -> str:
    """The dialect a file is parsed as: "opencl", "hip", "cuda" or "cpp" (host code)."""
    ext = Path(path).suffix.lower()
    if ext in OPENCL_EXTS:
        return "opencl"
    if ext in HIP_EXTS or b"hip/hip_runtime" in data or b"hipLaunchKernelGGL" in data:
        return "hip"
    if ext in CUDA_EXTS:
        return "cuda"
    return "cpp"


def iter_source_paths(root: Path) -> Iterator[Path]:
    if root.is_file():
        yield root
        return
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("cmake-build"))
        for name in sorted(filenames):
            if Path(name).suffix.lower() in SOURCE_EXTS:
                yield Path(dirpath) / name


def walk_sources(root: Path) -> list[tuple[str, str]]:
    """(absolute path, path relative to the root) of every source file, in `iter_source_paths`' order, with strings
    and `os.scandir` instead of `Path` objects (a tree of 10k files is walked in a few milliseconds)."""
    if root.is_file():
        return [(str(root), root.name)]
    out: list[tuple[str, str]] = []
    stack: list[tuple[str, str]] = [(str(root), "")]
    while stack:
        top, rel = stack.pop()
        try:
            with os.scandir(top) as it:
                entries = list(it)
        except OSError:
            continue
        dirs, files = [], []
        for e in entries:
            try:
                if e.is_dir():
                    if e.name not in SKIP_DIRS and not e.name.startswith("cmake-build") and not e.is_symlink():
                        dirs.append(e.name)  # like os.walk: a linked directory is not entered
                elif os.path.splitext(e.name)[1].lower() in SOURCE_EXTS:
                    files.append(e.name)
            except OSError:
                continue
        for name in sorted(files):
            out.append((os.path.join(top, name), rel + name))
        stack.extend((os.path.join(top, d), rel + d + "/") for d in sorted(dirs, reverse=True))
    return out


_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.M)


def is_foreign_include(written: str, angle: bool) -> bool:
    """An `#include` of a file the walk does not list by its extension (`"kernel_files/k.cuknl"`): it may still hold
    kernels, and is scanned as part of the unit that includes it. `<vector>` and other suffix-less angle includes are
    system headers."""
    ext = posixpath.splitext(written)[1].lower()
    return ext not in SOURCE_EXTS and (bool(ext) or not angle)


def foreign_includes(data: bytes) -> tuple[tuple[str, bool], ...]:
    """(as written, angle-bracketed) of each include of `data` that `is_foreign_include`."""
    if b"include" not in data:
        return ()
    out = []
    for m in _INCLUDE.finditer(data):
        written, angle = m.group(2).decode("utf-8", "replace").strip(), m.group(1) == b"<"
        if is_foreign_include(written, angle):
            out.append((written, angle))
    return tuple(out)


def resolve_foreign(root: Path, includer: str, written: str, angle: bool, include_dirs: Iterable[str] = ()) -> str | None:
    """The tree-relative path of the file a foreign include names, or None: relative to the includer's directory (for
    `"..."`), then to each directory above it up to the tree's root (the usual `-I.`/`-I..` of a build), then to the
    tree's `include_dirs` (relative to the root: the `-I` of its compile_commands.json). A file outside the tree (after
    symlinks), in a directory the walk skips, or not a regular file is never taken."""
    if os.path.isabs(written) or not written:
        return None
    top = str(root)
    real_top = os.path.realpath(top)
    here = posixpath.dirname(includer)
    dirs = [here] if not angle else []
    while here:
        here = posixpath.dirname(here)
        dirs.append(here)
    if "" not in dirs:
        dirs.append("")
    dirs += [d for d in include_dirs if d not in dirs]
    for d in dirs:
        rel = posixpath.normpath(posixpath.join(d, written))
        if rel.startswith("../") or rel == ".." or rel == ".":
            continue
        path = os.path.join(top, rel)
        if not os.path.isfile(path):
            continue
        real = os.path.realpath(path)
        if os.path.commonpath([real, real_top]) != real_top:
            continue  # a link out of the tree
        if any(part in SKIP_DIRS for part in rel.split("/")[:-1]):
            continue
        return rel
    return None


def tree_include_dirs(root: Path) -> tuple[str, ...]:
    """The `-I` directories inside the tree of its own compile_commands.json (at the root or in build/), relative to the
    root; () without one or when it cannot be read."""
    import json
    import shlex

    for name in ("compile_commands.json", "build/compile_commands.json"):
        path = root / name
        if not path.is_file():
            continue
        try:
            entries = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            return ()
        out: list[str] = []
        for e in entries if isinstance(entries, list) else []:
            if not isinstance(e, dict):
                continue
            try:
                args = e["arguments"] if isinstance(e.get("arguments"), list) else shlex.split(str(e.get("command", "")))
            except ValueError:
                continue
            directory = Path(str(e.get("directory", root)))
            for i, a in enumerate(args):
                d = args[i + 1] if a == "-I" and i + 1 < len(args) else a[2:] if a.startswith("-I") and len(a) > 2 else ""
                if not d:
                    continue
                full = Path(os.path.normpath(directory / d if not os.path.isabs(d) else d))
                if full.is_relative_to(root):
                    rel = full.relative_to(root).as_posix()
                    if rel not in out:
                        out.append("" if rel == "." else rel)
        return tuple(out)
    return ()


def included_closure(root: Path, known: Iterable[str], includes_of: dict[str, tuple[tuple[str, bool], ...]],
                     include_dirs: Iterable[str] = ()) -> dict[str, str]:
    """{file: the file that includes it} for every file outside `known` that a file of `includes_of` (rel -> its
    foreign includes) names directly. One round: the caller reads the files found and asks again with their includes."""
    seen = set(known)
    dirs = tuple(include_dirs)
    out: dict[str, str] = {}
    for rel, incs in includes_of.items():
        for written, angle in incs:
            found = resolve_foreign(root, rel, written, angle, dirs)
            if found is not None and found not in seen:
                seen.add(found)
                out[found] = rel
    return out


def check_tree(root: str | Path) -> Path:
    path = Path(root)
    if not path.exists():
        raise UserError("no such file or directory", file=str(root), hint="give the root of the application's source tree")
    return path.resolve()


def is_binary(data: bytes) -> bool:
    return b"\x00" in data[:8192]


def read_source(path: Path, root: Path) -> tuple[SourceFile | None, str]:
    """The file, or None and why it was skipped (binary, unreadable, not a regular file, too large: `read_regular`).
    Any encoding is read (`s2s.base.encoding`)."""
    data, why, _st = read_regular(path)
    if data is None:
        return None, why
    if is_binary(data):
        return None, "binary file (NUL bytes), not parsed"
    rel = path.name if root.is_file() else path.relative_to(root).as_posix()
    return SourceFile(path=path, rel=rel, data=data), ""


def line_of(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1
