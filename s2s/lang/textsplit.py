"""Splitting C expressions at top-level separators: argument lists, template arguments, products."""
from __future__ import annotations

import re
from collections.abc import Callable

_OPEN, _CLOSE = "([{", ")]}"


def matching_close(text: str, open_at: int, pair: str = "{}") -> int:
    """The index of the bracket that closes the one at `open_at` (`pair`: its opening and closing characters), -1
    when it is not closed."""
    depth = 0
    for i in range(open_at, len(text)):
        depth += {pair[0]: 1, pair[1]: -1}.get(text[i], 0)
        if depth == 0:
            return i
    return -1


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


# the preprocessor's conditional directives, one reader for the project: CONDITIONALS over a file's bytes (group 1 the
# directive, group 2 the rest of its line), conditional() on one line of text
CONDITIONALS = re.compile(rb"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b([^\n]*)", re.M)
_CONDITIONAL_LINE = re.compile(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b(.*)$")
OPENING = ("if", "ifdef", "ifndef")


def conditional(line: str) -> tuple[str, str] | None:
    """(directive, the rest of the line) where `line` is a conditional directive (`#if`, `# ifdef X`, `#endif`, ...)."""
    m = _CONDITIONAL_LINE.match(line)
    return (m.group(1), m.group(2)) if m else None
_DEFINED = re.compile(r"^\s*!?\s*defined\s*\(?\s*([A-Za-z_]\w*)\s*\)?\s*$")


def _branch_taken(word: str, cond: str, defined: Callable[[str], bool | None]) -> bool | None:
    cond = re.sub(r"//.*|/\*.*?\*/", "", cond).strip()
    if word in {"ifdef", "ifndef"}:
        known = defined(cond.split()[0]) if cond.split() else None
        return None if known is None else (known if word == "ifdef" else not known)
    if re.fullmatch(r"\d+", cond):
        return cond != "0"
    m = _DEFINED.match(cond)
    if m:
        known = defined(m.group(1))
        return None if known is None else (known != cond.lstrip().startswith("!"))
    return None


def blank_directives_in_lists(data: bytes, defined: Callable[[str], bool | None] | None = None) -> bytes:
    """Preprocessor conditionals inside a parenthesised list (a kernel's parameters, a launch's arguments) read as
    the one branch that is active, byte offsets kept: the directive lines and the other branches become spaces.
    `defined(NAME)` says whether a macro is defined (None: unknown); without it no macro is defined, as in a build
    without -D flags. A condition that cannot be decided keeps its first branch."""
    if b"#" not in data:
        return data
    is_defined = defined or (lambda _name: False)
    out = bytearray(data)
    stack: list[tuple[bool, bool]] = []  # per open group: (this branch active, some branch already taken)
    for m in CONDITIONALS.finditer(data):
        if _paren_depth(data, m.start()) <= 0 and not stack:
            continue
        word, cond = m.group(1).decode(), m.group(2).decode("utf-8", "replace")
        if word in {"if", "ifdef", "ifndef"}:
            taken = _branch_taken(word, cond, is_defined)
            active = True if taken is None else taken
            stack.append((active, active))
        elif word == "elif" and stack:
            taken = _branch_taken("if", cond, is_defined)
            active = not stack[-1][1] and (True if taken is None else taken)
            stack[-1] = (active, stack[-1][1] or active)
        elif word == "else" and stack:
            stack[-1] = (not stack[-1][1], True)
        elif word == "endif" and stack:
            stack.pop()
        end = data.find(b"\n", m.start())
        end = len(data) if end < 0 else end
        out[m.start():end] = _spaces(data[m.start():end])
        if stack and not all(a for a, _ in stack):
            nxt = CONDITIONALS.search(data, end)
            stop = nxt.start() if nxt else len(data)
            out[end:stop] = _spaces(data[end:stop])
    return bytes(out)


def _spaces(chunk: bytes) -> bytes:
    return bytes(c if c in b"\r\n" else 32 for c in chunk)


def _paren_depth(data: bytes, offset: int) -> int:
    """Open parentheses before `offset` on the statement it belongs to (back to the last `;`, `{` or `}`)."""
    start = max(data.rfind(b";", 0, offset), data.rfind(b"{", 0, offset), data.rfind(b"}", 0, offset)) + 1
    # comments, strings and whole preprocessor lines (a #define continued over lines included) hold no list
    chunk = re.sub(rb"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|^[ \t]*#(?:[^\n]*\\\r?\n)*[^\n]*", b"",
                   data[start:offset], flags=re.S | re.M)
    return chunk.count(b"(") - chunk.count(b")")
