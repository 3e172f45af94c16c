"""Kernel names from profiles: Itanium C++ demangling and name normalisation.

`demangle_name` returns the qualified function name with template arguments but
without the parameter list (``_ZN6linalg11matvec_rowsEPKfS1_Pfi`` ->
``linalg::matvec_rows``). The demangling itself is the C++ runtime's own
`abi::__cxa_demangle` (through `cxxfilt`), which reads everything compilers emit;
what is ours is taking the name out of the signature it prints, and reading a
hand-written name whose length prefix is off by one or two.

`normalize_profile_name` turns whatever a profiler prints (mangled, demangled
with return type and parameters, plain) into ``(qualified, template_args)``.
"""
from __future__ import annotations

import re

import cxxfilt

from s2s.base.errors import UserError

ANONYMOUS = "(anonymous namespace)"


def demangle_name(s: str) -> str | None:
    """Qualified name with template arguments, without parameters; None if not a mangled function name.

    ``_Z7axpby_tIfLi256EEvT_PKS0_S0_PS0_i`` -> ``axpby_t<float, 256>``.  Clone and
    vendor suffixes (``.kd``, ``.cold.1``, ``$local``) are ignored; special names
    (vtables, typeinfo, guard variables: ``_ZT...``, ``_ZG...``) are not functions.
    """
    text = re.split(r"[.$@]", s.strip(), maxsplit=1)[0]
    if not text.startswith("_Z") or len(text) < 3 or text[2] in "TG":
        return None
    signature = _runtime_demangle(text) or _repair_length(text)
    if signature is None:
        return None
    name = _strip_return_type(_strip_params(signature))
    while "> >" in name:  # older runtimes print `a<b<c> >`; profilers and sources write `a<b<c>>`
        name = name.replace("> >", ">>")
    return name or None


def _runtime_demangle(text: str) -> str | None:
    """The full signature `__cxa_demangle` prints, or None when `text` is not a valid mangled name."""
    try:
        return cxxfilt.demangle(text, external_only=False)
    except cxxfilt.InvalidName:
        return None
    except cxxfilt.LibraryNotFound:
        raise UserError("mangled kernel names need the C++ runtime's demangler, and no libstdc++ or libc++ was found",
                        hint="install libstdc++ (it comes with g++), or give a profile with demangled names") from None
    except (cxxfilt.Error, UnicodeDecodeError):
        return None


def _repair_length(text: str) -> str | None:
    """A hand-written ``_Z13matmul_naivePKf...`` (length off by one or two): the reading that demangles."""
    match = re.match(r"_Z(L?)(\d+)", text)
    if not match:
        return None
    length = int(match.group(2))
    for delta in (-1, 1, -2, 2):
        if length + delta > 0:
            found = _runtime_demangle(f"_Z{match.group(1)}{length + delta}{text[match.end():]}")
            if found is not None:
                return found
    return None


# -- normalisation of names printed by profilers ---------------------------------

_OPEN = {"(": ")", "<": ">", "[": "]", "{": "}"}
_OPERATOR_TOKEN = re.compile(
    r"operator\s*(\(\)|\[\]|<=>|<<=|>>=|<<|>>|->\*|->|<=|>=|<|>|new\[\]|delete\[\]|new|delete)"
)
_ANONYMOUS_SPELLINGS = re.compile(r"`anonymous namespace'|\{anonymous\}|<unnamed>|\(anonymous\)")
_CAST_SUFFIX = {
    "int": "", "unsigned int": "u", "unsigned": "u", "long": "l", "unsigned long": "ul",
    "long long": "ll", "unsigned long long": "ull",
}
_CAST = re.compile(r"\((bool|int|unsigned int|unsigned|long|unsigned long|long long|unsigned long long)\)\s*(-?\d+)")
_CLONE = re.compile(r"(\s*\[clone [^\]]*\])+$|\.kd$")
_TRAILING_QUALS = re.compile(r"(\s*(const|volatile|&&|&|noexcept))+$")


def _depths(text: str) -> list[int]:
    """Bracket nesting depth of each character; -1 marks the symbols of an ``operator`` token."""
    out: list[int] = []
    stack: list[str] = []
    i = 0
    while i < len(text):
        token = _operator_at(text, i)
        if token:
            out.extend([-1] * token)
            i += token
            continue
        ch = text[i]
        if ch in _OPEN:
            out.append(len(stack))
            stack.append(_OPEN[ch])
        elif ch in stack and not (ch == ">" and text[i - 1:i] == "-"):
            while stack[-1] != ch:  # drop an unbalanced '<' inside parentheses
                stack.pop()
            stack.pop()
            out.append(len(stack))
        else:
            out.append(len(stack))
        i += 1
    return out


