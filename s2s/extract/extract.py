"""Stage 2: pull a kernel and everything it depends on out of its tree, verbatim, with provenance."""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from s2s.base.errors import UserError
from s2s.base.fsutil import atomic_write
from s2s.base.paths import comment_text
from s2s.base.records import Index, Kernel, LaunchSite
from s2s.scan.compdb import CompileCommand, find_compdb, load_compdb
from s2s.scan.includes import IncludeGraph
from s2s.scan.ranking import launches_of
from s2s.scan.sources import (
    SourceFile,
    check_tree,
    foreign_includes,
    included_closure,
    iter_source_paths,
    read_source,
    tree_include_dirs,
)
from s2s.scan.tree import find_kernel, scan_tree

from .closure import DeclIndex, name_closure
from .decls import Decl

KERNEL_EXT = {"cuda": ".cu", "hip": ".hip.cpp", "opencl": ".cl"}


@dataclass
class Extraction:
    kernel: Kernel
    unit: str  # the translation unit the kernel was extracted in, relative to the tree
    mode: str  # "clang" | "names"
    text: str  # the extracted file
    kernel_range: tuple[int, int]  # byte range of the kernel in `text`
    items: list[Decl]
    launches: list[LaunchSite]
    compile: CompileCommand | None
    defines: dict[str, str]
    notes: list[str] = field(default_factory=list)
    out_dir: Path | None = None
    instantiations: list[str] = field(default_factory=list)
    files: dict[Path, SourceFile] = field(default_factory=dict, repr=False)  # the tree as read, for the later stages
    include_dirs: list[str] = field(default_factory=list)  # -I the MEP needs for headers the tree holds (no flags known)
    flags_from: str = ""  # where the compile flags came from: compile_commands.json, a build's dry run, a Makefile


def load_tree(tree: Path) -> dict[Path, SourceFile]:
    """Every readable source file of the tree, and every file of another extension that one of them includes (as
    `s2s scan` reads them: `kernel_files/k.cuknl`)."""
    files: dict[Path, SourceFile] = {}
    for path in iter_source_paths(tree):
        source, _why = read_source(path, tree)
        if source is not None:
            files[path.resolve()] = source
    if tree.is_dir():
        todo = list(files.values())
        known = {s.rel for s in todo}
        dirs = tree_include_dirs(tree)
        for _round in range(8):
            found = included_closure(tree, known, {s.rel: foreign_includes(s.data) for s in todo}, dirs)
            todo = []
            for rel in sorted(found):
                known.add(rel)
                source, _why = read_source(tree / rel, tree)
                if source is not None:
                    files[(tree / rel).resolve()] = source
                    todo.append(source)
            if not todo:
                break
    return files


def choose_unit(kernel_path: Path, graph: IncludeGraph, compdb: dict[Path, CompileCommand]) -> Path:
    """The translation unit a kernel is compiled in: its own file, or the unit that includes it."""
    if kernel_path in compdb or (not compdb and not graph.includers(kernel_path)):
        return kernel_path
    seen = {kernel_path}
    frontier = [kernel_path]
    while frontier:
        nxt = []
        for p in frontier:
            for inc in graph.includers(p):
                if inc in compdb:
                    return inc
                if inc not in seen:
                    seen.add(inc)
                    nxt.append(inc)
        frontier = nxt
    roots = [p for p in seen if not graph.includers(p) and p != kernel_path]
    return sorted(roots)[0] if roots else kernel_path


