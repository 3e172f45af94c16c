"""mep.toml: what an MEP is made of, where each value came from, and what is still to fill in.

Every inferred value carries `from` (its provenance). A value that could not be inferred is written
as the string "FILL-IN" with a `hint`, and `s2s run` stops, naming each one.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import tomllib

from s2s.base.errors import UserError
from s2s.lang.dialect import dialect_of

FILL_IN = "FILL-IN"
ROLES = ("in", "out", "inout", "scalar")
DEFAULT_RTOL = 1e-3  # [check] rtol when mep.toml does not say
DEFAULT_ATOL = 1e-4  # [check] atol, scaled by the largest magnitude in the reference output
DEFAULT_TARGET_S = 0.5  # [timing] target_s when mep.toml does not say


@dataclass(frozen=True)
class ParamSpec:
    name: str
    type: str  # as declared: "const float *"
    role: str  # in | out | inout | scalar
    elem: str  # element type for buffers, the type for scalars: "float", "Particle", "Params"
    count: int | str = 0  # elements in the buffer (FILL_IN when unknown)
    count_expr: str = ""  # the same as an expression of the application's names
    value: float | int | str | dict = 0  # type: ignore[type-arg]  # scalar value (FILL_IN when unknown); struct scalars: {field: value}, the rest random
    fill: str = "uniform"  # uniform | index | zeros | random-struct
    low: float = -1.0
    high: float = 1.0
    source: str = ""  # provenance: "launch src/main.cu:88 arg d_A; cudaMalloc at src/main.cu:61"
    hint: str = ""
    space: str = ""  # OpenCL address space of pointers: global | local | constant
    rtol: float | None = None  # this output's tolerances; None: [check]'s
    atol: float | None = None
    tol_from: str = ""  # provenance of rtol/atol when s2s chose them
    # the memory of another buffer parameter (declared before or after it), `shares_offset` bytes into it
    # (`k<<<g, b>>>(d_key, d_key, n)`, an in-place update through two parameters; `k(a + off, a)`: the later one owns): the harness passes that buffer's pointer, this one has none of its own
    shares: str = ""
    shares_offset: int = 0


@dataclass(frozen=True)
class LaunchSpec:
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_mem: int | str = 0  # bytes of dynamic shared memory (FILL_IN when unknown)
    grid_expr: str = ""
    block_expr: str = ""
    source: str = ""


@dataclass(frozen=True)
class SymbolSpec:
    """A __constant__ or __device__ variable the kernel reads: filled from the seed before each launch."""
    name: str
    elem: str
    count: int
    source: str = ""


@dataclass(frozen=True)
class StructSpec:
    name: str
    fields: tuple[tuple[str, str, int], ...]  # (type, name, array length or 1)


@dataclass
class Manifest:
    kernel: str  # qualified name
    backend: str  # cuda | hip | opencl
    kernel_file: str
    origin: dict[str, Any]
    params: list[ParamSpec]
    launch: LaunchSpec
    flags: list[str] = field(default_factory=list)
    template_args: str = ""
    symbols: list[SymbolSpec] = field(default_factory=list)
    structs: list[StructSpec] = field(default_factory=list)
    sizes: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> {value, from}
    rtol: float = DEFAULT_RTOL  # every output's, unless its [[params]] entry has its own
    atol: float = DEFAULT_ATOL
    input_sets: int = 3
    seed: int = 1234
    repetitions: int = 30  # the most timed pairs (reference, variant) an evaluation takes
    warmup: int = 3  # the most warm-up pairs
    # device seconds the timed pairs aim at: a kernel too long for `repetitions` pairs in that time is timed in fewer
    # (never fewer than MIN_TIMED_PAIRS), and warms up in fewer; 0: always `repetitions` and `warmup`
    target_s: float = DEFAULT_TARGET_S
    timeout_s: float = 120.0
    macros: list[str] = field(default_factory=list)  # macros kernel_file defines (undefined between copies)
    notes: list[str] = field(default_factory=list)
    # data of a real run (`s2s capture`): {index: "capture/index.json", from, sets: [launch ordinals replayed], ...};
    # empty for an MEP with random inputs only
    capture: dict[str, Any] = field(default_factory=dict)

    @property
    def dialect(self) -> str:
        """How the kernel file parses: "opencl", or "cuda" for CUDA and HIP."""
        return dialect_of(self.backend)

    def tolerance(self, p: ParamSpec) -> tuple[float, float]:
        """(rtol, atol) that output `p` is checked with: its own where given, else [check]'s."""
        return (self.rtol if p.rtol is None else p.rtol), (self.atol if p.atol is None else p.atol)

    # -- checks ---------------------------------------------------------------------------------
    def unfilled(self) -> list[str]:
        out = []
        for p in self.params:
            if p.role not in ROLES:
                out.append(f"params.{p.name}.role = {p.role!r}: one of {', '.join(ROLES)}")
            if p.role == "scalar" and p.value == FILL_IN:
                out.append(f"params.{p.name}.value: {p.hint or 'the scalar value passed at the launch'}")
            if p.role != "scalar" and p.count == FILL_IN:
                out.append(f"params.{p.name}.count: {p.hint or 'number of elements in the buffer'}")
            if p.shares and not any(q.name == p.shares and q is not p and q.role != "scalar" and not q.shares
                                    for q in self.params):
                out.append(f"params.{p.name}.shares = {p.shares!r}: the name of another buffer parameter with memory of its own")
        if self.template_args == FILL_IN:
            why = str(self.capture.get("template_args_from", "")).partition("FILL-IN: ")[2]  # the capture's reason
            out.append("template_args: the template arguments of the launch that runs" + (f" ({why})" if why else ""))
        if FILL_IN in (self.launch.grid + self.launch.block):  # type: ignore[operator]
            out.append("launch.grid / launch.block: the launch configuration")
        if self.launch.shared_mem == FILL_IN:
            out.append("launch.shared_mem: bytes of dynamic shared memory at the launch")
        return out


