"""Finding and reading the source files of an application tree."""
from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from s2s.base.errors import UserError

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


def check_tree(root: str | Path) -> Path:
    path = Path(root)
    if not path.exists():
        raise UserError("no such file or directory", file=str(root), hint="give the root of the application's source tree")
    return path.resolve()


def is_binary(data: bytes) -> bool:
    return b"\x00" in data[:8192]


def read_source(path: Path, root: Path) -> tuple[SourceFile | None, str]:
    """The file, or None and why it was skipped (binary, not UTF-8, unreadable)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        return None, f"unreadable: {exc.strerror}"
    if is_binary(data):
        return None, "binary file (NUL bytes), not parsed"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        return None, f"not valid UTF-8 at line {line}, byte {exc.start}; not parsed"
    rel = path.name if root.is_file() else path.relative_to(root).as_posix()
    return SourceFile(path=path, rel=rel, data=data), ""


def line_of(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1
