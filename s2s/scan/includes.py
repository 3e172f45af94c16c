"""The include graph of a tree: which file pulls in which, resolved the way a compiler would."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from .sources import SourceFile

_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.M)


@dataclass
class IncludeGraph:
    files: dict[Path, SourceFile]
    by_name: dict[str, list[Path]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for path in self.files:
            self.by_name.setdefault(path.name, []).append(path)

    def includes(self, path: Path, include_dirs: list[Path]) -> list[tuple[str, Path | None, bool]]:
        """(as written, resolved file or None, angle-bracketed) for each #include of a file, in order."""
        source = self.files.get(path)
        if source is None:
            return []
        out: list[tuple[str, Path | None, bool]] = []
        for m in _INCLUDE.finditer(source.data):
            written = m.group(2).decode("utf-8", "replace").strip()
            angle = m.group(1) == b"<"
            out.append((written, self.resolve(written, path, include_dirs, angle), angle))
        return out

    def include_offsets(self, path: Path) -> list[int]:
        source = self.files.get(path)
        return [m.start() for m in _INCLUDE.finditer(source.data)] if source is not None else []

    def resolve(self, written: str, includer: Path, include_dirs: list[Path], angle: bool) -> Path | None:
        candidates = ([] if angle else [includer.parent]) + include_dirs
        for d in candidates:
            p = Path(os.path.normpath(d / written))  # normpath, not resolve(): no system call per lookup
            if p in self.files:
                return p
            if ".." in written or p.is_symlink():
                p = p.resolve()
                if p in self.files:
                    return p
        if angle:
            return None
        # headers that only a Makefile's -I knows: match by trailing path inside the tree
        tail = Path(written).parts
        matches = [p for p in self.by_name.get(Path(written).name, []) if p.parts[-len(tail):] == tail]
        return matches[0] if len(matches) == 1 else None

    def unit_order(self, unit: Path, include_dirs: list[Path]) -> tuple[list[Path], list[str]]:
        """Files of a translation unit in the order their text appears, and its external #includes."""
        order: list[Path] = []
        external: list[str] = []
        seen: set[Path] = set()

        def visit(path: Path) -> None:
            if path in seen:
                return
            seen.add(path)
            source = self.files[path]
            for (written, resolved, angle), at in zip(self.includes(path, include_dirs), self.include_offsets(path)):
                if resolved is None:
                    line = f"#include <{written}>" if angle else f'#include "{written}"'
                    guards = conditional_context(source.data, at)
                    if guards:  # `#ifdef USE_MPI` / `#include <mpi.h>`: the include keeps its condition
                        line = "\n".join([*guards, line, *["#endif"] * sum(g.lstrip("# \t").startswith("if") for g in guards)])
                    if line not in external:
                        external.append(line)
                else:
                    visit(resolved)
            order.append(path)

        visit(unit)
        return order, external

    def includers(self, target: Path) -> list[Path]:
        """Files that include `target` directly (only files that name it are read)."""
        out = []
        needle = target.name.encode()
        for path, source in self.files.items():
            if needle not in source.data:
                continue
            for _written, resolved, _angle in self.includes(path, []):
                if resolved == target:
                    out.append(path)
        return out


_DIRECTIVE = re.compile(rb"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif|define)\b([^\n]*(?:\\\r?\n[^\n]*)*)", re.M)



def conditional_context(data: bytes, offset: int) -> list[str]:
    """The conditional directives open at `offset`, as lines that reproduce its branch: for an include in the #else of
    `#ifdef A ... #elif B ... #else`, ["#ifdef A", "#elif B", "#else"]; one "#endif" closes each group. A header's
    include guard (`#ifndef X_H` then `#define X_H`, opening the file) is left out."""
    stack: list[list[str]] = []
    guard = _include_guard(data)
    for m in _DIRECTIVE.finditer(data, 0, offset):
        word = m.group(1).decode()
        if word == "define" or m.start() == guard:
            continue
        line = re.sub(r"\s*(?://.*|/\*.*?\*/)\s*$", "", m.group(0).decode("utf-8", "replace").strip())
        if word in {"if", "ifdef", "ifndef"}:
            stack.append([line])
        elif word in {"elif", "else"} and stack:
            stack[-1].append(line)
        elif word == "endif" and stack:
            stack.pop()
    return [line for group in stack for line in group]


_PRAGMA_ONCE = re.compile(rb"^[ \t]*#[ \t]*pragma[ \t]+once\b", re.M)


def is_guarded(data: bytes) -> bool:
    """The header is read once a translation unit: `#pragma once` or an `#ifndef X` / `#define X` include guard."""
    return bool(_PRAGMA_ONCE.search(data)) or _include_guard(data) >= 0


def _include_guard(data: bytes) -> int:
    """Offset of the `#ifndef X` that opens a header as its include guard (followed by `#define X`), else -1."""
    it = _DIRECTIVE.finditer(data)
    first, second = next(it, None), next(it, None)
    if first is None or second is None or first.group(1) != b"ifndef" or second.group(1) != b"define":
        return -1
    if re.sub(rb"//[^\n]*|/\*.*?\*/", b"", data[:first.start()], flags=re.S).strip():
        return -1
    name = first.group(2).split()
    return first.start() if name and second.group(2).split()[:1] == name[:1] else -1
