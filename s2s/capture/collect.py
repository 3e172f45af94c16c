"""Turning the capture runtime's dump into MEP data: one .npy per buffer before and after each recorded
launch, capture/index.json, and mep.toml updated (counts, scalars, launch configuration, roles).

The dump (written by templates/capture/runtime_*.h.j2): DIR/summary.txt (`launches N`), and per
recorded launch DIR/launch<N>/record.txt, lines `key values...`, plus argI.before.bin/argI.after.bin
and (CUDA) sym_NAME.bin.
"""
from __future__ import annotations

import hashlib
import json
import re
import struct
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from s2s.base.errors import UserError
from s2s.lang.cexpr import SIZEOF
from s2s.lang.typedefs import typedefs
from s2s.mep.manifest import FILL_IN, LaunchSpec, Manifest, ParamSpec, StructSpec, SymbolSpec

from .deduce import Unsolvable, builtin_spelling, declared_template, solve, split_args, substitute
from .npy import copy_to_npy, descr_of, same_bytes, write_npy
from .structs import depth_error, layout_table, pointer_field, with_declared

_CUDA_RUNTIME = frozenset({"cuda", "hip"})  # backends whose launches the CUDA runtime records (HIP: built for NVIDIA GPUs)
_FMT = {"float": "f", "double": "d", "char": "b", "signed char": "b", "unsigned char": "B", "uchar": "B", "short": "h",
        "unsigned short": "H", "ushort": "H", "int": "i", "unsigned int": "I", "unsigned": "I", "uint": "I", "long": "q",
        "unsigned long": "Q", "ulong": "Q", "long long": "q", "unsigned long long": "Q", "size_t": "Q", "int8_t": "b",
        "uint8_t": "B", "int16_t": "h", "uint16_t": "H", "int32_t": "i", "uint32_t": "I", "int64_t": "q", "uint64_t": "Q",
        "bool": "?", "__half": "e", "cl_half": "e", "cl_int": "i", "cl_uint": "I", "cl_float": "f", "cl_double": "d", "cl_long": "q", "cl_ulong": "Q"}


@dataclass
class Arg:
    index: int
    kind: str  # buffer | pointer | value | local | null | unset | unsized | toolarge | badmem
    words: list[str]


@dataclass
class Record:
    ordinal: int
    fields: dict[str, list[str]] = field(default_factory=dict)
    args: dict[int, Arg] = field(default_factory=dict)
    symbols: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> (esz, bytes)
    errors: list[str] = field(default_factory=list)
    exceeded: tuple[int, int] | None = None
    sptrs: list[list[str]] = field(default_factory=list)  # device pointers inside struct arguments (structs.py)
    argtypes: list[str] | None = None  # the kernel instance's parameter types, or those deduced from the arguments
    targs: list[str] | None = None  # the template arguments the launch names (`k<T, N>`), as the instance knows them
    done: bool = False
    dir: Path = Path()


def read_record(path: Path) -> Record:
    rec = Record(ordinal=int(path.parent.name.removeprefix("launch") or 0), dir=path.parent)
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        words = line.split()
        if not words:
            continue
        key = words[0]
        if key == "arg" and len(words) >= 3:
            rec.args[int(words[1])] = Arg(int(words[1]), words[2], words[3:])
        elif key == "symbol" and len(words) >= 4:
            rec.symbols[words[1]] = (int(words[2]), int(words[3]))
        elif key == "sptr" and len(words) >= 7:
            rec.sptrs.append(words[1:])
        elif key == "error":
            rec.errors.append(line[len("error "):])
        elif key == "exceeded":
            rec.exceeded = (int(words[1]), int(words[2]))
        elif key == "done":
            rec.done = True
        elif key == "argtypes":
            rec.argtypes = line[len("argtypes "):].strip().split("|") if len(words) > 1 else []
        elif key == "targs":
            rec.targs = line[len("targs "):].strip().split("|") if len(words) > 1 else []
        else:
            rec.fields[key] = words[1:]
    return rec


def _after(d: Path, stem: str) -> Path | None:
    """A region's file after the launch: STEM.after.bin, or None where the runtime found its bytes unchanged and wrote
    STEM.after.same instead (an input of gigabytes is stored once, in the dump and in the MEP)."""
    path = d / f"{stem}.after.bin"
    if not path.exists() and (d / f"{stem}.after.same").exists():
        return None
    return path


def _head(path: Path, n: int = 16 << 20) -> bytes:
    with open(path, "rb") as fh:
        return fh.read(n)


def launches_seen(dump: Path) -> int | None:
    summary = dump / "summary.txt"
    if not summary.is_file():
        return None
    for line in summary.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("launches "):
            return int(line.split()[1])
    return None


# -- element types ----------------------------------------------------------------------------------
# C's other spellings of the numbers _FMT knows: `long int`, `std::size_t`, `ptrdiff_t`, `half`
_C_INTS = {"int": "int", "unsigned int": "unsigned int", "short int": "short", "unsigned short int": "unsigned short",
           "long int": "long", "unsigned long int": "unsigned long", "long long int": "long long",
           "unsigned long long int": "unsigned long long", "char": "char", "signed char": "char",
           "unsigned char": "unsigned char"}
_OTHER_NUMBERS = {"ptrdiff_t": "int64_t", "ssize_t": "int64_t", "intptr_t": "int64_t", "uintptr_t": "uint64_t",
                  "half": "__half", "nv_half": "__half", "nv_bfloat16": "__nv_bfloat16"}


def _number_type(name: str) -> str:
    """The spelling _FMT knows for a cleaned type name, or the name unchanged."""
    name = re.sub(r"^(?:::)?std::", "", name)
    words = name.split()
    if words and set(words) <= {"unsigned", "signed", "short", "long", "int", "char"}:
        return _C_INTS.get(builtin_spelling(words), name)
    return _OTHER_NUMBERS.get(name, name)


