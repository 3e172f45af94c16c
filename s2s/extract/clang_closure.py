"""libclang as the semantic oracle: the closure of a kernel as the compiler resolves it.

The name-based closure (closure.py) guesses by names; this module parses the kernel's translation
unit with its real compile flags and follows what clang resolved: the overload a call picked, the
macro definition an expansion used under the `-D` flags, the typedef behind a template argument
at a launch site. Each declaration clang points at (and its definition) is mapped back to the
verbatim top-level item (decls.Decl) whose byte range contains it, and the cursors inside that
item are followed in turn until nothing new turns up. Items come out in the order their text has
in the unit (the #include chain, then the offset), so dependencies precede their users.

What clang does not record is filled in by name: macros named inside other macros' bodies and in
`#if` lines (the preprocessing record only has expansions in the file text), device functions
that are only declared in the unit (defined in another one, -rdc), and names that an error left
unresolved (`no matching function for call to 'f'`).

How the unit is parsed, and what was found on the development machine (Debian 12, libclang 18.1.1
from PyPI, nvcc 13.0, no `clang` on PATH but `clang-15` and `libclang-common-15-dev` installed):

* `-x cuda --cuda-host-only -nocudainc -nocudalib`, with `grammars/shim/s2s_cuda_shim.h` forced in
  (`-include`) and `grammars/shim/include` first among the system include directories, so that
  `<cuda_runtime.h>`, `<cuda.h>`, `<hip/hip_runtime.h>`, ... are stubs that include the shim. It
  defines the CUDA qualifiers as clang's attributes and declares the built-in variables, vector
  types, atomics, warp functions, the runtime API and `__cudaPushCallConfiguration` (for
  `<<<...>>>`). clang's CUDA wrapper headers are not used: PyPI's libclang ships none, and CUDA 13
  is newer than libclang 18 supports. `-I` directories holding CUDA or HIP runtime headers (a
  toolkit, or s2s's own nvcc HIP shim) are dropped for the same reason, with a note.
* Only `-D -U -I -isystem -include -std` (and nvcc's long spellings) are kept from the command;
  relative paths are resolved against its `directory`. `-std=c++17` (nvcc's default) otherwise.
* PyPI's libclang has no resource headers (`stddef.h`, ...). The first of `$S2S_CLANG_RESOURCE_DIR`,
  `clang[-NN] -print-resource-dir`, `/usr/lib/llvm-*/lib/clang/*`, `/usr/lib/clang/*` that holds
  `include/stddef.h` is passed as `-resource-dir`, libclang's own major version first. Here only
  clang 15's exists (`/usr/lib/llvm-15/lib/clang/15.0.6`); it works with libclang 18 for the C and
  C++ library headers. Without any, gcc's `/usr/lib/gcc/<target>/<N>/include` stands in (also
  tested here: the samples and `<iostream>`/`<vector>` parse cleanly that way).
* clang rejects calls from device code to host functions even in the host pass, so the shim
  includes the C headers (not libstdc++'s wrappers) under `#pragma clang force_cuda_host_device`,
  as clang's own wrapper does. `__noinline__` is a clang keyword in CUDA mode and is not defined.
* `__CUDA_ARCH__` is defined only in the device pass. When the unit's files mention it, the unit is
  parsed a second time with `--cuda-device-only --cuda-gpu-arch=sm_90` and both closures are kept:
  the extracted file is compiled by both passes.
* A fatal error (a header not found) makes libclang unusable for the unit: ClangUnavailable with
  its file:line, and the caller falls back to the name-based closure. Other errors are tolerated:
  an undeclared identifier in the closure is reported as missing unless it is a CUDA built-in;
  errors outside the closure are counted in a note.
* A parse takes 0.1-0.4 s (0.6 s with half of the C++ standard library included).
"""
from __future__ import annotations

import bisect
import functools
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from s2s.base.records import Kernel
from s2s.base.resources import grammars_dir
from s2s.scan.compdb import CompileCommand

from .closure import DeclIndex, choose, is_builtin, name_closure
from .decls import Decl, file_decls


class ClangUnavailable(Exception):
    """libclang cannot give the closure for this kernel; the message says why."""