def extract(tree_arg: str | Path, kernel_name: str, compile_commands: str | None = None, mode: str = "auto",
            allow_missing: bool = False, index: Index | None = None, build_cmd: str | None = None) -> Extraction:
    tree = check_tree(tree_arg)
    index = index or scan_tree(tree)
    kernel = find_kernel(index, kernel_name)
    base = tree if tree.is_dir() else tree.parent
    files = load_tree(tree)
    compdb_path = find_compdb(tree, compile_commands)
    compdb = load_compdb(compdb_path) if compdb_path else {}
    flags_from = _rel(compdb_path, base) if compdb_path else ""
    dry_note = ""
    if not compdb and build_cmd and tree.is_dir():
        from s2s.scan.build_capture import commands_from_build

        compdb, dry_note = commands_from_build(tree, build_cmd)
        flags_from = dry_note if compdb else ""
    graph = IncludeGraph(files)
    kernel_path = (base / kernel.file).resolve() if tree.is_dir() else tree
    unit = choose_unit(kernel_path, graph, compdb)
    command = compdb.get(unit)
    makefile_note = ""
    if command is None and not compdb:
        from s2s.scan.build_flags import makefile_command

        command, makefile_note = makefile_command(unit, base)
    include_dirs = command.include_dirs if command else []
    unit_files, external = graph.unit_order(unit, include_dirs)
    if kernel_path not in unit_files:
        unit_files.append(kernel_path)
    notes: list[str] = [n for n in (dry_note if not flags_from else "", makefile_note) if n]
    if unit != kernel_path:
        notes.append(f"{kernel.file} is not compiled on its own: extracted in the context of {_rel(unit, base)}, which includes it")
    source = files[kernel_path]
    kernel_text = source.text(kernel.start_byte, kernel.end_byte)  # a Latin-1 file's bytes come back at reintegration
    # `<lib/x.h>` the tree holds, with no flags to say so: compiled against as a library (-I), never copied from
    in_tree = {} if command is not None else _tree_include_dirs(external, graph, base)
    outside = _found_outside(unit_files, graph, include_dirs, set(in_tree))  # `"../utilities/x.h"`, `-I../include`
    decl_index = DeclIndex(unit_files, files, skip_dirs=[Path(d) for d in in_tree.values()])
    used_mode = "names"
    items, missing, more = name_closure(kernel, kernel_text, decl_index)
    if mode in {"auto", "clang"}:
        from .clang_closure import ClangUnavailable, refine_with_clang

        try:
            items, missing, clang_notes = refine_with_clang(kernel, kernel_path, unit, command, items, decl_index, missing)
            extra = _attribute_names(kernel, kernel_text, decl_index)
            known = {(d.file, d.start) for d in items}
            items = [d for d in extra if (d.file, d.start) not in known] + items
            used_mode = "clang"
            notes.extend(clang_notes)
        except ClangUnavailable as why:
            if mode == "clang":
                raise UserError(f"libclang could not be used: {why}", file=kernel.file, line=kernel.line) from None
            notes.append(f"name-based closure (tree-sitter index): {why}")
    notes.extend(more)
    missing = [m for m in missing if not _defined_in(m[0], outside)]  # the include that is kept defines it
    if missing and not allow_missing:
        name, file, line = missing[0]
        others = f" (and {len(missing) - 1} more: {', '.join(sorted({m[0] for m in missing[1:]}))})" if len(missing) > 1 else ""
        raise UserError(f"'{name}' is called but defined nowhere in the tree{others}", file=file, line=line,
                        hint="add the directory that defines it to the tree or to -I in compile_commands.json, or pass --allow-missing")
    for name, file, line in missing:
        notes.append(f"{file}:{line}: '{name}' is called but defined nowhere in the tree (left to the compiler)")
    if in_tree:
        notes.append(f"{', '.join(sorted(in_tree)[:6])}{' ...' if len(in_tree) > 6 else ''} "
                     f"{'is' if len(in_tree) == 1 else 'are'} included with <> and found in the tree: the MEP compiles "
                     f"against the tree's copy (-I {' -I '.join(sorted({_rel(Path(d), base) for d in in_tree.values()}))}); "
                     "no compile flags said where the application finds it")
    if outside:
        notes.append(f"{', '.join(sorted(outside)[:6])}{' ...' if len(outside) > 6 else ''} found outside the tree: "
                     f"included as the build does, with -I {' -I '.join(sorted(set(outside.values())))} in mep.toml's "
                     "flags")
    foreign = [h for h in (_included_name(line) for line in external)
               if h and h not in in_tree and h not in outside and not _toolkit_header(h)]
    if foreign:
        notes.append(f"the MEP includes {', '.join(foreign[:6])}{' ...' if len(foreign) > 6 else ''} from outside the tree: it "
                     "builds only where those headers are found (their -I in compile_commands.json, or in mep.toml's "
                     "flags)")
    sites = _own_launches(launches_of(index, kernel), kernel, index, graph, base, notes)
    defines = command.defines if command else {}
    unresolved: list[str] = []
    inst = _instantiations(sites, files, base, notes, unresolved)
    if inst:  # `k<uchar4_aligned>`: types named only by the launch's template arguments
        extra, _missing, _more = name_closure(kernel, ", ".join(inst), decl_index)
        known = {(d.file, d.start) for d in items}
        items = items + [d for d in extra if (d.file, d.start) not in known]  # after what the kernel needs: only the
        # instance lines at the end of the file name them
    if unresolved:  # `k<traits<kN, kLogN, input_t>>` in a host template: the traits type, for the instance that runs
        extra, _missing, _more = name_closure(kernel, ", ".join(dict.fromkeys(unresolved)), decl_index)
        known = {(d.file, d.start) for d in items}
        items = items + [d for d in extra if (d.file, d.start) not in known and d.kind != "variable"]
    external = external + _namespace_aliases(unit_files, files, kernel_text, items) + _using_directives(
        unit_files, files, kernel_path, kernel.start_byte)
    text, krange = render(kernel, kernel_text, items, external, defines, used_mode, _rel(unit, base), inst,
                          frozenset(outside))
    return Extraction(kernel=kernel, unit=_rel(unit, base), mode=used_mode, text=text, kernel_range=krange, items=items,
                      launches=sites, compile=command, defines=defines, notes=notes, instantiations=inst, files=files,
                      include_dirs=sorted(set(in_tree.values()) | set(outside.values())
                                          | {str(d) for d in include_dirs if Path(d).is_dir()}),
                      flags_from=(flags_from if command is not None and flags_from else makefile_note))


