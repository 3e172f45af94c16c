"""Launches hidden behind function-like macros: `#define LAUNCH(k, g, b, ...) k<<<g, b>>>(__VA_ARGS__)`.

tree-sitter sees `LAUNCH(stencil, grid, block, a, b)` as an ordinary call. The macro's own body says which
argument is the kernel and which are the grid and block, so each call of it is a launch site whose
arguments can be read and edited at the call (never inside the expansion).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from s2s.lang.textsplit import split_top_level

_CHEVRON = re.compile(r"([A-Za-z_]\w*)\s*(?:<[^<>]*>)?\s*<<<(.*?)>>>\s*\((.*?)\)", re.S)


@dataclass(frozen=True)
class LaunchMacro:
    name: str
    kernel: int  # index of the macro parameter that names the kernel
    config: tuple[str, ...]  # grid, block, shared memory, stream: a parameter index as "#2", or a fixed expression
    args_from: int  # index of the first kernel argument among the macro's parameters (-1: __VA_ARGS__ only)
    where: str


def launch_macro_of(name: str, params_text: bytes, body_text: bytes, where: str) -> LaunchMacro | None:
    """The launch macro a function-like `#define NAME(params) body` is, or None when its body launches no parameter."""
    body = body_text.decode("utf-8", "replace").replace("\\\n", " ")
    ch = _CHEVRON.search(body)
    if not ch:
        return None
    params = [p.strip() for p in params_text.decode("utf-8", "replace").split(",")]
    if ch.group(1) not in params:
        return None
    config = []
    for part in split_top_level(ch.group(2), angle=True):
        config.append(f"#{params.index(part)}" if part in params else part)
    call_args = split_top_level(ch.group(3), angle=True)
    first = next((params.index(a) for a in call_args if a in params), -1)
    if first < 0 and "__VA_ARGS__" in call_args and params and params[-1] == "...":
        first = len(params) - 1
    return LaunchMacro(name, params.index(ch.group(1)), tuple(config), first, where)
