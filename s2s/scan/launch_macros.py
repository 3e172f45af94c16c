"""Launches hidden behind function-like macros: `#define LAUNCH(k, g, b, ...) k<<<g, b>>>(__VA_ARGS__)`.

tree-sitter sees `LAUNCH(stencil, grid, block, a, b)` as an ordinary call. The macro's own body says which
argument is the kernel and which are the grid and block, so each call of it is a launch site whose
arguments can be read and edited at the call (never inside the expansion).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from s2s.lang.textsplit import split_top_level

from .sources import SourceFile

_DEFINE = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)\(([^)]*)\)((?:[^\n]*\\\n)*[^\n]*)", re.M)
_CHEVRON = re.compile(r"([A-Za-z_]\w*)\s*(?:<[^<>]*>)?\s*<<<(.*?)>>>\s*\((.*?)\)", re.S)


@dataclass(frozen=True)
class LaunchMacro:
    name: str
    kernel: int  # index of the macro parameter that names the kernel
    config: tuple[str, ...]  # grid, block, shared memory, stream: a parameter index as "#2", or a fixed expression
    args_from: int  # index of the first kernel argument among the macro's parameters (-1: __VA_ARGS__ only)
    where: str


def find_launch_macros(sources: list[SourceFile]) -> dict[str, LaunchMacro]:
    out: dict[str, LaunchMacro] = {}
    for source in sources:
        if b"<<<" not in source.data or b"define" not in source.data:
            continue
        for m in _DEFINE.finditer(source.data):
            body = m.group(3).decode("utf-8", "replace").replace("\\\n", " ")
            ch = _CHEVRON.search(body)
            if not ch:
                continue
            params = [p.strip() for p in m.group(2).decode().split(",")]
            if ch.group(1) not in params:
                continue
            config = []
            for part in split_top_level(ch.group(2), angle=True):
                config.append(f"#{params.index(part)}" if part in params else part)
            call_args = split_top_level(ch.group(3), angle=True)
            first = next((params.index(a) for a in call_args if a in params), -1)
            if first < 0 and "__VA_ARGS__" in call_args and params and params[-1] == "...":
                first = len(params) - 1
            line = source.data.count(b"\n", 0, m.start()) + 1
            out[m.group(1).decode()] = LaunchMacro(m.group(1).decode(), params.index(ch.group(1)), tuple(config),
                                                   first, f"{source.rel}:{line}")
    return out