Missing = tuple[str, str, int]
_LAST = 1 << 60  # position of what lies outside the translation unit: after everything in it
_VALUE_FLAGS = {"-D": "-D", "--define-macro": "-D", "-U": "-U", "--undefine-macro": "-U", "-I": "-I",
                "--include-path": "-I", "-isystem": "-isystem", "--system-include": "-isystem",
                "-include": "-include", "--pre-include": "-include", "-std": "-std=", "--std": "-std="}
_JOINED = ("-isystem", "-include", "-std=", "-I", "-D", "-U")  # longest first: "-include" is not "-I"
_PATH_FLAGS = {"-I", "-isystem", "-include"}
# nvcc and clang options whose value is a separate argument: skipped with it
_SKIP_WITH_VALUE = {"-o", "-x", "-arch", "-code", "-gencode", "-Xcompiler", "-Xptxas", "-Xlinker", "-Xnvlink",
                    "-Xarch_device", "-Xarch_host", "-ccbin", "--compiler-bindir", "-maxrregcount", "-MF", "-MT",
                    "-MQ", "-L", "-l", "-odir", "--output-file", "--keep-dir", "-t", "--threads",
                    "--gpu-architecture", "--gpu-code", "--generate-code", "-rdc", "--relocatable-device-code",
                    "--options-file", "-optf", "-target"}
_TOOLKIT_HEADERS = ("cuda_runtime.h", "cuda_runtime_api.h", "hip/hip_runtime.h")
_UNDECLARED = re.compile(r"^(?:use of undeclared identifier|unknown type name|no template named) '([A-Za-z_]\w*)'")
_QUOTED = re.compile(r"'([A-Za-z_][\w:]*)'")
_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(?:if|ifdef|ifndef|elif|elifdef|elifndef)\b(.*)$", re.M)
_IDENT = re.compile(r"[A-Za-z_]\w*")


# ------------------------------------------------------------------------------------ libclang


def _cindex() -> Any:
    try:
        from clang import cindex
    except ImportError as exc:
        raise ClangUnavailable(f"the Python package 'libclang' is not installed ({exc})") from None
    try:
        cindex.Index.create()
    except Exception as exc:  # cindex raises LibclangError, or OSError from ctypes
        raise ClangUnavailable(f"libclang cannot be loaded: {exc}") from None
    return cindex


@functools.lru_cache(maxsize=1)
def libclang_version() -> str:
    try:
        from importlib.metadata import version

        return version("libclang")
    except Exception:
        return "unknown"


def _major(text: str) -> int:
    m = re.match(r"\d+", text)
    return int(m.group()) if m else 0


@functools.lru_cache(maxsize=1)
def resource_dir() -> Path | None:
    """clang's resource directory (builtin headers), preferring libclang's own major version."""
    env = os.environ.get("S2S_CLANG_RESOURCE_DIR")
    candidates: list[Path] = [Path(env)] if env else []
    for exe in _clang_executables():
        try:
            res = subprocess.run([exe, "-print-resource-dir"], capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.SubprocessError):
            continue
        if res.returncode == 0 and res.stdout.strip():
            candidates.append(Path(res.stdout.strip()))
    for pattern in ("/usr/lib/llvm-*/lib/clang/*", "/usr/lib/clang/*", "/usr/local/lib/clang/*"):
        candidates.extend(sorted(Path("/").glob(pattern.lstrip("/"))))
    usable = list(dict.fromkeys(c.resolve() for c in candidates if (c / "include" / "stddef.h").is_file()))
    if not usable:
        return None
    if env and Path(env).resolve() in usable:
        return Path(env).resolve()
    want = _major(libclang_version())
    return max(usable, key=lambda p: (_major(p.name) == want, _major(p.name)))


def _clang_executables() -> list[str]:
    found: dict[str, int] = {}
    for d in os.environ.get("PATH", "").split(os.pathsep):
        try:
            names = os.listdir(d) if d else []
        except OSError:
            continue
        for name in names:
            m = re.fullmatch(r"clang(?:-(\d+))?", name)
            if m and name not in found and shutil.which(name):
                found[name] = int(m.group(1) or 999)
    return sorted(found, key=lambda n: -found[n])


