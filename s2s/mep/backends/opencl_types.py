"""OpenCL element types by name for numpy: primitives, vector types, structs and aliases (-D flags, #defines, typedefs).

Standalone (the standard library and numpy only): the OpenCL harness imports it, and `s2s run` copies it into
the MEP beside harness_opencl.py, where the MEP runs by hand or on a GPU machine without s2s or tree-sitter installed.
So it keeps its own line-wise reading of typedefs instead of s2s.lang.typedefs (the reader extraction and capture
share); tests/test_typedef_readers.py holds the two to the same answers on plain typedefs.
"""
from __future__ import annotations

import re
from typing import Any

_PRIM = {
    "float": "f4", "double": "f8", "half": "f2", "char": "i1", "signed char": "i1", "uchar": "u1", "unsigned char": "u1",
    "short": "i2", "ushort": "u2", "unsigned short": "u2", "int": "i4", "uint": "u4", "unsigned int": "u4",
    "unsigned": "u4", "long": "i8", "ulong": "u8", "unsigned long": "u8", "size_t": "u8", "ptrdiff_t": "i8",
    "intptr_t": "i8", "uintptr_t": "u8", "bool": "u1", "int8_t": "i1", "uint8_t": "u1", "int16_t": "i2",
    "uint16_t": "u2", "int32_t": "i4", "uint32_t": "u4", "int64_t": "i8", "uint64_t": "u8",
}
_VECTOR = re.compile(r"(char|uchar|short|ushort|int|uint|long|ulong|float|double|half)(2|3|4|8|16)")


class Types:
    """Element types by name: primitives, vector types, [[structs]], and aliases from -D flags,
    #defines and typedefs of the kernel file."""

    def __init__(self, flags: list[str], structs: list[dict[str, Any]], source: str) -> None:
        import numpy as np

        self.np = np
        self.aliases: dict[str, str] = {}
        for mt in re.finditer(r"^[ \t]*typedef[ \t]+([\w \t]+?)[ \t]+(\w+)[ \t]*;", source, re.M):
            self.aliases.setdefault(mt.group(2), mt.group(1))
        for mt in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+([\w \t]+?)[ \t]*$", source, re.M):
            self.aliases.setdefault(mt.group(1), mt.group(2))
        flags = list(flags)
        for i, f in enumerate(flags):  # -D flags win over the file's defaults
            d = f[2:] if f.startswith("-D") and len(f) > 2 else (flags[i + 1] if f == "-D" and i + 1 < len(flags) else None)
            if d and "=" in d:
                k, v = d.split("=", 1)
                self.aliases[k.strip()] = v.strip()
        self.structs = {s["name"].split("::")[-1]: s for s in structs}
        self._cache: dict[str, tuple[Any, int]] = {}

    def clean(self, t: str) -> str:
        t = re.sub(r"\b(const|volatile|restrict|__restrict|struct|__global|global|__local|local|__constant|constant|__private|"
                   r"private)\b", " ", str(t))
        return " ".join(t.replace("*", " ").split())

    def resolve(self, name: str) -> tuple[Any, int]:
        """(numpy dtype, OpenCL alignment) of a type name; KeyError when unknown."""
        t = self.clean(name)
        if t in self._cache:
            return self._cache[t]
        seen = set()
        while t in self.aliases and t not in _PRIM and t not in seen and t not in self.structs:
            seen.add(t)
            t = self.clean(self.aliases[t])
        np = self.np
        if t in _PRIM:
            dt = np.dtype(_PRIM[t])
            res = (dt, dt.itemsize)
        elif _VECTOR.fullmatch(t):
            mt = _VECTOR.fullmatch(t)
            assert mt
            base = np.dtype(_PRIM[mt.group(1)])
            n = int(mt.group(2))
            slots = 4 if n == 3 else n
            names = ["x", "y", "z", "w"][:n] if n <= 4 else [f"s{k:x}" for k in range(n)]
            dt = np.dtype({"names": names, "formats": [base] * n, "offsets": [k * base.itemsize for k in range(n)],
                           "itemsize": slots * base.itemsize})
            res = (dt, slots * base.itemsize)
        elif t in self.structs:
            res = self._struct(self.structs[t])
        else:
            raise KeyError(name)
        self._cache[self.clean(name)] = res
        return res

    def _struct(self, st: dict[str, Any]) -> tuple[Any, int]:
        np = self.np
        names, formats, offsets = [], [], []
        off, align = 0, 1
        for ftype, fname, flen in st["fields"]:
            dt, al = self.resolve(ftype)
            off = (off + al - 1) // al * al
            names.append(fname)
            formats.append((dt, (int(flen),)) if int(flen or 1) > 1 else dt)
            offsets.append(off)
            off += dt.itemsize * max(1, int(flen or 1))
            align = max(align, al)
        size = (off + align - 1) // align * align
        return np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": size}), align


