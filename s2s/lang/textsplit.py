"""Splitting C expressions at top-level separators: argument lists, template arguments, products."""
from __future__ import annotations

_OPEN, _CLOSE = "([{", ")]}"


def split_top_level(text: str, sep: str = ",", angle: bool = False) -> list[str]:
    """`f(a, b), c[1, 2], d` -> ["f(a, b)", "c[1, 2]", "d"]; with `angle`, `<...>` nests too (template arguments)."""
    opens, closes = (_OPEN + "<", _CLOSE + ">") if angle else (_OPEN, _CLOSE)
    parts: list[str] = []
    depth, cur = 0, ""
    for c in text:
        if c in opens:
            depth += 1
        elif c in closes:
            depth -= 1
        if c == sep and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += c
    if cur.strip():
        parts.append(cur.strip())
    return parts