def _clean(t: str) -> str:
    import re

    t = re.sub(r"\b(const|volatile|restrict|__restrict__|__restrict|struct|__global|global|__local|local|__constant|"
               r"constant|__private|private)\b", " ", t)
    return " ".join(t.replace("*", " ").split())


class ElemTypes:
    """Sizes and decoders of the manifest's element types, with the OpenCL harness's type table where
    numpy is there (vector types, aliases from -D and typedefs)."""

    def __init__(self, m: Manifest, mep: Path) -> None:
        self.m = m
        self.structs = {s.name.split("::")[-1]: s for s in m.structs}
        # every type each alias has over all #if branches (NPB IS: INT_TYPE is long under `#if CLASS == 'D'`, else int):
        # the captured bytes' size picks the branch built
        self.aliases = typedefs((mep / m.kernel_file).read_text(encoding="utf-8", errors="replace"), m.dialect) \
            if (mep / m.kernel_file).is_file() else {}
        self.cl_types: Any = None
        if m.backend == "opencl":
            try:
                from s2s.mep.backends.opencl_types import Types

                structs = [{"name": s.name, "fields": [list(f) for f in s.fields]} for s in m.structs]
                src = (mep / m.kernel_file).read_text(encoding="utf-8", errors="replace")
                self.cl_types = Types(list(m.flags), structs, src)
            except Exception:  # noqa: BLE001 - no numpy: fall back to the C sizes
                self.cl_types = None

    def size(self, elem: str) -> int | None:
        if self.cl_types is not None:
            try:
                return int(self.cl_types.resolve(elem)[0].itemsize)
            except KeyError:
                return None
        name = _clean(elem)
        if name in SIZEOF:
            return SIZEOF[name]
        st = self.structs.get(name.split("::")[-1])
        return self._layout(st)[1] if st else None

    def _layout(self, st: StructSpec) -> tuple[list[tuple[str, str, int, int]], int]:
        out, off, align = [], 0, 1
        for ftype, fname, flen in st.fields:
            fs = 8 if "*" in ftype else self.size(ftype) or 4
            fa = min(fs, 8) if _clean(ftype) not in {"float3", "int3"} else 4
            off = (off + fa - 1) // fa * fa
            out.append((ftype, fname, int(flen or 1), off))
            off += fs * int(flen or 1)
            align = max(align, fa)
        return out, (off + align - 1) // align * align

    def decode(self, elem: str, data: bytes) -> Any:
        """A scalar as mep.toml writes it: a number, or {field: number} for a struct; None if unknown."""
        if self.cl_types is not None:
            try:
                dtype, _ = self.cl_types.resolve(elem)
                import numpy as np

                v = np.frombuffer(data[: dtype.itemsize], dtype=dtype)[0]
                if dtype.names:
                    return {n: _py(v[n]) for n in dtype.names if np.ndim(v[n]) == 0 and not dtype[n].names}
                return _py(v) if np.ndim(v) == 0 else None
            except (KeyError, ValueError):
                return None
        name = _number_type(_clean(elem))
        if name == "__nv_bfloat16" and len(data) == 2:  # the high half of a float's bits
            return struct.unpack("<f", b"\0\0" + data)[0]
        if name not in _FMT and name not in self.structs:  # a typedef of a number: the one of its branches this size
            fits = {t for t in self.aliases.get(name, ()) if t in _FMT and struct.calcsize("<" + _FMT[t]) == len(data)}
            if len({_FMT[t] for t in fits}) == 1:
                name = fits.pop()
        if name in _FMT:
            fmt = "<" + _FMT[name]
            if struct.calcsize(fmt) != len(data):
                return None
            v = struct.unpack(fmt, data)[0]
            return bool(v) if isinstance(v, bool) else v
        st = self.structs.get(name.split("::")[-1])
        if st is None:
            return None
        out: dict[str, Any] = {}
        for ftype, fname, flen, off in self._layout(st)[0]:
            f = _FMT.get(_number_type(_clean(ftype)))
            if f is None or flen != 1 or "*" in ftype:
                continue
            out[fname] = struct.unpack_from("<" + f, data, off)[0]
        return out


def _py(v: Any) -> Any:
    return v.item() if hasattr(v, "item") else v


# -- writing the MEP --------------------------------------------------------------------------------
@dataclass
class Collected:
    manifest: Manifest
    index: dict[str, Any]
    notes: list[str]


def _scalar_key(rec: Record, m: Manifest) -> tuple:  # type: ignore[type-arg]
    cfg = tuple(tuple(rec.fields.get(k, [])) for k in ("grid", "block", "shared_mem", "work_dim", "global", "local"))
    cfg += (tuple(rec.argtypes or ()),)  # a launch site in a template: another instance of the kernel
    vals = tuple(rec.args[i].words[-1] if i in rec.args and rec.args[i].kind == "value" else ""
                 for i, p in enumerate(m.params) if p.role == "scalar")
    sizes = tuple(rec.args[i].words[:3] if i in rec.args and rec.args[i].kind in {"buffer", "pointer", "local"}
                  else ("null",) if i in rec.args and rec.args[i].kind == "null" else ()
                  for i in range(len(m.params)))
    return cfg, vals, sizes