@functools.lru_cache(maxsize=1)
def _gcc_include() -> Path | None:
    dirs = [p.parent for p in Path("/usr/lib/gcc").glob("*/*/include/stddef.h")]
    return max(dirs, key=lambda p: _major(p.parent.name)) if dirs else None


# ------------------------------------------------------------------------------------ flags


def unit_flags(command: CompileCommand) -> tuple[list[str], list[str]]:
    """The flags of the command that shape the parse (-D -U -I -isystem -include -std), and notes."""
    out: list[str] = []
    notes: list[str] = []
    args = list(command.args[1:])
    i = 0
    while i < len(args):
        a = args[i]
        flag, value = "", ""
        if a in _VALUE_FLAGS:
            flag, value = _VALUE_FLAGS[a], args[i + 1] if i + 1 < len(args) else ""
            i += 1
        elif a.startswith("--") and a.split("=", 1)[0] in _VALUE_FLAGS:
            flag, value = _VALUE_FLAGS[a.split("=", 1)[0]], a.split("=", 1)[1]
        elif a in _SKIP_WITH_VALUE:
            i += 1
        else:
            for prefix in _JOINED:
                if a.startswith(prefix) and len(a) > len(prefix):
                    flag, value = prefix, a[len(prefix):]
                    break
        i += 1
        if not flag or not value:
            continue
        if flag in _PATH_FLAGS:
            path = Path(value) if Path(value).is_absolute() else command.directory / value
            if flag != "-include" or path.exists():
                value = str(path.resolve())
            if flag != "-include" and any((Path(value) / h).is_file() for h in _TOOLKIT_HEADERS):
                notes.append(f"libclang: {value} holds CUDA/HIP runtime headers; s2s's parsing shim stands in for them")
                continue
        out += [flag + value] if flag.endswith("=") else [flag, value]
    return out, notes


def clang_args(command: CompileCommand, device: bool = False) -> tuple[list[str], list[str]]:
    shim = grammars_dir() / "shim"
    args = ["-x", "cuda", "-nocudainc", "-nocudalib", "-w", "-ferror-limit=0", "-working-directory", str(command.directory)]
    args += ["--cuda-device-only", "--cuda-gpu-arch=sm_90"] if device else ["--cuda-host-only"]
    res = resource_dir()
    notes: list[str] = []
    if res is not None:
        args += ["-resource-dir", str(res)]
        notes.append(f"resource dir: {res}")
    args += ["-isystem", str(shim / "include"), "-include", str(shim / "s2s_cuda_shim.h")]
    if res is None:
        gcc = _gcc_include()
        if gcc is not None:
            args += ["-isystem", str(gcc)]
        notes.append(f"no clang resource headers found; {gcc or 'nothing'} stands in for stddef.h and stdarg.h")
    flags, more = unit_flags(command)
    if not any(f.startswith("-std=") for f in flags):
        args.append("-std=c++17")  # nvcc's default since CUDA 11
    return args + flags, notes + more


def parse_unit(unit: Path, args: list[str], files: dict[Path, Any]) -> Any:
    """The translation unit, or ClangUnavailable at its first fatal error (a header not found)."""
    ci = _cindex()
    try:
        tu = ci.Index.create().parse(str(unit), args=args, options=ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD)
    except ci.TranslationUnitLoadError as exc:
        raise ClangUnavailable(f"libclang could not parse {unit.name}: {exc}") from None
    for d in tu.diagnostics:
        if d.severity >= ci.Diagnostic.Fatal:
            name = d.location.file.name if d.location.file else str(unit)
            source = files.get(Path(name).resolve())
            raise ClangUnavailable(f"{source.rel if source is not None else name}:{d.location.line}: {d.spelling}")
    return tu


# ------------------------------------------------------------------------------------ the unit