def _operator_at(text: str, i: int) -> int:
    """Length of an ``operator<symbol>`` token starting at `i`, else 0."""
    if not text.startswith("operator", i) or (i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_")):
        return 0
    match = _OPERATOR_TOKEN.match(text, i)
    return match.end() - i if match else 0


def _strip_params(text: str) -> str:
    """Drop a trailing parameter list (and ``const``/``&`` qualifiers after it)."""
    unqualified = _TRAILING_QUALS.sub("", text)
    if not unqualified.endswith(")"):
        return text
    depth = 0
    for j in range(len(unqualified) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(unqualified[j], 0)
        if depth == 0:
            head = unqualified[:j].rstrip()
            if not head or head.endswith("operator"):
                return text
            return head
    return text


def _strip_return_type(text: str) -> str:
    """Keep what follows the last top-level space: ``void ns::k<int>`` -> ``ns::k<int>``."""
    depths = _depths(text)
    limit = len(text)
    for match in re.finditer(r"(?<![\w])operator\b", text):
        if depths[match.start()] <= 0:
            limit = match.start()  # spaces inside ``operator unsigned int`` do not count
    spaces = [i for i, ch in enumerate(text[:limit]) if ch == " " and depths[i] == 0]
    return text[spaces[-1] + 1:].lstrip("*&") if spaces else text


def _split_template_args(text: str) -> tuple[str, str]:
    """Remove every top-level ``<...>``; return the name and the last component's arguments."""
    depths = _depths(text)
    pieces: list[str] = []
    start, i, args, args_end = 0, 0, "", -1
    while i < len(text):
        if text[i] == "<" and depths[i] == 0:
            close = next((k for k in range(i + 1, len(text)) if text[k] == ">" and depths[k] == 0), -1)
            if close < 0:
                break
            pieces.append(text[start:i])
            args, args_end = text[i + 1:close], close
            start = i = close + 1
            continue
        i += 1
    pieces.append(text[start:])
    if text[args_end + 1:].strip():
        args = ""
    return "".join(pieces).strip(), args


def _normalize_args(args: str) -> str:
    text = re.sub(r"\s+", " ", args).strip()
    text = _CAST.sub(_uncast, text)
    return re.sub(r"\b(\d+)(ULL|LL|UL|U|L)\b", lambda m: m.group(1) + m.group(2).lower(), text)


def _uncast(match: re.Match[str]) -> str:
    kind, value = match.group(1), match.group(2)
    if kind == "bool":
        return {"0": "false", "1": "true"}.get(value, match.group(0))
    return value + _CAST_SUFFIX[kind]


def normalize_profile_name(name: str) -> tuple[str, str]:
    """``(qualified name without template args, template args text)`` of a profiler's kernel name.

    Accepts mangled names, demangled names with return type and parameters
    (``void linalg::matvec_rows<float>(const float*, float*, int)``), names with
    template arguments and plain names.  Template arguments are returned without
    the angle brackets (``"float, 256"``), empty when there are none.
    """
    text = _CLONE.sub("", name.strip())
    if text.startswith("_Z"):
        text = demangle_name(text) or re.split(r"[.$@]", text, maxsplit=1)[0]
    text = _ANONYMOUS_SPELLINGS.sub(ANONYMOUS, text)
    text = _strip_return_type(_strip_params(text.strip()))
    qualified, args = _split_template_args(text)
    return re.sub(r"\s+", " ", qualified), _normalize_args(args)


def split_qualified(qualified: str) -> tuple[str, ...]:
    """Scope components of a qualified name: ``a::b<c::d>::k`` -> ``("a", "b<c::d>", "k")``."""
    depths = _depths(qualified)
    parts: list[str] = []
    start = 0
    for i in range(len(qualified) - 1):
        if qualified[i:i + 2] == "::" and depths[i] == 0 and depths[i + 1] == 0 and i >= start:
            parts.append(qualified[start:i])
            start = i + 2
    parts.append(qualified[start:])
    return tuple(p for p in parts if p)


def base_name(qualified: str) -> str:
    """The unqualified name without template arguments: ``linalg::matvec_rows`` -> ``matvec_rows``."""
    name, _ = normalize_profile_name(qualified)
    parts = split_qualified(name)
    return parts[-1] if parts else name