def _launch_of(rec: Record, m: Manifest, origin: str) -> LaunchSpec:
    if m.backend == "opencl":
        dims = int((rec.fields.get("work_dim") or ["1"])[0])
        glob = [int(x) for x in rec.fields.get("global", [])][:dims]
        local = [int(x) for x in rec.fields.get("local", [])][:dims]
        grid = (glob + [1, 1, 1])[:3]
        block = (local + [1, 1, 1])[:3] if local else [0, 0, 0]
        return LaunchSpec(grid=tuple(grid), block=tuple(block), shared_mem=0,  # type: ignore[arg-type]
                          grid_expr=m.launch.grid_expr, block_expr=m.launch.block_expr, source=origin)
    g = [int(x) for x in rec.fields.get("grid", ["1", "1", "1"])]
    b = [int(x) for x in rec.fields.get("block", ["1", "1", "1"])]
    shmem = int((rec.fields.get("shared_mem") or ["0"])[0])
    return LaunchSpec(grid=(g[0], g[1], g[2]), block=(b[0], b[1], b[2]), shared_mem=shmem,
                      grid_expr=m.launch.grid_expr, block_expr=m.launch.block_expr, source=origin)


def _pointer_words(buf: bytes, ranges: list[tuple[int, int]]) -> int:
    """How many aligned 8-byte words of `buf` (its first 16 MiB) hold an address inside a recorded allocation."""
    if not ranges:
        return 0
    n = min(len(buf), 16 << 20) // 8
    low, high = min(r[0] for r in ranges), max(r[1] for r in ranges)
    hits = 0
    for (w,) in struct.iter_unpack("<Q", buf[: n * 8]):
        if low <= w < high and any(lo <= w < hi for lo, hi in ranges):
            hits += 1
    return hits


