"""Structs passed by value whose fields hold device pointers: their layout and their captured data.

The capture runtime (templates/capture/runtime_cuda.h.j2) records a struct argument's bytes and, for every
pointer-aligned word that points into a device allocation, the allocation from there to its end
(`sptr ARG OFFSET BYTES INNER BASE KIND`, files argI.fOFFSET.before/after.bin). Here those words are named
after the struct's declaration in mep.toml [[structs]] (nested structs by value flattened, field names
joined with '.'), typed by the pointer's element type where the declaration gives it (else raw bytes),
and written as .npy like any buffer. One level is followed: memory reached through such a pointer that
itself holds device pointers (an array of structs of pointers) is refused with a message naming the field.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from s2s.base.errors import UserError
from s2s.lang.cexpr import ALIGNOF, SIZEOF
from s2s.lang.textsplit import matching_close
from s2s.mep.manifest import Manifest, StructSpec

POINTER = 8
MAX_NESTING = 8  # structs by value inside structs: deeper than this is a declaration loop, not data
_QUALIFIERS = re.compile(r"\b(const|volatile|restrict|__restrict__|__restrict|struct|class)\b")


@dataclass(frozen=True)
class Field:
    name: str  # "pos" or "inner.pos" or "items[2].pos"
    offset: int
    type: str  # as declared
    pointer: bool
    elem: str  # the pointee's type for pointers, else the type
    size: int


_STRUCT = re.compile(r"\b(typedef\s+)?struct\s+(?:__align__\s*\(\s*\d+\s*\)\s*)?([A-Za-z_]\w*)?\s*\{")
_DECL = re.compile(r"((?:(?:const|volatile|unsigned|signed|struct|long|short)\s+)*[A-Za-z_][\w:]*"
                   r"(?:\s+(?:long|int|short|char|double))*)\s*(.+)")
_VAR = re.compile(r"\s*(\**)\s*(?:const\s+|__restrict__\s+|restrict\s+)*([A-Za-z_]\w*)\s*(?:\[\s*(\d+)\s*\])?\s*")


def declared_structs(text: str) -> list[StructSpec]:
    """The structs declared in a kernel file, pointer fields included (`float *`): what mep.toml's [[structs]]
    leaves out. A struct with a field this reader does not understand is left out whole."""
    text = re.sub(r"//[^\n]*|/\*.*?\*/", " ", text, flags=re.S)
    out: list[StructSpec] = []
    for m in _STRUCT.finditer(text):
        end = matching_close(text, m.end() - 1)
        if end < 0:
            continue
        name = m.group(2)
        if m.group(1):  # typedef struct X { ... } Y;
            alias = re.match(r"\s*([A-Za-z_]\w*)\s*;", text[end + 1:])
            name = alias.group(1) if alias else name
        if not name:
            continue
        fields: list[tuple[str, str, int]] = []
        for decl in _data_members(text[m.end():end]).split(";"):
            decl = " ".join(decl.split())
            if not decl:
                continue
            dm = _DECL.fullmatch(decl)
            if not dm or "(" in decl or "{" in decl:
                fields = []
                break
            ftype = " ".join(dm.group(1).replace("struct ", " ").split())
            for var in dm.group(2).split(","):
                vm = _VAR.fullmatch(var)
                if not vm:
                    fields = []
                    break
                fields.append((ftype + (" " + vm.group(1) if vm.group(1) else ""), vm.group(2), int(vm.group(3) or 1)))
        if fields:
            out.append(StructSpec(name=name, fields=tuple(fields)))
    return out


def _data_members(body: str) -> str:
    """A struct's body without its member functions defined in it, its typedefs and access labels (they take no
    room); a nested type's definition is kept (the reader then leaves the struct out)."""
    body = re.sub(r"\b(?:public|private|protected)\s*:(?!:)|\btypedef\b[^;{}]*;|\busing\b[^;{}]*;", " ", body)
    at = 0
    while (open_at := body.find("{", at)) >= 0:
        start = max(body.rfind(";", 0, open_at), body.rfind("}", 0, open_at)) + 1
        close = matching_close(body, open_at)
        if close < 0 or "(" not in body[start:open_at]:
            break
        body = body[:start] + body[close + 1:]
        at = start
    return body