def line_of(path: Path, needle: str, after: str = "") -> int | None:
    """The first line holding `needle` (at or after the first line holding `after`, where given)."""
    try:
        seen = not after
        for i, line in enumerate(path.read_text().splitlines(), 1):
            seen = seen or after in line
            if seen and needle in line:
                return i
    except OSError:
        return None
    return None


# -- TOML -------------------------------------------------------------------------------------
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_toml_value(x)}" for k, x in v.items()) + " }"
    s = str(v).replace("\\", "\\\\").replace('"', '\\"')
    # every control character escaped (a CR of a CRLF source, a form feed): a basic string allows none but tab
    s = _CONTROL.sub(lambda m: {"\n": "\\n", "\r": "\\r"}.get(m.group(0), f"\\u{ord(m.group(0)):04x}"), s)
    return f'"{s}"'


def _key(k: str) -> str:
    return k if k.replace("_", "").replace("-", "").isalnum() else _toml_value(k)


def _table(name: str, d: dict[str, Any]) -> list[str]:
    out = [f"[{name}]"] if name else []
    out += [f"{_key(k)} = {_toml_value(v)}" for k, v in d.items() if v is not None]
    return out


def dumps(m: Manifest) -> str:
    lines = ["# s2s Minimal Executable Program. Values marked FILL-IN must be filled before `s2s run`.", ""]
    lines += _table("", {"kernel": m.kernel, "backend": m.backend, "kernel_file": m.kernel_file,
                         "template_args": m.template_args, "flags": m.flags, "macros": m.macros}) + [""]
    lines += _table("origin", m.origin) + [""]
    lines += _table("launch", asdict(m.launch)) + [""]
    lines += _table("check", {"rtol": m.rtol, "atol": m.atol, "input_sets": m.input_sets, "seed": m.seed}) + [""]
    lines += _table("timing", {"repetitions": m.repetitions, "warmup": m.warmup, "target_s": m.target_s,
                                  "timeout_s": m.timeout_s}) + [""]
    if m.sizes:
        lines += ["[sizes]"] + [f"{_key(k)} = {_toml_value(v)}" for k, v in m.sizes.items()] + [""]
    for p in m.params:
        lines += _table("[params]", _param_entry(p)) + [""]
    for s in m.symbols:
        lines += _table("[symbols]", asdict(s)) + [""]
    for st in m.structs:
        lines += _table("[structs]", {"name": st.name, "fields": [list(f) for f in st.fields]}) + [""]
    if m.capture:
        lines += _table("capture", m.capture) + [""]
    if m.notes:
        lines += ["[notes]", f"lines = {_toml_value(m.notes)}", ""]
    return "\n".join(lines)


