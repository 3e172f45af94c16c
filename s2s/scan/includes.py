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
            for written, resolved, angle in self.includes(path, include_dirs):
                if resolved is None:
                    line = f"#include <{written}>" if angle else f'#include "{written}"'
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