_NS_ALIAS = re.compile(rb"^[ \t]*namespace[ \t]+([A-Za-z_]\w*)[ \t]*=[ \t]*([\w:]+)[ \t]*;", re.M)


def _namespace_aliases(unit_files: list[Path], files: dict[Path, SourceFile], kernel_text: str, items: list[Decl]) -> list[str]:
    """`namespace cg = cooperative_groups;` of the unit, for the aliases the kernel and its items qualify names with."""
    used = "\n".join([kernel_text, *(d.text for d in items)])
    out: list[str] = []
    for p in unit_files:
        source = files.get(p)
        for m in _NS_ALIAS.finditer(source.data if source is not None else b""):
            alias = m.group(1).decode()
            line = m.group(0).decode("utf-8", "replace").strip()
            if re.search(rf"(?<![\w:]){re.escape(alias)}\s*::", used) and line not in out:
                out.append(line)
    return out


def _attribute_names(kernel: Kernel, kernel_text: str, index: DeclIndex) -> list[Decl]:
    """The closure of names used only in the kernel's attributes (`__launch_bounds__(ThreadsPerBlock, 2048 /
    ThreadsPerBlock)`), which libclang's references do not reach."""
    head = kernel_text.split("{", 1)[0]
    parts = []
    for m in re.finditer(r"\b(?:__launch_bounds__|__cluster_dims__|__maxnreg__)\s*\(", head):
        depth, i = 1, m.end()
        while i < len(head) and depth:
            depth += {"(": 1, ")": -1}.get(head[i], 0)
            i += 1
        parts.append(head[m.end(): i - 1])
    if not parts:
        return []
    found, _missing, _notes = name_closure(kernel, ", ".join(parts), index)
    return found


_USING = re.compile(rb"^[ \t]*using[ \t]+namespace[ \t]+((?:::)?[A-Za-z_][\w:]*)[ \t]*;", re.M)


def _using_directives(unit_files: list[Path], files: dict[Path, SourceFile], kernel_path: Path, kernel_at: int) -> list[str]:
    """`using namespace geom;` at file scope of the unit (before the kernel in its own file), with its conditions: the
    kernel was compiled with them in force. A namespace the tree defines is declared first (`namespace geom {}`), so
    that the directive holds wherever the closure's items of that namespace land."""
    from s2s.lang.parsing import parse
    from s2s.scan.includes import conditional_context
    from s2s.scan.sources import language_of

    out: list[str] = []
    for p in unit_files:
        source = files.get(p)
        data = source.data if source is not None else b""
        hits = [m for m in _USING.finditer(data) if p != kernel_path or m.start() < kernel_at]
        if not hits or source is None:
            continue
        root = parse(data, language_of(source.rel, data)).root_node
        for m in hits:
            node = root.descendant_for_byte_range(m.start(1), m.start(1))
            while node is not None and node.type not in {"function_definition", "compound_statement"}:
                node = node.parent
            if node is not None:
                continue  # a function's own directive
            name = m.group(1).decode()
            own = any(re.search(rb"\bnamespace[ \t]+" + re.escape(name.lstrip(":").encode()) + rb"\s*\{", f.data)
                      for f in files.values())
            line = (f"namespace {name.lstrip(':')} {{}}\n" if own else "") + f"using namespace {name};"
            guards = conditional_context(data, m.start())
            if guards:
                line = "\n".join([*guards, line, *["#endif"] * sum(g.lstrip("# \t").startswith("if") for g in guards)])
            if line not in out:
                out.append(line)
    return out