# -- the sizes a check may vary (shared with the CUDA harness's generator, s2s/mep/backends/cuda.py) ----------
MIN_SIZE = 16  # a scalar below this is more likely a mode, a step or a radius than a size


_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/|^[ \t]*#(?![ \t]*define)(?:[^\n]*\\\n)*[^\n]*", re.S | re.M)  # and directives but #define
_RELATION = re.compile(r"(?<![<>=!-])(?:<=|>=|<|>)(?![<>=])")
_STOP = "&|;,?:{}"


def compared_names(source: str) -> set[str]:
    """Identifiers in an operand of a relational comparison anywhere in `source` (`i < n`, `row >= rows*cols`,
    `for (k = 0; k < K; ...)`): the names that bound something. An operand ends at && || ; , ? : { } or an unmatched
    parenthesis. Template brackets read as comparisons only add names (the check they guard then runs as before)."""
    text = _COMMENTS.sub(" ", source)
    names: set[str] = set()
    for mt in _RELATION.finditer(text):
        for step, start in ((-1, mt.start() - 1), (1, mt.end())):
            depth, j = 0, start
            while 0 <= j < len(text):
                ch = text[j]
                if ch in "([" if step > 0 else ch in ")]":
                    depth += 1
                elif ch in ")]" if step > 0 else ch in "([":
                    if depth == 0:
                        break
                    depth -= 1
                elif ch in _STOP and depth == 0:
                    break
                j += step
            operand = text[start + 1:j] if step < 0 else text[start:j]
            names.update(re.findall(r"[A-Za-z_]\w*", operand))
    return names


def size_scalars(params: list[dict[str, Any]], source: str | None = None) -> dict[int, int]:
    """Parameter index -> a smaller value, for every integer scalar that a buffer count depends on: its value v
    is at least MIN_SIZE and divides some buffer's count (count = n, n*n, k*n ...). A correct variant gives the
    reference's results at v // 2 too (on the same buffers and launch, which stay large enough); one specialized
    to v does not. Half keeps whatever power-of-two divisibility the reference relies on, but one.
    With the kernel's `source`, only scalars that bound something there (compared_names) are halved: a stride
    that is never compared (a leading dimension `C[m + n*ldc]`) halved under the same launch makes threads write
    each other's elements, and a reference racing with itself tells nothing about a variant."""
    counts = [int(p.get("count", 0)) for p in params
              if p.get("role") != "scalar" and isinstance(p.get("count"), int) and p.get("space") != "local"]
    bounds = compared_names(source) if source is not None else None
    out: dict[int, int] = {}
    for i, p in enumerate(params):
        v = p.get("value")
        if p.get("role") != "scalar" or isinstance(v, bool) or not isinstance(v, int) or v < MIN_SIZE:
            continue
        if bounds is not None and str(p.get("name", "")) not in bounds:
            continue
        if _is_integer_type(str(p.get("elem", ""))) and any(c >= v and c % v == 0 for c in counts):
            out[i] = v // 2
    return out


def _is_integer_type(name: str) -> bool:
    base = " ".join(name.replace("std::", "").replace("const", " ").replace("volatile", " ").split())
    if base in _PRIM:
        return _PRIM[base][0] in "iu" and base != "bool"
    return re.fullmatch(r"(unsigned |signed )?(long long|long|short)?( ?int)?", base) is not None and base != ""


PROBE_TAIL_MAX = 256 << 20


def probe_tail(params: list[dict[str, Any]], largest_bytes: int) -> int:
    """Bytes watched after each buffer by the bounds probe: enough to see a kernel read or write as far as the
    largest buffer reaches, or as n*n 8-byte elements for an integer scalar n (a matrix sized by one scalar,
    whose buffer mep.toml may give too few elements), at least 1 MiB, at most PROBE_TAIL_MAX. The n*n rule is for
    counts the static extraction or a person gave: where every buffer's count is its allocation's size in the
    application (a capture's `count_expr = "N bytes (captured)"`), it would watch up to 256 MiB after a 64 KiB vector
    for a 1-D kernel with n = 16384 (on a CPU OpenCL device, most of the reference's check: filled and read back twice
    per buffer), and the allocation already bounds what the kernel touched in the application."""
    buffers = [p for p in params if p.get("role") != "scalar" and p.get("space") != "local"]
    captured = bool(buffers) and all("(captured" in str(p.get("count_expr", "")) for p in buffers)
    squares = [] if captured else [
        int(p["value"]) ** 2 * 8 for p in params
        if p.get("role") == "scalar" and isinstance(p.get("value"), int) and not isinstance(p.get("value"), bool)
        and _is_integer_type(str(p.get("elem", ""))) and int(p["value"]) >= MIN_SIZE]
    return min(max([largest_bytes, 1 << 20, *squares]), PROBE_TAIL_MAX)
