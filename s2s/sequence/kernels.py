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
from s2s.lang.textsplit import OPENING, conditional

_ITEM = re.compile(r"^// s2s: (?:kernel )?from .*$", re.M)


@dataclass(frozen=True)
class BodyKernels:
    text: str
    qualified: dict[str, str]  # the name a launch site writes -> the kernel's qualified name
    notes: tuple[str, ...] = ()


def _head_units(head: str) -> list[str]:
    """The header lines of an extracted file, a preprocessor conditional (`#ifdef X` ... `#endif`, nested ones in it)
    kept whole as one unit: taken line by line, an `#endif` that two conditionals end with was kept once and the
    sequence harness stopped at an unterminated `#ifdef` (an application including an optional library's header)."""
    units: list[str] = []
    group: list[str] = []
    depth = 0
    for line in head.splitlines():
        word = (conditional(line) or ("", ""))[0]
        if depth or word in OPENING:
            group.append(line)
            depth += 1 if word in OPENING else -1 if word == "endif" else 0
            if depth == 0:
                units.append("\n".join(group))
                group = []
        else:
            units.append(line)
    if group:  # unbalanced in the extracted file itself: as it was
        units.append("\n".join(group))
    return units


def merge(texts: list[str]) -> str:
    """One file from extracted files: the header lines of all (includes, flag macros) once each, then every item once."""
    head: list[str] = []
    items: list[tuple[str, str]] = []
    seen: set[str] = set()
    for text in texts:
        starts = [m.start() for m in _ITEM.finditer(text)]
        first = starts[0] if starts else len(text)
        for unit in _head_units(text[:first]):
            if unit not in head and not unit.startswith("// s2s extract:") and not unit.startswith("// translation unit:"):
                head.append(unit)
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