def _own_launches(sites: list[LaunchSite], kernel: Kernel, index: Index, graph: IncludeGraph, base: Path,
                  notes: list[str]) -> list[LaunchSite]:
    """The launch sites that launch this kernel and not another program's kernel of the same name: a site in the
    kernel's file or in a unit that includes it; where the tree defines no other kernel of that name, any site (a
    kernel compiled apart and declared in a header)."""
    twins = [k for k in index.kernels if k.name == kernel.name and (k.file, k.line) != (kernel.file, kernel.line)]
    if not twins or not sites:
        return sites
    kernel_path = (base / kernel.file).resolve()
    own = []
    for s in sites:
        path = (base / s.file).resolve()
        if s.file == kernel.file or kernel_path in graph.unit_order(path, [])[0]:
            own.append(s)
    if len(own) < len(sites):
        notes.append(f"{len(sites) - len(own)} launch site(s) of another kernel named {kernel.name} (in "
                     f"{', '.join(sorted({s.file for s in sites if s not in own})[:3])}) left out")
    return own


def _instantiations(sites: list[LaunchSite], files: dict[Path, SourceFile], base: Path, notes: list[str],
                    unresolved: list[str] | None = None) -> list[str]:
    """Template arguments seen at launch sites, with a host function template's own parameters resolved; those that
    still name the host's template parameters go to `unresolved` (their types belong in the kernel file all the same:
    the capture reads which instance ran)."""
    import re

    from .hostcode import Program
    from .template_args import caller_resolutions, expand_local_aliases

    program = Program(files)
    out: set[str] = set()
    for s in sites:
        if not s.template_args or (base / s.file).resolve() not in files:
            continue
        scope = program.scope_at(files[(base / s.file).resolve()], s.start_byte)
        for targs, _where, _live in caller_resolutions(s.template_args, scope):
            if not targs:  # `run<64, T>(...)` from another template: the types its own arguments name, as below
                targs = expand_local_aliases(s.template_args, scope)
            if set(re.findall(r"[A-Za-z_]\w*", targs)) & set(scope.template_params()):
                if unresolved is not None:
                    unresolved.append(targs)
                notes.append(f"{s.file}:{s.line}: launch with template arguments <{targs}> of the enclosing template; "
                             "no call of it with explicit arguments was found")
                continue
            host = [w for w in re.findall(r"(?<![\w:.])[A-Za-z_]\w*\b(?!\s*::)", targs) if scope.declared(w) is not None]
            if host:  # `k<dimBlock>`, `k<float, NUM_THREADS>` with a local constexpr: not defined in the kernel file
                notes.append(f"{s.file}:{s.line}: instantiation <{targs}> left out of the kernel file: "
                             f"{', '.join(host)} is a variable of the host code")
                continue
            out.add(targs)
    return sorted(out)


_INCLUDED = re.compile(r'#\s*include\s*([<"][^>"]+[>"])')
_TOOLKIT = re.compile(r"(?:cuda|cub|thrust|curand|cublas|cufft|cusparse|cusolver|nvtx|cooperative_groups|mma|hip|rocprim|"
                      r"hipcub|rocrand|CL|OpenCL|omp|sys|bits)\b|[a-z_0-9]+(?:\.h)?$|device_(?:launch_parameters|functions)\.h$")


def _found_outside(unit_files: list[Path], graph: IncludeGraph, include_dirs: list[Path],
                   skip: set[str]) -> dict[str, str]:
    """`"../utilities/x.h"` (as written, with its quotes or brackets) -> the directory to pass with -I so that the
    include finds the file the build finds outside the tree: the including file's directory for a quoted include,
    else the first of the build's -I directories that holds it. Toolkit and standard headers are left to the
    compiler; `skip` are those already placed."""
    out: dict[str, str] = {}
    for path in unit_files:
        for written, resolved, angle in graph.includes(path, include_dirs):
            key = f"<{written}>" if angle else f'"{written}"'
            if resolved is not None or key in out or key in skip or _standard_header(key):
                continue
            for d in ([] if angle else [path.parent]) + [Path(d) for d in include_dirs]:
                if (d / written).is_file():
                    out[key] = os.path.normpath(d)
                    break
    return out


