"""Macros as the kernel's translation unit sees them, from the system's C preprocessor.

A tree often holds many programs with the same macro names (`N`, `DATA_TYPE`) and `#ifdef SIZE_TINY / SMALL /
DEFAULT` chains; only the preprocessor, run on the unit with the unit's own -D/-I flags, says which `#define` wins.
`cpp -dM -E` prints the macros defined at the end of the unit; the compiler's own predefined macros (those of an
empty file under the same flags) are left out. Headers the machine lacks (`<mpi.h>`, the CUDA toolkit's) are stood
in for by empty files, so one missing header does not hide the rest of the unit: a value that came from such a
header is then simply not known (FILL-IN), never guessed.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from s2s.base.resources import grammars_dir
from s2s.scan.compdb import CompileCommand

_MISSING = re.compile(r"fatal error: ([^:\n]+): No such file or directory")
_DM = re.compile(r"^#define ([A-Za-z_]\w*)(\([^)]*\))? ?(.*)$")
# what nvcc (host pass) and hipcc define, which a plain cpp does not
_LANG_DEFINES = {"cuda": ["-D__CUDACC__=1", "-D__NVCC__=1", "-D__CUDACC_VER_MAJOR__=13", "-D__CUDACC_VER_MINOR__=0"],
                 "hip": ["-D__HIPCC__=1", "-D__HIP_PLATFORM_AMD__=1", "-D__HIP__=1"], "opencl": ["-D__OPENCL_VERSION__=120"]}


@dataclass
class UnitMacros:
    """Object-like macros of one unit: {name: value text}, how they were found, and headers stood in for."""
    values: dict[str, str] = field(default_factory=dict)
    function_like: set[str] = field(default_factory=set)
    how: str = ""
    stubbed: list[str] = field(default_factory=list)
    ok: bool = False


def _cpp() -> str | None:
    return shutil.which("cpp") or shutil.which("gcc")


def _flags(command: CompileCommand | None) -> list[str]:
    """-D/-U/-I/-include flags of the unit's command, -I made absolute (relative to the command's directory)."""
    if command is None:
        return []
    out: list[str] = []
    args = list(command.args)
    i = 0
    while i < len(args):
        a = args[i]
        for flag in ("-D", "-U", "-I", "-isystem", "-include"):
            if a == flag and i + 1 < len(args):
                val = args[i + 1]
                i += 1
            elif a.startswith(flag) and len(a) > len(flag) and flag != "-include":
                val = a[len(flag):]
            else:
                continue
            if flag in {"-I", "-isystem", "-include"}:
                val = str((command.directory / val).resolve())
            out += [flag, val]
            break
        i += 1
    return out


def _run(cpp: str, flags: list[str], src: Path, stub_dir: Path, lang: str) -> subprocess.CompletedProcess[str]:
    argv = [cpp, "-x", "c++", "-std=c++17", "-dM", "-E", "-w", *_LANG_DEFINES.get(lang, []), *flags, f"-I{grammars_dir() / 'shim' / 'include'}",
            "-idirafter", str(stub_dir), str(src)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


def _parse(out: str) -> tuple[dict[str, str], set[str]]:
    values: dict[str, str] = {}
    fn: set[str] = set()
    for line in out.splitlines():
        m = _DM.match(line)
        if not m:
            continue
        if m.group(2) is not None:
            fn.add(m.group(1))
        else:
            values[m.group(1)] = m.group(3).strip()
    return values, fn


def unit_macros(unit: Path, command: CompileCommand | None, lang: str = "cuda", max_stubs: int = 60) -> UnitMacros:
    """The macros defined at the end of `unit` under its flags; `ok` is False when no preprocessor could run it."""
    cpp = _cpp()
    if cpp is None:
        return UnitMacros(how="no C preprocessor (cpp) on this machine")
    flags = _flags(command)
    with tempfile.TemporaryDirectory(prefix="s2s-cpp-") as tmp:
        stub_dir = Path(tmp, "stubs")
        stub_dir.mkdir()
        empty = Path(tmp, "empty.h")
        empty.write_text("")
        stubbed: list[str] = []
        try:
            for _ in range(max_stubs + 1):
                p = _run(cpp, flags, unit, stub_dir, lang)
                m = _MISSING.search(p.stderr)
                if p.returncode == 0 or not m:
                    break
                name = m.group(1).strip()
                target = (stub_dir / name).resolve()
                if not target.is_relative_to(stub_dir.resolve()) or target.exists() or len(stubbed) >= max_stubs:
                    break
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text("")
                stubbed.append(name)
            if p.returncode != 0:
                first = next((ln for ln in p.stderr.splitlines() if "error" in ln), p.stderr.strip()[:200])
                return UnitMacros(how=f"the preprocessor failed on {unit.name}: {first}", stubbed=stubbed)
            base = _run(cpp, flags, empty, stub_dir, lang)
        except (OSError, subprocess.TimeoutExpired) as why:
            return UnitMacros(how=f"the preprocessor could not run: {why}")
    values, fn = _parse(p.stdout)
    predefined, _ = _parse(base.stdout)
    own = {k: v for k, v in values.items() if predefined.get(k) != v or k in _flag_names(flags)}
    how = f"cpp -dM -E on {unit.name}" + (" with the unit's flags" if flags else " (no compile flags known)")
    return UnitMacros(values=own, function_like=fn, how=how, stubbed=stubbed, ok=True)


def _flag_names(flags: list[str]) -> set[str]:
    return {flags[i + 1].partition("=")[0] for i in range(len(flags) - 1) if flags[i] == "-D"}


def define_sites(files: list[tuple[str, bytes]], names: set[str]) -> dict[str, list[tuple[str, int, str]]]:
    """Where each name is #defined among the unit's files: {name: [(rel, line, value text)]}, in file order."""
    pat = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)(?![\w(])[ \t]*([^\n]*?)[ \t]*(?://[^\n]*)?\r?$", re.M)
    out: dict[str, list[tuple[str, int, str]]] = {}
    for rel, data in files:
        for m in pat.finditer(data):
            name = m.group(1).decode()
            if name in names:
                out.setdefault(name, []).append((rel, data.count(b"\n", 0, m.start()) + 1,
                                                 m.group(2).decode("utf-8", "replace").strip()))
    return out


def macro_table(units: list[tuple[Path, CompileCommand | None]], files: dict[Path, bytes], base: Path, lang: str,
                defines: dict[str, str], flag_where: str) -> tuple[dict[str, tuple[str, str]], list[str]] | None:
    """{name: (value, where)} of the object-like macros the given units see (the first unit wins a name), and notes;
    None when the preprocessor could not run any of them (the caller then reads the units' own files)."""
    table: dict[str, tuple[str, str]] = {k: (v, f"-D{k}={v} in {flag_where}") for k, v in defines.items()}
    notes: list[str] = []
    ran = False
    seen: set[Path] = set()
    for unit, command in units:
        if unit in seen:
            continue
        seen.add(unit)
        um = unit_macros(unit, command, lang)
        if not um.ok:
            notes.append(f"macros of {_rel(unit, base)}: {um.how}")
            continue
        ran = True
        if um.stubbed:
            notes.append(f"macros of {_rel(unit, base)} read with the preprocessor; {', '.join(um.stubbed[:6])}"
                         f"{' ...' if len(um.stubbed) > 6 else ''} not found on this machine (read as empty): values "
                         "from there are FILL-IN")
        wanted = set(um.values) - set(table)
        sites = define_sites([(_rel(p, base), d) for p, d in files.items()], wanted)
        for name in sorted(wanted):
            value = um.values[name]
            where = [f"{rel}:{line}" for rel, line, text in sites.get(name, []) if " ".join(text.split()) == value]
            place = f"#define at {where[0]}" if len(where) == 1 else f"#define seen by {_rel(unit, base)}"
            table[name] = (value, f"{place} ({um.how})")
    return (table, notes) if ran else None


def _rel(p: Path, base: Path) -> str:
    try:
        return p.relative_to(base).as_posix()
    except ValueError:
        return p.as_posix()
