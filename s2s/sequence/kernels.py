"""The kernels of a loop body in one file: each kernel's extracted closure (s2s.extract), merged.

    body_kernels(tree, names, index) -> BodyKernels

Every item of an extracted closure is preceded by its provenance comment (`// s2s: from FILE:LINE`, `// s2s: kernel
from FILE:LINE`): an item two kernels share (a macro, a device function, a struct) appears once, where the first kernel
needs it, and each further kernel brings only what the earlier ones did not.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from s2s.base.records import Index

_ITEM = re.compile(r"^// s2s: (?:kernel )?from .*$", re.M)


@dataclass(frozen=True)
class BodyKernels:
    text: str
    qualified: dict[str, str]  # the name a launch site writes -> the kernel's qualified name
    notes: tuple[str, ...] = ()


def merge(texts: list[str]) -> str:
    """One file from extracted files: the header lines of all (includes, flag macros) once each, then every item once."""
    head: list[str] = []
    items: list[tuple[str, str]] = []
    seen: set[str] = set()
    for text in texts:
        starts = [m.start() for m in _ITEM.finditer(text)]
        first = starts[0] if starts else len(text)
        for line in text[:first].splitlines():
            if line not in head and not line.startswith("// s2s extract:") and not line.startswith("// translation unit:"):
                head.append(line)
        for a, b in zip(starts, starts[1:] + [len(text)]):
            chunk = text[a:b]
            mark = chunk.split("\n", 1)[0]
            if mark not in seen:
                seen.add(mark)
                items.append((mark, chunk))
    body = "".join(chunk if chunk.endswith("\n") else chunk + "\n" for _m, chunk in items)
    return "// s2s sequence: the kernels of the loop body, each with its closure (s2s extract), shared items once\n" + \
        "\n".join(head) + "\n" + body


def body_kernels(tree: Path, names: list[str], index: Index) -> BodyKernels:
    from s2s.extract.extract import extract

    texts: list[str] = []
    qualified: dict[str, str] = {}
    notes: list[str] = []
    for name in names:
        ex = extract(tree, name, index=index)
        texts.append(ex.text)
        qualified[name] = ex.kernel.qualified
        notes += [f"{name}: {n}" for n in ex.notes]
    return BodyKernels(text=merge(texts), qualified=qualified, notes=tuple(notes))