def _param_entry(p: ParamSpec) -> dict[str, Any]:
    """A [[params]] entry; rtol, atol (None: [check]'s) and their provenance only where set."""
    d = asdict(p)
    if not p.tol_from:
        del d["tol_from"]
    if not p.shares:
        del d["shares"], d["shares_offset"]
    return d


def save(m: Manifest, mep_dir: Path) -> Path:
    from s2s.base.fsutil import atomic_write

    path = mep_dir / "mep.toml"
    atomic_write(path, dumps(m).encode())
    return path


def load(mep_dir: Path) -> Manifest:
    path = Path(mep_dir) / "mep.toml"
    if not path.is_file():
        raise UserError("not an MEP: mep.toml is missing", file=str(mep_dir), hint="create one with `s2s extract TREE --kernel NAME -o DIR`")
    raw = _read_toml(path)
    check_types(raw, path)
    try:
        launch = raw["launch"]
        m = Manifest(
            kernel=raw["kernel"], backend=raw["backend"], kernel_file=raw["kernel_file"], origin=raw.get("origin", {}),
            params=[ParamSpec(**p) for p in raw.get("params", [])],
            launch=LaunchSpec(grid=tuple(launch["grid"]), block=tuple(launch["block"]),  # type: ignore[arg-type]
                              shared_mem=launch.get("shared_mem", 0), grid_expr=launch.get("grid_expr", ""),
                              block_expr=launch.get("block_expr", ""), source=launch.get("source", "")),
            flags=list(raw.get("flags", [])), template_args=raw.get("template_args", ""),
            symbols=[SymbolSpec(**s) for s in raw.get("symbols", [])],
            structs=[StructSpec(name=s["name"], fields=tuple(tuple(f) for f in s["fields"])) for s in raw.get("structs", [])],  # type: ignore[misc]
            sizes=raw.get("sizes", {}), macros=list(raw.get("macros", [])),
            rtol=raw.get("check", {}).get("rtol", DEFAULT_RTOL), atol=raw.get("check", {}).get("atol", DEFAULT_ATOL),
            input_sets=raw.get("check", {}).get("input_sets", 3), seed=raw.get("check", {}).get("seed", 1234),
            repetitions=raw.get("timing", {}).get("repetitions", 30), warmup=raw.get("timing", {}).get("warmup", 3),
            target_s=raw.get("timing", {}).get("target_s", DEFAULT_TARGET_S),
            timeout_s=raw.get("timing", {}).get("timeout_s", 120.0), notes=raw.get("notes", {}).get("lines", []),
            capture=dict(raw.get("capture", {})),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise UserError(f"missing or malformed entry: {exc}", file=str(path), line=line_of(path, str(exc).strip("'"))) from None
    check_paths(m, Path(mep_dir), path)
    return m


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UserError(f"cannot read mep.toml ({exc.strerror or exc})", file=str(path),
                        hint="check its permissions (s2s reads it and writes beside it)") from None
    if b"\0" in data:
        raise UserError("a binary file, not TOML text", file=str(path))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"not UTF-8 text (byte {exc.start})", file=str(path), line=data.count(b"\n", 0, exc.start) + 1) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = getattr(exc, "lineno", None)
        raise UserError(f"invalid TOML: {exc}", file=str(path), line=line) from None


# -- the types each entry must have -------------------------------------------------------------------
_NUM = (int, float)
_TOP = {"kernel": str, "backend": str, "kernel_file": str, "template_args": str, "flags": list, "macros": list,
        "origin": dict, "launch": dict, "check": dict, "timing": dict, "sizes": dict, "params": list, "symbols": list,
        "structs": list, "capture": dict, "notes": dict}