@dataclass
class _Unit:
    """One parse of a translation unit, its cursors bucketed by the tree file they lie in."""

    tu: Any
    files: dict[Path, Any]  # the tree's SourceFiles
    decls: dict[Path, Any] = field(default_factory=dict)  # top-level cursors: path -> [(start, end, cursor)]
    expansions: dict[Path, list[tuple[int, Any]]] = field(default_factory=dict)
    definitions: dict[str, list[tuple[Path, int]]] = field(default_factory=dict)  # active macro definitions
    def_cursors: dict[Path, list[tuple[int, Any]]] = field(default_factory=dict)
    _paths: dict[str, Path] = field(default_factory=dict)
    _keys: dict[Path, tuple[int, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from clang.cindex import CursorKind as K

        containers = {K.NAMESPACE, K.LINKAGE_SPEC, K.UNEXPOSED_DECL}
        stack = list(self.tu.cursor.get_children())
        stack.reverse()
        while stack:
            c = stack.pop()
            kind = c.kind
            if kind == K.INCLUSION_DIRECTIVE:
                continue
            if kind in (K.MACRO_INSTANTIATION, K.MACRO_DEFINITION):
                path = self.path_of(c.location.file)
                if path is None:
                    continue
                off = c.location.offset
                if kind == K.MACRO_INSTANTIATION:
                    self.expansions.setdefault(path, []).append((off, c))
                else:
                    self.definitions.setdefault(c.spelling, []).append((path, off))
                    self.def_cursors.setdefault(path, []).append((off, c))
                continue
            start, end = c.extent.start, c.extent.end
            path = self.path_of(start.file)
            if path is None:
                continue
            if kind in containers:
                stack.extend(reversed(list(c.get_children())))
            else:
                self.decls.setdefault(path, []).append((start.offset, end.offset, c))
        self._positions()

    def path_of(self, f: Any) -> Path | None:
        """The tree file a clang File is, or None (a system header, the shim, the command line)."""
        p = self.resolved(f)
        return p if p in self.files else None

    def resolved(self, f: Any) -> Path | None:
        if f is None:
            return None
        name = f.name
        if name not in self._paths:
            self._paths[name] = Path(name).resolve()
        return self._paths[name]

    def _positions(self) -> None:
        """Where each file's text enters the unit: the offsets of the #include chain leading to it."""
        edges: dict[Path, list[tuple[Path | None, int]]] = {}
        for inc in self.tu.get_includes():
            dst = self.resolved(inc.include)
            if dst is not None:
                edges.setdefault(dst, []).append((self.resolved(inc.source), inc.location.offset))
        self._keys[Path(self.tu.spelling).resolve()] = ()
        busy: set[Path] = set()

        def key(p: Path | None) -> tuple[int, ...]:
            if p is None:
                return (-1,)  # -include and the predefines come before the unit's own text
            if p in self._keys:
                return self._keys[p]
            busy.add(p)
            options = [key(src) + (off,) for src, off in edges.get(p, []) if src not in busy]
            busy.discard(p)
            self._keys[p] = min(options) if options else (_LAST,)
            return self._keys[p]

        for p in edges:
            if p in self.files:
                key(p)

    def position(self, path: Path, offset: int) -> tuple[int, ...]:
        return self._keys.get(path, (_LAST,)) + (offset,)

    def cursors_in(self, path: Path, start: int, end: int) -> Iterator[Any]:
        for s, e, c in self.decls.get(path, []):
            if s < end and e > start:
                yield c

    def expansions_in(self, path: Path, start: int, end: int) -> Iterator[Any]:
        for off, c in self.expansions.get(path, []):
            if start <= off < end:
                yield c

    def macro_definition(self, name: str, before: tuple[int, ...]) -> tuple[Path, int] | None:
        """The definition of macro `name` in effect at a position (the last one before it)."""
        defs = self.definitions.get(name, [])
        earlier = [d for d in defs if self.position(*d) < before]
        return max(earlier, key=lambda d: self.position(*d)) if earlier else (defs[0] if defs else None)


# ------------------------------------------------------------------------------------ the closure


@dataclass
class _Closure:
    """The items chosen so far, where each lies in the unit, and what could not be resolved."""

    kernel: Kernel
    kernel_path: Path
    index: DeclIndex
    chosen: dict[tuple[str, int], Decl] = field(default_factory=dict)
    paths: dict[tuple[str, int], Path] = field(default_factory=dict)  # items inside the unit
    positions: dict[tuple[str, int], tuple[int, ...]] = field(default_factory=dict)
    missing: list[Missing] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    _file_decls: dict[Path, tuple[list[int], list[Decl]]] = field(default_factory=dict)
    _by_rel: dict[str, Path] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._by_rel = {str(s.rel): p for p, s in self.index.files.items()}

    def decl_at(self, path: Path, offset: int) -> Decl | None:
        if path not in self._file_decls:
            ds = [d for d in file_decls(self.index.files[path]) if d.kind != "include"]
            self._file_decls[path] = ([d.start for d in ds], ds)
        starts, ds = self._file_decls[path]
        i = bisect.bisect_right(starts, offset) - 1
        return ds[i] if i >= 0 and offset < ds[i].end else None

    def path_of(self, d: Decl) -> Path | None:
        return self._by_rel.get(d.file)

    def definitions_of(self, name: str) -> list[Decl]:
        """Definitions of a function or variable anywhere in the tree (DeclIndex stops at declarations in the unit)."""
        pattern = re.compile(rb"\b" + re.escape(name.encode()) + rb"\b")
        out = []
        for path, source in self.index.files.items():
            if not pattern.search(source.data):
                continue
            self.decl_at(path, 0)
            out += [d for d in self._file_decls[path][1] if name in d.names and
                    (("{" in d.text and d.kind in {"function", "block"}) or
                     (d.kind == "variable" and not d.text.lstrip().startswith("extern")))]
        return out

    def in_kernel(self, path: Path, offset: int) -> bool:
        return path == self.kernel_path and self.kernel.start_byte <= offset < self.kernel.end_byte

    def has(self, d: Decl) -> bool:
        return (d.file, d.start) in self.chosen or (d.file == self.kernel.file and d.start == self.kernel.start_byte)

    def add(self, d: Decl, path: Path | None, position: tuple[int, ...]) -> bool:
        if self.has(d):
            return False
        key = (d.file, d.start)
        self.chosen[key] = d
        self.positions[key] = position
        if path is not None:
            self.paths[key] = path
        return True

    def ranges(self) -> Iterator[tuple[Path, int, int]]:
        yield self.kernel_path, self.kernel.start_byte, self.kernel.end_byte
        for key, path in list(self.paths.items()):
            d = self.chosen[key]
            yield path, d.start, d.end

    def ordered(self) -> list[Decl]:
        """Unit order: an item whose text comes first in the unit comes first; outside items last."""
        return [self.chosen[k] for k in sorted(self.chosen, key=lambda k: self.positions[k])]


def _targets(ref: Any, ci: Any) -> Iterable[Any]:
    if ref.kind == ci.CursorKind.OVERLOADED_DECL_REF:
        lib = ci.conf.lib
        return [lib.clang_getOverloadedDecl(ref, i) for i in range(lib.clang_getNumOverloadedDecls(ref))]
    return [ref]


def _local(c: Any, ci: Any) -> bool:
    """A declaration inside a function's body (a host variable, a local type): its item would be the whole function."""
    K = ci.CursorKind
    parent = c.semantic_parent
    return parent is not None and parent.kind in (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE, K.CXX_METHOD, K.CONSTRUCTOR,
                                                  K.DESTRUCTOR, K.LAMBDA_EXPR)


def _device_side(c: Any, ci: Any) -> bool:
    K = ci.CursorKind
    return any(ch.kind in (K.CUDADEVICE_ATTR, K.CUDAGLOBAL_ATTR, K.CUDACONSTANT_ATTR, K.CUDASHARED_ATTR)
               for ch in c.get_children())


class _Walker:
    """Follows clang's references from the kernel through every item they lead to, in one parse."""

    def __init__(self, unit: _Unit, closure: _Closure, ci: Any) -> None:
        self.unit, self.cl, self.ci = unit, closure, ci
        K = ci.CursorKind
        self.ref_kinds = {K.DECL_REF_EXPR, K.MEMBER_REF_EXPR, K.TYPE_REF, K.TEMPLATE_REF, K.CALL_EXPR, K.NAMESPACE_REF,
                          K.OVERLOADED_DECL_REF, K.MEMBER_REF, K.VARIABLE_REF}
        self.by_name_kinds = {K.FUNCTION_DECL, K.FUNCTION_TEMPLATE, K.VAR_DECL}
        self.resolved = 0
        self.seen_errors: set[tuple[Path, int, str]] = set()
        self.use_site = unit.position(closure.kernel_path, closure.kernel.start_byte)
        self.work: list[tuple[Path, int, int]] = []

    def kernel_cursor(self) -> Any:
        K, k = self.ci.CursorKind, self.cl.kernel
        for c in self.unit.cursors_in(self.cl.kernel_path, k.start_byte, k.end_byte):
            if c.kind in (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE) and c.spelling == k.name and c.is_definition():
                return c
        return None

    def run(self) -> None:
        self.work = [(self.cl.kernel_path, self.cl.kernel.start_byte, self.cl.kernel.end_byte)]
        self.work += [(p, self.cl.chosen[k].start, self.cl.chosen[k].end) for k, p in self.cl.paths.items()]
        targets = list(self.launch_arguments())
        done: set[tuple[Path, int]] = set()
        while self.work or targets:
            while self.work or targets:
                if not targets:
                    path, start, end = self.work.pop()
                    if (path, start) in done:
                        continue
                    done.add((path, start))
                    targets = list(self.targets_in(path, start, end))
                for target_path, offset in targets:
                    d = self.cl.decl_at(target_path, offset)
                    if d is not None:
                        self.take(d, target_path)
                    elif not self.cl.in_kernel(target_path, offset):
                        self.cl.notes.append(f"libclang: no top-level item of {self.rel(target_path)} covers byte {offset}")
                targets = []
            self.errors()

    def take(self, d: Decl, path: Path) -> None:
        if self.cl.add(d, path, self.unit.position(path, d.start)):
            self.work.append((path, d.start, d.end))

    def rel(self, path: Path) -> str:
        return str(self.cl.index.files[path].rel)

    def targets_in(self, path: Path, start: int, end: int) -> Iterator[tuple[Path, int]]:
        """(file, offset) of every declaration the code in a range refers to, inside the tree."""
        for c in self.unit.cursors_in(path, start, end):
            for node in c.walk_preorder():
                if node.kind in self.ref_kinds:
                    ref = node.referenced
                    if ref is not None:
                        yield from self.declarations(ref)
        for exp in self.unit.expansions_in(path, start, end):
            yield from self.expansion(exp)
        source = self.cl.index.files[path].data[start:end].decode("utf-8", "replace")
        names = [n for m in _DIRECTIVE.finditer(source) for n in _IDENT.findall(m.group(1)) if n != "defined"]
        for off, c in self.unit.def_cursors.get(path, []):
            if start <= off < end:
                names += _macro_body_names(c)
        yield from self.macros(names)

    def expansion(self, exp: Any) -> Iterator[tuple[Path, int]]:
        """The macro definition an expansion used (by name if clang lost track of it)."""
        ref = exp.referenced
        if ref is None:
            yield from self.macros([exp.spelling])
            return
        path = self.unit.path_of(ref.location.file)
        if path is not None:
            yield path, ref.location.offset

    def declarations(self, ref: Any) -> Iterator[tuple[Path, int]]:
        """The declaration clang resolved a reference to, and its definition."""
        for t in _targets(ref, self.ci):
            if t.kind == self.ci.CursorKind.NAMESPACE:
                continue  # items carry their namespace with them
            path = self.unit.path_of(t.location.file)
            if path is None or self.cl.in_kernel(path, t.location.offset):
                continue
            self.resolved += 1
            yield path, t.location.offset
            if t.kind == self.ci.CursorKind.CLASS_TEMPLATE:  # its explicit specializations (`template <> struct
                yield from self.specializations(t.spelling)  # S<float> {...}`): the instance a launch makes may be one
            definition = t.get_definition()
            dpath = self.unit.path_of(definition.location.file) if definition is not None else None
            if definition is not None and dpath is not None:
                yield dpath, definition.location.offset
            elif definition is None and t.kind in self.by_name_kinds and _device_side(t, self.ci):
                for d in choose(self.cl.definitions_of(t.spelling), self.cl.kernel):
                    self.place(d, f"{t.spelling} is defined in {d.file}:{d.line}, outside the kernel's translation unit "
                                  "(separate compilation, -rdc); copied into the MEP with its dependencies found by name")

    def specializations(self, name: str) -> Iterator[tuple[Path, int]]:
        """The explicit specializations of a class template, by the index: in a template kernel's body clang refers to
        the primary template only."""
        cands, _outside = self.cl.index.lookup(name)
        for d in choose(cands, self.cl.kernel)[1:]:
            path = self.cl.path_of(d)
            if path is not None:
                yield path, d.start

    def macros(self, names: Iterable[str]) -> Iterator[tuple[Path, int]]:
        for name in dict.fromkeys(names):
            found = self.unit.macro_definition(name, self.use_site)
            if found is not None:
                yield found

    def launch_arguments(self) -> Iterator[tuple[Path, int]]:
        """Template arguments at the kernel's launches in this unit: `k<real_t><<<...>>>` needs real_t."""
        ci, k = self.ci, self.cl.kernel
        kc = self.kernel_cursor()
        if kc is None or kc.kind != ci.CursorKind.FUNCTION_TEMPLATE:
            return
        name = k.name.encode()
        for path, cursors in self.unit.decls.items():
            data = self.cl.index.files[path].data
            for s, e, c in cursors:
                if name not in data[s:e] or self.cl.in_kernel(path, s):
                    continue
                for node in c.walk_preorder():
                    if node.kind != ci.CursorKind.DECL_REF_EXPR or node.spelling != k.name:
                        continue
                    ref = node.referenced
                    if ref is None or not self.cl.in_kernel(self.unit.path_of(ref.location.file) or Path(),
                                                            ref.location.offset):
                        continue
                    for arg in node.walk_preorder():
                        if arg.kind in self.ref_kinds and arg != node and arg.referenced is not None \
                                and not _local(arg.referenced, ci):  # `k<bs><<<...>>>` with a host variable bs: not
                            yield from self.declarations(arg.referenced)  # its function (no item of the kernel file)
                    ext = node.extent
                    npath = self.unit.path_of(ext.start.file)
                    if npath is not None:
                        for exp in self.unit.expansions_in(npath, ext.start.offset, ext.end.offset):
                            yield from self.expansion(exp)

    def errors(self) -> None:
        """Errors inside the closure: undeclared names are missing, unresolved ones are looked up by name."""
        ranges = list(self.cl.ranges())
        for d in self.unit.tu.diagnostics:
            if d.severity < self.ci.Diagnostic.Error:
                continue
            path = self.unit.path_of(d.location.file)
            off = d.location.offset
            if path is None or (path, off, d.spelling) in self.seen_errors:
                continue
            if not any(p == path and s <= off < e for p, s, e in ranges):
                continue
            self.seen_errors.add((path, off, d.spelling))
            where = f"{self.rel(path)}:{d.location.line}"
            m = _UNDECLARED.match(d.spelling)
            names = [m.group(1)] if m else [n.split("::")[-1] for n in _QUOTED.findall(d.spelling)]
            for name in names:
                if self.by_name(name, f"libclang: {where}: {d.spelling}") or not m:
                    continue
                if is_builtin(name):
                    self.cl.notes.append(f"{where}: '{name}' is not declared by s2s's CUDA parsing shim "
                                         "(a CUDA built-in; left to nvcc)")
                else:
                    self.cl.missing.append((name, self.rel(path), d.location.line))

    def other_errors(self) -> list[str]:
        out = []
        for d in self.unit.tu.diagnostics:
            path = self.unit.path_of(d.location.file)
            if d.severity >= self.ci.Diagnostic.Error and (path, d.location.offset, d.spelling) not in self.seen_errors:
                where = self.rel(path) if path is not None else (d.location.file.name if d.location.file else "?")
                out.append(f"{where}:{d.location.line}: {d.spelling}")
        return out

    def by_name(self, name: str, why: str) -> bool:
        """Definitions of `name` by the tree-sitter index, for what clang could not resolve. Any found?"""
        cands, _outside = self.cl.index.lookup(name)
        picked = choose(cands, self.cl.kernel)
        for d in picked:
            self.place(d, f"{name} comes from {d.file}:{d.line}, outside the kernel's translation unit ({why}); "
                          "copied into the MEP with its dependencies found by name")
        return bool(picked)

    def place(self, d: Decl, note: str) -> None:
        """An item found by name: walked by clang if the unit compiles it, else closed over by name."""
        if self.cl.has(d):
            return
        path = self.cl.path_of(d)
        if path is not None and any(True for _ in self.unit.cursors_in(path, d.start, d.end)):
            self.take(d, path)
            return
        self.cl.notes.append(note)
        deps, _missing, _more = name_closure(self.cl.kernel, d.text, self.cl.index)
        for dep in deps:
            dpath = self.cl.path_of(dep)
            if dpath is not None and any(True for _ in self.unit.cursors_in(dpath, dep.start, dep.end)):
                self.take(dep, dpath)
            else:
                self.cl.add(dep, None, (_LAST, len(self.cl.chosen)))
        self.cl.add(d, None, (_LAST, len(self.cl.chosen)))


def _macro_body_names(c: Any) -> list[str]:
    """Identifiers in the replacement list of a macro definition (its parameters left out)."""
    from clang.cindex import TokenKind

    tokens = list(c.get_tokens())
    if not tokens:
        return []
    body = tokens[1:]
    params: set[str] = set()
    if body and body[0].spelling == "(" and body[0].extent.start.offset == tokens[0].extent.end.offset:
        close = next((i for i, t in enumerate(body) if t.spelling == ")"), len(body) - 1)
        params = {t.spelling for t in body[1:close] if t.kind == TokenKind.IDENTIFIER}
        body = body[close + 1:]
    return [t.spelling for t in body if t.kind == TokenKind.IDENTIFIER and t.spelling not in params]


# ------------------------------------------------------------------------------------ entry point


def refine_with_clang(kernel: Kernel, kernel_path: Path, unit: Path, command: CompileCommand | None, items: list[Decl],
                      decl_index: DeclIndex, missing: list[Missing]) -> tuple[list[Decl], list[Missing], list[str]]:
    """The kernel's closure as libclang resolves it under the unit's compile flags.

    `items` and `missing` are the name-based closure's answer, used only to say what clang did
    differently. Raises ClangUnavailable when libclang cannot be used for this unit.
    """
    unit_rel = decl_index.files[unit].rel if unit in decl_index.files else unit.name
    if kernel.language == "opencl":
        raise ClangUnavailable("OpenCL C kernels are compiled at run time, with no compile command to parse them with")
    if command is None:
        raise ClangUnavailable(f"no compile flags for {unit_rel}; give compile_commands.json (--compile-commands) "
                               "to resolve overloads, macros and templates with libclang")
    ci = _cindex()
    closure = _Closure(kernel, kernel_path, decl_index)
    passes = ["host"]
    if any(b"__CUDA_ARCH__" in decl_index.files[p].data for p in decl_index.rank if p in decl_index.files):
        passes.append("device")  # the two passes see different code: keep what either needs
    resolved, setup, ignored = 0, list[str](), list[str]()
    for which in passes:
        args, setup = clang_args(command, device=which == "device")
        walker = _Walker(_Unit(parse_unit(unit, args, decl_index.files), decl_index.files), closure, ci)
        if walker.kernel_cursor() is None:
            if which == "device":
                continue
            raise ClangUnavailable(f"{kernel.qualified} ({kernel.file}:{kernel.line}) is not compiled in {unit_rel} "
                                   "under its flags (an inactive #if branch?)")
        walker.run()
        resolved += walker.resolved
        ignored += walker.other_errors()
    order = closure.ordered()
    notes = [f"libclang {libclang_version()} ({' and '.join(passes)} pass{'es' if len(passes) > 1 else ''} of {unit_rel}): "
             f"{resolved} references resolved to {len(order)} items; " + "; ".join(setup)]
    if ignored:
        notes.append(f"libclang: {len(ignored)} errors outside the kernel's closure ignored (first: {ignored[0]})")
    notes += _differences(items, order)
    notes += closure.notes
    return order, list(dict.fromkeys(closure.missing)), list(dict.fromkeys(notes))


def _differences(names: list[Decl], clang: list[Decl]) -> list[str]:
    mine = {(d.file, d.start) for d in clang}
    theirs = {(d.file, d.start) for d in names}
    out = []
    for d in names:
        if (d.file, d.start) not in mine:
            out.append(f"libclang: {d.kind} {', '.join(d.names)} ({d.file}:{d.line}) is not used under the unit's flags; "
                       "left out (the name-based closure had it)")
    for d in clang:
        if (d.file, d.start) not in theirs:
            out.append(f"libclang: {d.kind} {', '.join(d.names)} ({d.file}:{d.line}) is needed; the name-based closure missed it")
    return out