def _defined_in(name: str, found: dict[str, str]) -> bool:
    """Whether a header of `found` (see _found_outside) defines or declares the function `name`."""
    for written, d in found.items():
        try:
            data = (Path(d) / written[1:-1]).read_text(errors="replace")
        except OSError:
            continue
        if re.search(r"\b" + re.escape(name) + r"\s*\(", data):
            return True
    return False


def _tree_include_dirs(external: list[str], graph: IncludeGraph, base: Path) -> dict[str, str]:
    """`<lib/x.h>` -> the one directory D of the tree with D/lib/x.h, for the external includes that have one (headers
    without an extension, `<cuda/std/atomic>`, are looked for on disk)."""
    out: dict[str, str] = {}
    on_disk: dict[str, list[Path]] | None = None
    for line in external:
        written = _included_name(line)
        if not written:
            continue
        tail = Path(written[1:-1]).parts
        hits = [p for p in graph.by_name.get(tail[-1], []) if p.parts[-len(tail):] == tail]
        if not hits and "." not in tail[-1]:
            if on_disk is None:
                on_disk = {}
                for d, _dirs, names in os.walk(base):
                    for n in names:
                        if "." not in n:
                            on_disk.setdefault(n, []).append(Path(d, n).resolve())
            hits = [p for p in on_disk.get(tail[-1], []) if p.parts[-len(tail):] == tail]
        if len(hits) == 1:
            out[written] = str(Path(*hits[0].parts[:-len(tail)]))
    return out


def _unless_missing(include: str, found: frozenset[str] = frozenset()) -> str:
    """An application header the tree does not hold (`"parboil.h"`, `<helper_cuda.h>` from outside it) is included only
    where the compiler finds it: the kernel often needs none of it, and where it does, the missing name says so. One
    found on disk where the build finds it (`found`, with its -I in the flags) is included as written."""
    lines = include.splitlines()
    for i, line in enumerate(lines):
        written = _included_name(line)
        if written in found:
            continue
        if written and line.lstrip().startswith("#") and (written.startswith("\"") or not _standard_header(written)):
            lines[i] = f"#if __has_include({written})  // s2s: not in the tree\n{line}\n#endif"
    return "\n".join(lines)


_STD_HEADERS = frozenset("""
algorithm any array atomic bit bitset cassert cctype cerrno cfenv cfloat charconv chrono cinttypes climits clocale cmath
codecvt complex condition_variable csetjmp csignal cstdarg cstddef cstdint cstdio cstdlib cstring ctime cuchar cwchar
cwctype deque exception execution filesystem forward_list fstream functional future initializer_list iomanip ios iosfwd
iostream istream iterator limits list locale map memory memory_resource mutex new numeric optional ostream queue random
ratio regex scoped_allocator set shared_mutex span sstream stack stdexcept streambuf string string_view system_error
thread tuple type_traits typeindex typeinfo unordered_map unordered_set utility valarray variant vector version
assert.h complex.h ctype.h errno.h fenv.h float.h inttypes.h iso646.h limits.h locale.h math.h setjmp.h signal.h
stdalign.h stdarg.h stdatomic.h stdbool.h stddef.h stdint.h stdio.h stdlib.h string.h tgmath.h threads.h time.h uchar.h
wchar.h wctype.h unistd.h malloc.h fcntl.h dirent.h getopt.h pthread.h strings.h omp.h dlfcn.h alloca.h
""".split())


def _standard_header(written: str) -> bool:
    """The C/C++ standard library, POSIX basics, and the CUDA/HIP/OpenCL toolkits: found wherever the MEP builds."""
    name = written[1:-1]
    return name in _STD_HEADERS or name.startswith(("sys/", "bits/")) or re.match(
        r"(?:cuda|cub/|thrust/|curand|cublas|cufft|cusparse|cusolver|nvtx|nvToolsExt|cooperative_groups|mma|sm_\d|"
        r"vector_types|vector_functions|device_|driver_|texture_|surface_|math_(?:constants|functions)|hip/|hip_|"
        r"rocprim|hipcub|rocrand|CL/|OpenCL/|crt/|nv/)", name) is not None


def _included_name(line: str) -> str:
    m = _INCLUDED.search(line)
    return m.group(1) if m else ""


def _toolkit_header(written: str) -> bool:
    """A C/C++ standard header (`<cmath>`, `<stdio.h>`) or one of the CUDA, HIP or OpenCL toolkits'."""
    return _TOOLKIT.match(written[1:-1]) is not None