def collect(dump: Path, mep: Path, m: Manifest, *, want: str, run_cmd: str, build_cmd: str,
            dest: Path | None = None) -> Collected:
    """Read the dump, check it, write the MEP's capture/ (or `dest`, to be moved there later) and return the
    updated manifest (not yet saved); its [capture] digest names this capture's data."""
    seen = launches_seen(dump)
    records = sorted((read_record(p) for p in dump.glob("launch*/record.txt")), key=lambda r: r.ordinal)
    if (dump / "svm.txt").is_file():
        raise UserError(f"capture: {m.kernel} takes shared virtual memory arguments (clSetKernelArgSVMPointer); "
                        "s2s capture records cl_mem buffers only")
    if not seen and not records:
        raise UserError(f"capture: {m.kernel} was never launched by the run command ({run_cmd!r})",
                        hint="check the run command's arguments, or that this code path runs")
    if not records:
        asked = int(want.split()[-1]) if want.startswith("--launch ") and want.split()[-1].isdigit() else 1
        if seen is not None and seen >= asked:  # it ran, yet nothing was written for it: never "a later launch"
            raise UserError(f"capture: the run launched {m.kernel} {seen} time(s), but launch {asked} left no record "
                            "(the instrumented launch did not complete its recording)",
                            hint="the capture log holds the run's output; try another --launch N")
        raise UserError(f"capture: the run launched {m.kernel} {seen} time(s); {want} asks for a later launch",
                        hint="use --launch N with N at most " + str(seen))
    if all(rec.exceeded for rec in records):
        return _sizes_only(records[0], mep, m, seen=seen, want=want, run_cmd=run_cmd)
    over = [rec for rec in records if rec.exceeded]
    records = [rec for rec in records if not rec.exceeded]
    for rec in records:
        if rec.errors and not rec.done:
            raise UserError(f"capture: launch {rec.ordinal} of {m.kernel} could not be recorded: {rec.errors[0]}")
        if rec.errors:
            raise UserError(f"capture: launch {rec.ordinal} of {m.kernel}: {rec.errors[0]}")
        if not rec.done:
            raise UserError(f"capture: launch {rec.ordinal} of {m.kernel} was recorded before the launch but not after it "
                            "(the application stopped or crashed during the kernel?)")
    m, deduced = with_deduced_template_args(m, mep, records[0])
    decl = m
    if m.backend in _CUDA_RUNTIME:  # the kernel file's structs, pointer fields included, name the captured pointers
        decl = with_declared(m, (mep / m.kernel_file).read_text(encoding="utf-8", errors="replace")
                             if (mep / m.kernel_file).is_file() else "")
    types = ElemTypes(decl, mep)
    notes: list[str] = [deduced] if deduced else []
    notes += [f"launch {r.ordinal}: {_over_limit(r)}; not kept (another recorded launch is)" for r in over]
    first = records[0]
    key0 = _scalar_key(first, m)
    replay = [r for r in records if _scalar_key(r, m) == key0]
    for r in records:
        if r not in replay:
            notes.append(f"launch {r.ordinal}: scalars, sizes, argument types or launch configuration differ from launch {first.ordinal}; "
                         "its data are kept under capture/ but not replayed")
    streams = {tuple(r.fields.get("stream", [])) for r in records}
    if any(s and s != ("0",) for s in streams):
        notes.append("limit: the kernel runs on a non-default stream; the capture synchronizes the device around the "
                     "launch, so the data are those of a serialized run (kernels on several streams may overlap in the "
                     "application)")
    if len(streams) > 1:
        notes.append(f"limit: the recorded launches use {len(streams)} different streams")
    if "offset" in first.fields:
        notes.append(f"limit: launch {first.ordinal} has a global work offset {first.fields['offset']}; the MEP launches "
                     "without one")
    cap = dest or mep / "capture"
    digest = hashlib.sha256()

    def put(rel: str, data: bytes, descr: str, count: int) -> None:
        write_npy(cap / rel.removeprefix("capture/"), data, descr, count)
        digest.update(rel.encode() + b"\0" + data)

    def put_region(d: Path, stem: str, b_rel: str, a_rel: str, nbytes: int, descr: str, count: int) -> tuple[str, bool]:
        """A region's dump files (STEM.before.bin, STEM.after.bin or .after.same) as .npy files, streamed: the after
        file's name in the MEP (the before file's where the launch left the region unchanged) and whether it changed."""
        src = d / f"{stem}.before.bin"
        digest.update(b_rel.encode() + b"\0")
        copy_to_npy(src, nbytes, cap / b_rel.removeprefix("capture/"), descr, count, digest)
        after = _after(d, stem)
        if after is None:
            digest.update(a_rel.encode() + b"\0same\0")
            return b_rel, False
        digest.update(a_rel.encode() + b"\0")
        copy_to_npy(after, nbytes, cap / a_rel.removeprefix("capture/"), descr, count, digest)
        return a_rel, not same_bytes(src, after)

    if cap.exists():
        import shutil

        shutil.rmtree(cap)
    cap.mkdir(parents=True)
    where = first.fields.get("site", ["?"])[0]
    origin = f"capture: launch {first.ordinal} of {seen if seen is not None else '?'} at {where}, run {run_cmd!r}"
    params = list(m.params)
    symbols = list(m.symbols)
    sets: list[dict[str, Any]] = []
    ranges = [(int(a.words[3]), int(a.words[3]) + int(a.words[2]) + int(a.words[1]))  # base, base + offset + bytes
              for r in records for a in r.args.values() if a.kind == "pointer" and len(a.words) >= 6]
    ranges += [(int(w[4]), int(w[4]) + int(w[3]) + int(w[2])) for r in records for w in r.sptrs]
    struct_layouts: dict[str, dict[str, Any]] = {}
    changed_in: set[str] = set()
    for rec in records:
        entry: dict[str, Any] = {"launch": rec.ordinal, "site": rec.fields.get("site", ["?"])[0], "replayed": rec in replay,
                                 "launch_config": {k: rec.fields[k] for k in ("grid", "block", "shared_mem", "stream",
                                                                               "work_dim", "global", "local", "offset")
                                                   if k in rec.fields},
                                 "params": {}, "symbols": {}}
        for i, p in enumerate(params):
            a = rec.args.get(i)
            if a is None:
                raise UserError(f"capture: launch {rec.ordinal}: argument {i} ({p.name}) was not recorded")
            if a.kind == "unset":
                raise UserError(f"capture: launch {rec.ordinal}: argument {i} ({p.name}) was never set with clSetKernelArg "
                                "in an instrumented file")
            if a.kind in {"unsized", "badmem"}:
                raise UserError(f"capture: launch {rec.ordinal}: params.{p.name}: the allocation behind the pointer could not "
                                f"be sized ({' '.join(a.words)}); host memory is not captured")
            if a.kind == "null":
                if m.backend not in _CUDA_RUNTIME:
                    raise UserError(f"capture: launch {rec.ordinal}: params.{p.name} is a null pointer in the application")
                entry["params"][p.name] = {"kind": "null"}  # an optional buffer the application leaves out
                continue
            if a.kind == "value":
                raw = bytes.fromhex(a.words[1]) if len(a.words) > 1 else b""
                value = types.decode(p.elem, raw)
                entry["params"][p.name] = {"kind": "value", "bytes": raw.hex(), "value": value}
                if m.backend in _CUDA_RUNTIME and _number_type(_clean(p.elem)) not in _FMT and not isinstance(value, (int, float)):
                    ptrs = struct_pointers(rec, i, p.name, p.elem, decl, put_region, ranges)
                    entry["params"][p.name]["pointers"] = ptrs
                    struct_layouts.setdefault(p.name, layout_table(decl, p.name, p.elem, len(raw)))
                    if rec in replay:
                        changed_in.update(f"{p.name}.{q['field']}" for q in ptrs if q["changed"])
                continue
            if a.kind == "local":
                entry["params"][p.name] = {"kind": "local", "bytes": int(a.words[0])}
                continue
            if a.kind == "toolarge":
                raise UserError(f"capture: params.{p.name}: an argument of {a.words[0]} bytes passed by value is not captured")
            # a buffer
            if a.kind == "pointer":
                esz, nbytes, offset, _base, alloc_kind, how = (int(a.words[0]), int(a.words[1]), int(a.words[2]),
                                                               a.words[3], a.words[4], a.words[5])
            else:
                esz, nbytes, offset, alloc_kind, how = (types.size(p.elem) or 1), int(a.words[0]), 0, "buffer", "clGetMemObjectInfo"
            if "*" in _clean_ptr(p.elem):
                raise UserError(f"capture: params.{p.name} holds pointers ({p.elem}): structures of pointers are not captured "
                                "(the addresses would not be valid in the MEP)")
            count = nbytes // esz
            if nbytes % esz:
                notes.append(f"params.{p.name}: the allocation ({nbytes} bytes) is not a multiple of the element size {esz}; "
                             f"the MEP uses {count} elements")
            descr = descr_of(_clean(p.elem), esz)
            b_rel = f"capture/launch{rec.ordinal}/{p.name}.before.npy"
            a_rel = f"capture/launch{rec.ordinal}/{p.name}.after.npy"
            a_rel, changed = put_region(rec.dir, f"arg{i}", b_rel, a_rel, count * esz, descr, count)
            if changed and rec in replay:
                changed_in.add(p.name)
            hits = _pointer_words(_head(rec.dir / f"arg{i}.before.bin"), ranges) if esz % 8 == 0 or esz >= 8 else 0
            if hits:
                notes.append(f"limit: params.{p.name} holds {hits} value(s) that look like device addresses of the "
                             "application (a structure of pointers?); the MEP cannot replay pointers stored inside buffers")
            if alloc_kind == "managed":
                notes.append(f"limit: params.{p.name} is unified (managed) memory; the MEP replays it as device memory")
            if offset:
                notes.append(f"params.{p.name}: the pointer is {offset} bytes into its allocation; captured from there to "
                             "the allocation's end")
            if how == "mep.toml":
                notes.append(f"params.{p.name}: the driver could not size the allocation; captured {nbytes} bytes, the "
                             "count inferred in mep.toml")
            entry["params"][p.name] = {"kind": "buffer", "count": count, "elem_size": esz, "bytes": count * esz,
                                       "before": b_rel, "after": a_rel, "memory": alloc_kind, "sized_by": how,
                                       "offset": offset}
        for name, (esz, nbytes) in rec.symbols.items():
            rel = f"capture/launch{rec.ordinal}/symbol.{name}.npy"
            data = (rec.dir / f"sym_{name}.bin").read_bytes()
            spec = next((s for s in symbols if s.name == name), None)
            put(rel, data, descr_of(_clean(spec.elem) if spec else "", esz), nbytes // max(esz, 1))
            entry["symbols"][name] = {"file": rel, "elem_size": esz, "bytes": nbytes, "count": nbytes // max(esz, 1)}
        sets.append(entry)
    # the manifest, from the first recorded launch
    e0 = sets[0]
    new_params = []
    for p in params:
        info = e0["params"][p.name]
        if info["kind"] == "value" and "pointers" in info:
            # replayed from its captured bytes, pointers rewritten (mep.toml [capture] struct_args)
            value = info["value"] if isinstance(info["value"], dict) else {}
            new_params.append(replace(p, value=value, source=origin, hint=""))
            continue
        if info["kind"] == "value":
            if info["value"] is None:
                notes.append(f"params.{p.name}: the captured bytes {info['bytes']} could not be decoded as {p.elem}; "
                             "the value inferred from the source is kept")
                new_params.append(replace(p, source=f"{p.source}; captured bytes {info['bytes']} not decoded"))
                continue
            new_params.append(replace(p, value=info["value"], source=origin, hint=""))
        elif info["kind"] == "null":
            new_params.append(replace(p, count=0, count_expr="a null pointer (captured)", fill="null", role="in",
                                      source=origin, hint=""))
            notes.append(f"params.{p.name}: a null pointer in the application's launch; the MEP passes a null pointer")
        elif info["kind"] == "local":
            esz = types.size(p.elem) or 1
            new_params.append(replace(p, count=int(info["bytes"]) // esz, count_expr=f"{info['bytes']} bytes (captured)",
                                      source=origin, hint=""))
        else:
            role = p.role
            if role == "in" and p.name in changed_in:
                role = "inout"
                notes.append(f"params.{p.name}: role in -> inout (the real run's launch changed it)")
            extra: dict[str, Any] = {}
            if p.fill == "index":  # the generated input sets draw indices from [0, high): the captured values bound it
                top = _index_max([e["params"][p.name] for e in sets if e["replayed"]], p.elem, cap)
                if top is not None and top + 1 > p.high:
                    extra = {"low": 0.0, "high": float(top + 1)}
                    notes.append(f"params.{p.name}: index fill bound high = {top + 1} (the largest captured index + 1)")
            elif p.fill == "offsets":  # generated row pointers rise to high: the captured last offset is the real one
                top = _index_max([e["params"][p.name] for e in sets if e["replayed"]], p.elem, cap)
                if top is not None and top >= 1:
                    extra = {"low": 0.0, "high": float(top)}
                    notes.append(f"params.{p.name}: offsets fill bound high = {top} (the largest captured offset)")
            elif p.fill == "uniform" and role != "out":
                # integers the kernel reads may index memory or bound loops in ways the source does not show (an id
                # used as `W + id * stride`, `m = maturities[n] - 1` into a local array, a sentinel for "empty"): the
                # generated input sets reorder the captured values, so each element is one the application passed,
                # never one from a default range the kernel cannot take; every such buffer of one length alike, so
                # values valid together (a cell's start and end) stay together ([low, high]: their range, where the
                # harness has no captured set to reorder)
                span = _int_range([e["params"][p.name] for e in sets if e["replayed"]], p.elem, cap)
                if span is not None:
                    extra = {"fill": "shuffle", "low": float(span[0]), "high": float(span[1])}
                    notes.append(f"params.{p.name}: generated input sets reorder its captured integers (in [{span[0]}, "
                                 f"{span[1]}]) rather than draw them from [{p.low:g}, {p.high:g}]")
            new_params.append(replace(p, count=int(info["count"]), count_expr=f"{info['bytes']} bytes (captured)",
                                      role=role, source=origin, hint="", **extra))
    shared = shared_buffers(records, params)
    for k, p in enumerate(new_params):  # `k<<<g, b>>>(d_key, d_key, n)`: one buffer, passed twice
        if p.name in shared:
            owner, offset = shared[p.name]
            new_params[k] = replace(p, shares=owner, shares_offset=offset)
            notes.append(f"params.{p.name}: the application passes the memory of params.{owner}"
                         f"{f' ({offset} bytes into it)' if offset else ''}; the MEP passes that buffer too")
            j = next(i for i, q in enumerate(new_params) if q.name == owner)
            if p.name in changed_in and new_params[j].role == "in":
                new_params[j] = replace(new_params[j], role="inout")
            elif new_params[j].role == "out" and new_params[k].role != "out":
                # `k(d_dst, d_dst, d_src = d_dst)`: the kernel reads the owner's memory through this parameter, so the
                # MEP must hand it the captured contents, not the poison an output gets (which made the reference of
                # an in-place merge read poison and write it back: "writes nothing")
                new_params[j] = replace(new_params[j], role="inout")
                notes.append(f"params.{owner}: role out -> inout (the kernel reads its memory through params.{p.name})")
    new_symbols = []
    for s in symbols:
        info = e0["symbols"].get(s.name)
        if info is None:
            notes.append(f"limit: symbols.{s.name} was not captured (no reader registered in the kernel's file); it is "
                         "filled from the seed, so the replay may not reproduce the real run")
            new_symbols.append(s)
        else:
            new_symbols.append(SymbolSpec(name=s.name, elem=s.elem, count=int(info["count"]) or s.count, source=origin))
    launch = _launch_of(first, m, origin)
    index = {"schema": 1, "kernel": m.kernel, "backend": m.backend, "build_cmd": build_cmd, "run_cmd": run_cmd,
             "launches_seen": seen, "selected": want, "sets": sets, "notes": notes}
    index_text = json.dumps(index, indent=1) + "\n"
    (cap / "index.json").write_text(index_text, encoding="utf-8")
    digest.update(index_text.encode())
    capture_table = {"index": "capture/index.json", "from": origin, "digest": digest.hexdigest()[:16],
                     "sets": [s["launch"] for s in sets if s["replayed"]], "launches_seen": seen if seen is not None else -1,
                     "run_cmd": run_cmd, "build_cmd": build_cmd}
    if deduced:
        capture_table["template_args_from"] = deduced
    if struct_layouts:
        capture_table["struct_args"] = [dict(lay, pointers=[
            {k: q[k] for k in ("field", "offset", "elem", "elem_size", "count")}
            | {"role": "inout" if f"{name}.{q['field']}" in changed_in else "in"}
            for q in e0["params"][name].get("pointers", [])]) for name, lay in struct_layouts.items()]
    kept = [n for n in m.notes if not n.startswith("no launch site found:")]  # the launch is the recorded one now
    new = replace(m, params=new_params, symbols=new_symbols, launch=launch, capture=capture_table,
                  notes=kept + [n for n in notes if n not in kept])
    return Collected(manifest=new, index=index, notes=notes)


def _over_limit(rec: Record) -> str:
    need, limit = rec.exceeded or (0, 0)
    return (f"its buffers hold {need} bytes (before the launch, and after it where it changed them), over the limit of "
            f"{limit} bytes (--max-bytes)")


def _sizes_only(rec: Record, mep: Path, m: Manifest, *, seen: int | None, want: str, run_cmd: str) -> Collected:
    """A launch whose data are over --max-bytes: the MEP gets what the record holds without them, the buffers' sizes,
    the scalars and the launch configuration, and its input sets are generated (no [capture]: nothing to replay; the
    roles stay the source's). A struct passed by value that holds device pointers needs their data: refused."""
    why = f"capture: launch {rec.ordinal} of {m.kernel}: {_over_limit(rec)}"
    m, deduced = with_deduced_template_args(m, mep, rec)
    decl = m
    if m.backend in _CUDA_RUNTIME:
        decl = with_declared(m, (mep / m.kernel_file).read_text(encoding="utf-8", errors="replace")
                             if (mep / m.kernel_file).is_file() else "")
    types = ElemTypes(decl, mep)
    where = rec.fields.get("site", ["?"])[0]
    origin = f"capture (sizes and scalars only): launch {rec.ordinal} of {seen if seen is not None else '?'} at {where}, run {run_cmd!r}"
    params = []
    for i, p in enumerate(m.params):
        a = rec.args.get(i)
        if a is None or a.kind in {"unset", "unsized", "badmem", "toolarge"} or any(int(w[0]) == i for w in rec.sptrs):
            raise UserError(why, hint="raise --max-bytes, or capture a smaller problem")
        if a.kind == "value":
            value = types.decode(p.elem, bytes.fromhex(a.words[1]) if len(a.words) > 1 else b"")
            if value is None or isinstance(value, dict):
                raise UserError(why, hint="raise --max-bytes, or capture a smaller problem")
            params.append(replace(p, value=value, source=origin, hint=""))
        elif a.kind == "null":
            params.append(replace(p, count=0, count_expr="a null pointer (captured)", fill="null", role="in",
                                  source=origin, hint=""))
        elif a.kind == "local":
            esz = types.size(p.elem) or 1
            params.append(replace(p, count=int(a.words[0]) // esz, count_expr=f"{a.words[0]} bytes (captured)",
                                  source=origin, hint=""))
        else:
            esz = int(a.words[0]) if a.kind == "pointer" else types.size(p.elem) or 1
            nbytes = int(a.words[1]) if a.kind == "pointer" else int(a.words[0])
            params.append(replace(p, count=nbytes // max(esz, 1), count_expr=f"{nbytes} bytes (captured size)",
                                  source=origin, hint=""))
    for k, q in enumerate(params):  # one buffer passed twice: as collect()
        if q.name in (shared := shared_buffers([rec], params)):
            owner, offset = shared[q.name]
            params[k] = replace(q, shares=owner, shares_offset=offset)
    notes = ([deduced] if deduced else []) + [
        f"{why}: the MEP has that launch's buffer sizes, scalars and launch configuration, and generated input sets "
        "(its data were not recorded, nothing replays the application's values; buffer roles are the source's); raise "
        "--max-bytes to replay the application's data"]
    index = {"schema": 1, "kernel": m.kernel, "backend": m.backend, "run_cmd": run_cmd, "launches_seen": seen,
             "selected": want, "sets": [], "notes": notes, "sizes_only": True}
    kept = [n for n in m.notes if not n.startswith("no launch site found:")]
    new = replace(m, params=params, launch=_launch_of(rec, m, origin), capture={},
                  notes=kept + [n for n in notes if n not in kept])
    return Collected(manifest=new, index=index, notes=notes)


def shared_buffers(records: list[Record], params: list[ParamSpec]) -> dict[str, tuple[str, int]]:
    """Buffer parameters that point into the allocation of an earlier-starting one in every recorded launch, the same
    number of bytes from it each time: name -> (that parameter's name, the byte offset). The first pointer into an
    allocation (the lowest address, then the earlier parameter) owns the buffer."""
    found: dict[str, tuple[str, int]] | None = None
    for rec in records:
        by_base: dict[str, list[tuple[int, int]]] = {}
        for i, p in enumerate(params):
            a = rec.args.get(i)
            if p.role == "scalar" or a is None or a.kind != "pointer" or len(a.words) < 6:
                continue
            by_base.setdefault(a.words[3], []).append((int(a.words[2]), i))
        here: dict[str, tuple[str, int]] = {}
        for group in by_base.values():
            if len(group) < 2:
                continue
            (first_offset, owner), *rest = sorted(group)
            here.update({params[i].name: (params[owner].name, offset - first_offset) for offset, i in rest})
        found = here if found is None else {k: v for k, v in found.items() if here.get(k) == v}
    return found or {}


def with_deduced_template_args(m: Manifest, mep: Path, rec: Record) -> tuple[Manifest, str]:
    """with_kernel_template_args, then an extended lambda among them made the MEP's functor (capture/lambdas.py)."""
    m, said = with_kernel_template_args(m, mep, rec)
    if "__nv_dl_wrapper_t<" not in m.template_args:
        return m, said
    from .lambdas import functor_for, tree_sources

    f = functor_for(m.template_args, tree_sources(Path(str(m.origin.get("tree", "")))))
    if isinstance(f, str):
        return replace(m, template_args=FILL_IN), f"template_args: FILL-IN: {f}"
    path = mep / m.kernel_file
    text = path.read_text(encoding="utf-8", errors="replace").replace(f.wrapper, f.name)
    mark = text.find("// s2s: instantiations seen at launch sites")
    path.write_text(text[:mark] + f.code + text[mark:] if mark >= 0 else text + "\n" + f.code, encoding="utf-8")
    params = [replace(p, elem=f.name) if "__nv_dl_wrapper_t<" in p.elem else p for p in m.params]
    return replace(m, template_args=m.template_args.replace(f.wrapper, f.name), params=params), (
        f"{said}; the extended __device__ lambda it names ({f.where}) is the MEP's functor {f.name} (kernel file)")


def with_kernel_template_args(m: Manifest, mep: Path, rec: Record) -> tuple[Manifest, str]:
    """A CUDA kernel template the application launches with its template arguments deduced (`k<<<g, b>>>(d_a, n)`):
    its template_args solved from the argument types the capture recorded, and the element types of its parameters
    with them (`T` -> `float`); else FILL-IN with the reason. The second value says which ("" where nothing was to do)."""
    if m.backend not in _CUDA_RUNTIME or "<" in m.kernel:
        return m, ""
    decls = declared_template(mep / m.kernel_file, m.kernel_file, m.kernel) or ()
    if decls and m.template_args == FILL_IN and rec.fields.get("function"):
        ran_instance = with_instance_ran(m, mep, rec, decls)  # the mangled name of the instance that ran
        if ran_instance[1] and ran_instance[0].template_args != FILL_IN:
            return ran_instance
        other = _from_types_and_names(m, rec, decls)
        return ran_instance if ran_instance[1] and other[0].template_args == FILL_IN else other
    return _from_types_and_names(m, rec, decls)


def _from_types_and_names(m: Manifest, rec: Record, decls: tuple[str, ...]) -> tuple[Manifest, str]:
    """with_deduced_template_args from the launch's recorded argument types and the template arguments it names."""
    given = "" if m.template_args == FILL_IN else m.template_args  # `k<256><<<g, b>>>(x, n)`: 256 given, T deduced
    # the arguments the launch names, as the instance that ran names them (`k<scalar_t, TOPK>` in a template host
    # function: `float, 4`), over what extraction read from the text
    named = ", ".join(t.strip() for t in rec.targs) if rec.targs and all(t.strip() not in ("", "?") for t in rec.targs) else ""
    required = len([d for d in decls if "=" not in d])
    if decls and rec.argtypes:  # the instance that ran, from its recorded types, over what extraction read statically
        ran = ""
        for prefix in ([named] if named else []) + [""]:
            try:
                ran = solve(decls, [p.type for p in m.params], rec.argtypes, prefix)
                break
            except Unsolvable:
                continue
        if ran:
            params = [replace(p, elem=_deduced_elem(p.type, p.elem, decls, ran)) for p in m.params]
            said = "" if not given else ", as extraction had read" if given == ran else f"; extraction had read {given!r}"
            by = f"the launch's template arguments {named!r} and " if named else ""
            return replace(m, template_args=ran, params=params), (
                f"template_args = {ran!r}: deduced from {by}the argument types of launch {rec.ordinal} "
                f"({', '.join(rec.argtypes)}) against the parameters ({', '.join(p.type for p in m.params)}){said}")
    if decls and named and len(split_args(named)) >= required:  # every argument named at the launch
        params = [replace(p, elem=_deduced_elem(p.type, p.elem, decls, named)) for p in m.params]
        return replace(m, template_args=named, params=params), (
            f"template_args = {named!r}: the template arguments launch {rec.ordinal} names, as its instance names them")
    given = named or given
    if not decls or len(split_args(given)) >= required:
        return m, ""
    if rec.argtypes is None:
        why = (f"template_args: FILL-IN: launch {rec.ordinal} recorded no argument types to deduce the kernel template's "
               "arguments from")
        return replace(m, template_args=FILL_IN), why
    try:
        targs = solve(decls, [p.type for p in m.params], rec.argtypes, given)
    except Unsolvable as exc:
        return replace(m, template_args=FILL_IN), f"template_args: FILL-IN: not deduced from launch {rec.ordinal}: {exc}"
    params = [replace(p, elem=_deduced_elem(p.type, p.elem, decls, targs)) for p in m.params]
    why = (f"template_args = {targs!r}: deduced from the argument types of launch {rec.ordinal} "
           f"({', '.join(rec.argtypes)}) against the parameters ({', '.join(p.type for p in m.params)})")
    return replace(m, template_args=targs, params=params), why


def with_instance_ran(m: Manifest, mep: Path, rec: Record, decls: tuple[str, ...]) -> tuple[Manifest, str]:
    """template_args of the instance the launch ran, read from its mangled name (`k<traits<256, 12, float>>`, which
    extraction could not tell among the calls that pass different arguments), where the kernel file defines every
    name they use; else FILL-IN, saying which instance ran."""
    from s2s.lang.demangle import normalize_profile_name

    mangled = rec.fields["function"][0]
    _name, ran = normalize_profile_name(mangled)
    if not ran:
        return m, ""
    text = (mep / m.kernel_file).read_text(encoding="utf-8", errors="replace") if (mep / m.kernel_file).is_file() else ""
    known = set(re.findall(r"[A-Za-z_]\w*", text)) | _TYPE_WORDS
    from .lambdas import wrapper_in  # an extended lambda's wrapper: the MEP's functor names it (with_deduced_template_args)

    unknown = sorted({w for w in re.findall(r"(?<![\w:])[A-Za-z_]\w*", ran.replace(wrapper_in(ran), "")) if w not in known})
    if unknown:
        return m, (f"template_args: FILL-IN: launch {rec.ordinal} ran the instance <{ran}>, and the kernel file does not "
                   f"define {', '.join(unknown[:4])}")
    params = [replace(p, elem=_deduced_elem(p.type, p.elem, decls, ran)) for p in m.params]
    return replace(m, template_args=ran, params=params), (
        f"template_args = {ran!r}: the instance launch {rec.ordinal} ran ({mangled})")


_TYPE_WORDS = frozenset("unsigned signed char short int long float double bool void const volatile true false std".split())


def _deduced_elem(ptype: str, elem: str, decls: tuple[str, ...], targs: str) -> str:
    """The element type of a parameter declared `ptype` once the kernel's template parameters are `targs`: the
    declared type's base, without pointers, references or qualifiers (`const T*` -> `float`, `Vec<T, N>*` ->
    `Vec<double, 3>`); `elem` itself where the declared type names no template parameter. The declared type decides,
    not `elem`: extraction may have put one call's instance there (`Td*` read as `half` from one of several
    `convert<half, ...>`, `convert<float, ...>` calls) while another instance ran."""
    import re

    names = {re.findall(r"[A-Za-z_]\w*", d.partition("=")[0])[-1] for d in decls if re.findall(r"[A-Za-z_]\w*", d)}
    if not set(re.findall(r"[A-Za-z_]\w*", ptype)) & names:
        return elem
    base = re.sub(r"\b(const|volatile|restrict|__restrict__|__restrict|struct|class|typename)\b", " ",
                  substitute(ptype, decls, targs))
    return " ".join(base.replace("*", " ").replace("&", " ").split()).replace(" <", "<")


def _int_range(infos: list[dict[str, Any]], elem: str, cap: Path) -> tuple[int, int] | None:
    """(smallest, largest) value in the captured `before` data of an integer buffer (all replayed launches), None
    when its element type is not an integer or nothing was captured."""
    from .npy import read_npy

    fmt = _FMT.get(_number_type(_clean(elem)))
    if fmt is None or fmt in "fde?":
        return None
    lo: int | None = None
    hi: int | None = None
    for info in infos:
        if info.get("kind") != "buffer":
            continue
        raw, _descr, count = read_npy(cap / str(info["before"]).removeprefix("capture/"))
        if not count:
            continue
        try:
            import numpy as np

            vals = np.frombuffer(raw, dtype="<" + fmt, count=count)
            a, b = int(vals.min()), int(vals.max())
        except ImportError:
            seq = [x for (x,) in struct.iter_unpack("<" + fmt, raw[: count * struct.calcsize(fmt)])]
            a, b = min(seq), max(seq)
        lo, hi = (a, b) if lo is None or hi is None else (min(lo, a), max(hi, b))
    return None if lo is None or hi is None else (lo, hi)


def _index_max(infos: list[dict[str, Any]], elem: str, cap: Path) -> int | None:
    """The largest value in the captured `before` data of an index buffer (all replayed launches), None when
    its element type is not an integer or no value is >= 0."""
    got = _int_range(infos, elem, cap)
    return got[1] if got is not None and got[1] >= 0 else None


def _clean_ptr(t: str) -> str:
    import re

    return re.sub(r"\b(const|volatile|restrict|__restrict__|struct)\b", " ", t).strip()


def struct_pointers(rec: Record, i: int, name: str, elem: str, m: Manifest, put_region: Any,
                    ranges: list[tuple[int, int]]) -> list[dict[str, Any]]:
    """The device allocations the struct argument `i` points into: written as .npy (before and after, `put_region`
    of collect), named after the struct's fields (structs.py)."""
    out = []
    for w in rec.sptrs:
        if int(w[0]) != i:
            continue
        offset, nbytes, inner, alloc_kind = int(w[1]), int(w[2]), int(w[3]), w[5]
        fname, fel, esz = pointer_field(m, name, elem, offset)
        hits = _pointer_words(_head(rec.dir / f"arg{i}.f{offset}.before.bin"), ranges)
        if hits:
            raise depth_error(name, fname, hits)
        count = nbytes // esz
        descr = descr_of(_clean(fel), esz)
        b_rel = f"capture/launch{rec.ordinal}/{name}.{fname}.before.npy"
        a_rel = f"capture/launch{rec.ordinal}/{name}.{fname}.after.npy"
        a_rel, changed = put_region(rec.dir, f"arg{i}.f{offset}", b_rel, a_rel, count * esz, descr, count)
        out.append({"field": fname, "offset": offset, "elem": fel, "elem_size": esz, "count": count,
                    "bytes": count * esz, "inner": inner, "memory": alloc_kind, "before": b_rel, "after": a_rel,
                    "changed": changed})
    return out
