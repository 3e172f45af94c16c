"""A kernel parameter's declaration read into a `Param`: name, type, element type, pointer, const, address space."""
from __future__ import annotations

import re

from s2s.base.records import Param

from .textsplit import split_top_level

TYPE_WORDS = {"const", "volatile", "__restrict__", "__restrict", "restrict", "struct", "unsigned", "signed", "class", "enum"}
OPENCL_SPACES = {"__global": "global", "global": "global", "__local": "local", "local": "local",
                  "__constant": "constant", "constant": "constant", "__private": "private", "private": "private"}




_SIGNEDNESS = {"unsigned", "signed"}


def _integer_spelling(words: list[str]) -> str:
    """The element type's words, with an integer type spelled one way: `unsigned` stays (unsigned int is not int),
    `unsigned` alone is `unsigned int`, `signed` goes except on char, `int` after short or long goes."""
    if words[:1] == ["signed"] and words[1:] != ["char"]:
        words = words[1:] or ["int"]
    if words == ["unsigned"]:
        return "unsigned int"
    if len(words) > 1 and words[-1] == "int" and words[-2] in {"short", "long"}:
        words = words[:-1]
    return " ".join(words)


def make_param(raw: str, declarator_text: str) -> Param:
    # comments and preprocessor lines are no part of a declaration; text left of a comma at the top level belongs
    # to an inactive #ifdef branch (`#ifdef DP` double* u, `#else` float* u `#endif`), read from the last delimiter
    raw = re.sub(r"^[ \t]*#[^\n]*", " ", re.sub(r"//[^\n]*|/\*.*?\*/", " ", raw, flags=re.S), flags=re.M)
    parts = split_top_level(raw, angle=True)
    raw = " ".join((parts[-1] if parts else raw).split())
    words = re.findall(r"[A-Za-z_]\w*", raw)
    declared = re.findall(r"[A-Za-z_]\w*", re.sub(r"\[[^\]]*\]", " ", declarator_text))  # `a[N][M]` names a, not M
    name = declared[-1] if declared else (words[-1] if words else "")
    pointer = "*" in raw or "[" in raw or "&" in declarator_text
    space = next((OPENCL_SPACES[w] for w in words if w in OPENCL_SPACES), "")
    type_text = raw[: raw.rfind(name)].strip() if name and raw.rfind(name) >= 0 else raw
    if "[" in raw:
        type_text += " *"
    base_words = [w for w in re.findall(r"[A-Za-z_][\w:]*", type_text)
                  if (w not in TYPE_WORDS or w in _SIGNEDNESS) and w not in OPENCL_SPACES]
    base = _integer_spelling(base_words) or "int"
    if "<" in type_text:  # a class template's instance (`Pair<float>*`): its arguments stay ("Pair float" named nothing)
        core = re.sub(r"\b(?:const|volatile|__restrict__|__restrict|restrict|struct|class|typename)\b", " ",
                      type_text[: type_text.rfind(">") + 1])
        base = re.sub(r"\s*([<>,])\s*", lambda m: m.group(1) + (" " if m.group(1) == "," else ""), " ".join(core.split()))
    return Param(name=name, text=raw, type=type_text, base_type=base, pointer=pointer,
                 const=("const" in words and pointer and raw.find("const") < raw.find("*") if "*" in raw else "const" in words),
                 address_space=space or ("private" if not pointer else ""))