def _rel(p: Path, base: Path) -> str:
    try:
        return p.relative_to(base).as_posix()
    except ValueError:
        return p.as_posix()


def _wrap(ns: str, body: str) -> str:
    if not ns:
        return body
    opens = "".join(f"namespace {part} {{ " for part in ns.split("::"))
    return f"{opens}\n{body}\n{'} ' * len(ns.split('::'))}// namespace {ns}"


def render(kernel: Kernel, kernel_text: str, items: list[Decl], external: list[str], defines: dict[str, str],
           mode: str, unit: str, instantiations: list[str], found: frozenset[str] = frozenset()
           ) -> tuple[str, tuple[int, int]]:
    out: list[str] = [
        f"// s2s extract: kernel {kernel.qualified} from {comment_text(kernel.file)}:{kernel.line}",
        f"// closure: {'libclang, with the unit compile flags' if mode == 'clang' else 'by name over the tree-sitter index (no compile flags used)'}",
        f"// translation unit: {comment_text(unit)}",
    ]
    if kernel.language != "opencl":
        out += [_unless_missing(e, found) for e in external]
        used = "\n".join([kernel_text, *(d.text for d in items)])
        if re.search(r"\bu?int(?:8|16|32|64)_t\b", used) and not any(
                h in e for e in external for h in ("<cstdint>", "<stdint.h>", "<cinttypes>", "<inttypes.h>")):
            out.append("#include <cstdint>  // s2s: the fixed-width integer types the code uses")
    flag_defs = [(k, v) for k, v in defines.items() if any(k in d.text for d in items) or k in kernel_text]
    if flag_defs:
        out.append("// s2s: values of -D flags from the compile command")
        for k, v in flag_defs:
            out.append(f"#ifndef {k}\n#define {k} {v}\n#endif")
    for d in items:
        out.append(f"// s2s: from {comment_text(d.file)}:{d.line}")  # a file name never leaves its comment
        out.append(_wrap(d.namespace, d.text.rstrip("\n")))
    ns = "::".join(kernel.qualified.split("::")[:-1])
    out.append(f"// s2s: kernel from {comment_text(kernel.file)}:{kernel.line}")
    head = "\n".join(out) + "\n"
    if ns:
        head += "".join(f"namespace {part} {{ " for part in ns.split("::")) + "\n"
    start = len(head.encode())
    body = head + kernel_text
    end = len(body.encode())
    if ns:
        body += f"\n{'} ' * len(ns.split('::'))}// namespace {ns}"
    body += "\n"
    if instantiations:
        body += "// s2s: instantiations seen at launch sites\n"
        for i, targs in enumerate(instantiations):
            body += f"static void* const s2s_instance_{i} = (void*)&{kernel.qualified}<{targs}>;\n"
    return body, (start, end)


@dataclass
class ExtractResult:
    out_dir: Path
    mode: str
    items: list[Decl]
    notes: list[str]


def extract_kernel(tree: str, kernel: str, output: str | None, compile_commands: str | None = None, mode: str = "auto",
                   allow_missing: bool = False) -> ExtractResult:
    ex = extract(tree, kernel, compile_commands, mode, allow_missing)
    out = Path(output or f"mep-{ex.kernel.name}")
    write_extraction(ex, out)
    return ExtractResult(out_dir=out, mode=ex.mode, items=ex.items, notes=ex.notes)


def write_extraction(ex: Extraction, out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    name = "kernel" + KERNEL_EXT[ex.kernel.language]
    atomic_write(out / name, ex.text.encode())
    origin = {
        "kernel": ex.kernel.qualified, "file": ex.kernel.file, "line": ex.kernel.line, "language": ex.kernel.language,
        "start_byte": ex.kernel.start_byte, "end_byte": ex.kernel.end_byte, "sha256": ex.kernel.sha256,
        "unit": ex.unit, "mode": ex.mode, "kernel_file": name, "kernel_range": list(ex.kernel_range),
        "compile_command": ex.compile.command_text if ex.compile else "", "defines": ex.defines,
        "items": [{"kind": d.kind, "names": list(d.names), "file": d.file, "line": d.line} for d in ex.items],
        "instantiations": ex.instantiations, "notes": ex.notes,
    }
    atomic_write(out / "extract.json", json.dumps(origin, indent=2).encode())
    ex.out_dir = out
    return out / name