_TABLES: dict[str, dict[str, Any]] = {
    "launch": {"grid": list, "block": list, "shared_mem": (int, str), "grid_expr": str, "block_expr": str, "source": str},
    "check": {"rtol": _NUM, "atol": _NUM, "input_sets": int, "seed": int},
    "timing": {"repetitions": int, "warmup": int, "target_s": _NUM, "timeout_s": _NUM},
    "notes": {"lines": list},
}
_PARAM: dict[str, Any] = {"name": str, "type": str, "role": str, "elem": str, "count": (int, str), "count_expr": str,
          "value": (int, float, str, dict, bool), "fill": str, "low": _NUM, "high": _NUM, "source": str, "hint": str, "space": str,
          "rtol": _NUM, "atol": _NUM, "tol_from": str, "shares": str, "shares_offset": int}
_SYMBOL: dict[str, Any] = {"name": str, "elem": str, "count": int, "source": str}
_STRUCT: dict[str, Any] = {"name": str, "fields": list}
_NAMES = {int: "an integer", float: "a number", str: "a string", list: "a list", dict: "a table", _NUM: "a number",
          (int, str): "an integer", (int, float, str, dict, bool): "a number"}


def _is(v: Any, want: Any) -> bool:
    if isinstance(v, bool):  # a bool is an int to isinstance; only where a bool is meant (a bool kernel argument)
        return want is bool or (isinstance(want, tuple) and bool in want)
    return isinstance(v, want)


def check_types(raw: dict[str, Any], path: Path) -> None:
    """One UserError naming the first entry whose TOML type is wrong (a string where a number belongs, ...)."""

    def bad(entry: str, v: Any, want: Any, needle: str, after: str = "") -> None:
        raise UserError(f"{entry}: {v!r} is not {_NAMES.get(want, 'of the right type')}", file=str(path),
                        line=line_of(path, needle, after))

    for key, want in _TOP.items():
        if key in raw and not _is(raw[key], want):
            bad(key, raw[key], want, f"{key} =" if want is not dict else f"[{key}]")
    for key in ("kernel", "backend", "kernel_file", "launch"):
        if key not in raw:
            raise UserError(f"{key} is missing", file=str(path))
    for table, spec in _TABLES.items():
        for key, want in spec.items():
            v = raw.get(table, {}).get(key)
            if v is not None and not _is(v, want):
                bad(f"{table}.{key}", v, want, f"{key} =", f"[{table}]")
    for key in ("grid", "block"):
        dims = raw["launch"].get(key)
        if dims is None or not all(_is(d, int) or d == FILL_IN for d in dims):
            bad(f"launch.{key}", dims, list, f"{key} =", "[launch]")
    for key in ("flags", "macros"):
        if not all(isinstance(x, str) for x in raw.get(key, [])):
            bad(key, raw[key], list, f"{key} =")
    for group, spec in (("params", _PARAM), ("symbols", _SYMBOL), ("structs", _STRUCT)):
        for item in raw.get(group, []):
            if not isinstance(item, dict):
                bad(group, item, dict, f"[[{group}]]")
            name = item.get("name")
            for key, want in spec.items():
                v = item.get(key)
                if v is not None and not _is(v, want):
                    bad(f"{group}.{name}.{key}", v, want, f"{key} =", f'name = "{name}"')
            if group == "structs" and not all(isinstance(f, list) and len(f) == 3 for f in item.get("fields", [])):
                bad(f"structs.{name}.fields", item.get("fields"), list, "fields =", f'name = "{name}"')


_FILE_NAME = re.compile(r"[A-Za-z0-9_.+\-/]+\Z")


def check_paths(m: Manifest, mep_dir: Path, path: Path) -> None:
    """Paths of mep.toml stay inside the MEP (symlinks resolved); flags that would run a command are refused."""
    from s2s.base.cmdflags import check_flags
    from s2s.base.paths import contained

    if not _FILE_NAME.match(m.kernel_file):
        raise UserError(f"kernel_file = {m.kernel_file!r}: a file name of letters, digits and . _ - + /", file=str(path),
                        line=line_of(path, "kernel_file ="))
    contained(m.kernel_file, mep_dir, entry="kernel_file", source=path, line=line_of(path, "kernel_file ="))
    if m.capture.get("index") is not None:
        contained(m.capture.get("index"), mep_dir, entry="capture.index", source=path, line=line_of(path, "index ="))
    if m.backend != "opencl":  # nvcc and hipcc: flags pass through a compiler driver's shell
        check_flags(list(m.flags), source=path, line_of=lambda name: line_of(path, name, "flags ="))