def with_declared(m: Manifest, kernel_text: str) -> Manifest:
    """`m` with the kernel file's own struct declarations added where [[structs]] lacks them (for layouts only)."""
    from dataclasses import replace

    have = {s.name for s in m.structs}
    return replace(m, structs=list(m.structs) + [s for s in declared_structs(kernel_text) if s.name not in have])


def _base(t: str) -> str:
    return " ".join(_QUALIFIERS.sub(" ", t).split())


def _find(m: Manifest, name: str) -> StructSpec | None:
    name = _base(name).replace("*", "").strip()
    by = {s.name: s for s in m.structs}
    return by.get(name) or next((s for s in m.structs if s.name.split("::")[-1] == name.split("::")[-1]), None)


def type_size(m: Manifest, t: str, depth: int = 0) -> tuple[int, int] | None:
    """(size, alignment) of a declared type on x86-64 / CUDA, or None when unknown."""
    t = _base(t)
    if "*" in t:
        return POINTER, POINTER
    if t in SIZEOF:
        size = SIZEOF[t]
        return size, ALIGNOF.get(t, min(size, 8))
    st = _find(m, t)
    if st is None or depth > MAX_NESTING:
        return None
    lay = layout(m, st, depth + 1)
    return (lay[1], lay[2]) if lay is not None else None


def layout(m: Manifest, st: StructSpec, depth: int = 0) -> tuple[list[Field], int, int] | None:
    """The struct's fields flattened with their byte offsets, its size and alignment; None if a field's
    type is unknown."""
    fields: list[Field] = []
    off, align = 0, 1
    for ftype, fname, flen in st.fields:
        got = type_size(m, ftype, depth)
        if got is None:
            return None
        size, al = got
        off = (off + al - 1) // al * al
        n = int(flen or 1)
        nested = _find(m, ftype) if "*" not in ftype else None
        for k in range(n):
            label = fname if n == 1 else f"{fname}[{k}]"
            at = off + k * size
            if nested is not None:
                inner = layout(m, nested, depth + 1)
                if inner is None:
                    return None
                fields += [Field(f"{label}.{f.name}", at + f.offset, f.type, f.pointer, f.elem, f.size) for f in inner[0]]
            else:
                pointer = "*" in ftype
                elem = _base(ftype.rsplit("*", 1)[0]) if pointer else _base(ftype)
                fields.append(Field(label, at, ftype, pointer, elem, size))
        off += size * n
        align = max(align, al)
    return fields, (off + align - 1) // align * align, align


def fields_of(m: Manifest, elem: str) -> list[Field] | None:
    st = _find(m, elem)
    if st is None:
        return None
    lay = layout(m, st)
    return lay[0] if lay is not None else None


def pointer_field(m: Manifest, param: str, elem: str, offset: int) -> tuple[str, str, int]:
    """(field name, element type, element size) of the pointer at `offset` of a struct of type `elem`:
    from the declaration where mep.toml has it, else `at<offset>` as raw bytes."""
    for f in fields_of(m, elem) or []:
        if f.offset == offset and f.pointer:
            got = type_size(m, f.elem) if f.elem not in {"void", ""} else None
            if got is not None:
                return f.name, f.elem, got[0]
            return f.name, "unsigned char", 1
        if f.offset == offset and not f.pointer:
            # a word that holds a device address in a field not declared as a pointer (an integer handle)
            return f.name, "unsigned char", 1
    return f"at{offset}", "unsigned char", 1


def depth_error(param: str, field: str, hits: int) -> UserError:
    """Memory reached through a struct's pointer that holds device pointers itself: past depth 1, refused."""
    return UserError(f"capture: params.{param}.{field} points to device memory that itself holds {hits} device "
                     "pointer(s) (an array of structs of pointers?); s2s capture follows pointers one level deep, "
                     "from a struct passed by value", hint="capture a kernel whose structs hold pointers to plain data")


def layout_table(m: Manifest, param: str, elem: str, size: int) -> dict[str, Any]:
    """mep.toml's description of a captured struct argument: its size and declared fields."""
    fields = fields_of(m, elem)
    entry: dict[str, Any] = {"param": param, "type": _base(elem), "size": size}
    if fields is None:
        entry["fields"] = []
        entry["note"] = "the struct's declaration is not in [[structs]]: pointers are named by their offset"
    else:
        entry["fields"] = [{"name": f.name, "offset": f.offset, "type": f.type, "pointer": f.pointer} for f in fields]
    return entry
