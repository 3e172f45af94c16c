"""Stage 1: find every kernel and launch site in an application tree."""
from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path

from s2s.base.errors import UserError
from s2s.base.records import Index, Kernel, LaunchSite, ParseProblem

from .inventory import FileFacts, unrecognized_kernels
from .launch_macros import find_launch_macros
from .sources import SourceFile, check_tree, iter_source_paths, language_of, read_source

# Files without any of these bytes hold no kernel and no launch: they are counted, not parsed.
_MARKERS = re.compile(rb"__global__|__kernel\b|\bkernel\b|<<<|hipLaunchKernel|clEnqueueNDRangeKernel|cudaLaunch\w*Kernel")
_EMBEDDED_CL = re.compile(rb'"[^"\n]*__kernel\s+void\s+(\w+)')
_WORD = re.compile(rb"[A-Za-z_]\w*")
_FUNCTION_MACRO_KERNEL = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)\([^)]*\)[^\n]*\b__global__\b", re.M)

Progress = Callable[[int, int], None]


def scan_tree(root: str | Path, progress: Progress | None = None) -> Index:
    start = time.perf_counter()
    tree = check_tree(root)
    paths = list(iter_source_paths(tree))
    problems: list[ParseProblem] = []
    sources: list[SourceFile] = []
    lines = 0
    for path in paths:
        source, why = read_source(path, tree)
        if source is None:
            rel = path.name if tree.is_file() else path.relative_to(tree).as_posix()
            problems.append(ParseProblem(rel, _line_from(why), 1, why))
            continue
        lines += source.data.count(b"\n")
        sources.append(source)
    defs = _macro_defs(sources)
    kernel_macros, limits = _kernel_macros(sources, defs)
    blank = _block_macros(defs)
    launch_macros = find_launch_macros(sources)
    marker = _markers(kernel_macros | frozenset(launch_macros))
    kernels: list[Kernel] = []
    launches: list[LaunchSite] = []
    for i, source in enumerate(sources):
        if progress is not None:
            progress(i + 1, len(sources))
        if language_of(source.rel) != "opencl" and not marker.search(source.data):
            continue
        facts = FileFacts(source, kernel_macros, launch_macros, blank)
        problems.extend(facts.problems())
        found = facts.kernels()
        kernels.extend(found)
        if facts.dialect != "opencl" and b"__global__" in source.data:
            problems.extend(unrecognized_kernels(source, found))
        if facts.dialect != "opencl" and b"__kernel" in source.data:
            for m in _EMBEDDED_CL.finditer(source.data):
                line = source.data.count(b"\n", 0, m.start()) + 1
                limits.append(f"{source.rel}:{line}: OpenCL kernel {m.group(1).decode()} is embedded in a C string; "
                              "kernels in strings are not scanned (move it to a .cl file to extract it)")
        launches.extend(facts.launches())
    if not paths:
        raise UserError("no C, C++, CUDA, HIP or OpenCL source files found", file=str(root),
                        hint=f"looked for {', '.join(sorted({'.cu', '.cuh', '.cl', '.cpp', '.c', '.h', '.hip'}))}")
    return Index(
        root=str(tree), kernels=tuple(kernels), launches=tuple(launches), problems=tuple(problems),
        limits=tuple(limits), files_scanned=len(sources), lines_scanned=lines, seconds=time.perf_counter() - start,
    )


def _line_from(why: str) -> int:
    m = re.search(r"at line (\d+)", why)
    return int(m.group(1)) if m else 1


def _markers(kernel_macros: frozenset[str]) -> re.Pattern[bytes]:
    if not kernel_macros:
        return _MARKERS
    extra = b"|".join(re.escape(m.encode()) for m in sorted(kernel_macros))
    return re.compile(_MARKERS.pattern + b"|\\b(?:" + extra + b")\\b")


def _macro_defs(sources: list[SourceFile]) -> dict[str, list[bytes | None]]:
    """Every `#define` of the tree, read once: name -> bodies (continued lines joined, comments out; None for a
    function-like definition), one per definition (#if branches may give several)."""
    defs: dict[str, list[bytes | None]] = {}
    for source in sources:
        if b"define" not in source.data:
            continue
        for m in _DEFINE_ANY.finditer(source.data):
            body = None if m.group(2) else _C_COMMENT.sub(b" ", m.group(3).replace(b"\\\n", b" ")).strip()
            defs.setdefault(m.group(1).decode(), []).append(body)
    return defs


def _kernel_macros(sources: list[SourceFile], defs: dict[str, list[bytes | None]]) -> tuple[frozenset[str], list[str]]:
    """Object-like macros that expand to `__global__`, directly or through other macros
    (`#define CUB_KERNEL CCCL_KERNEL`, `#define CCCL_KERNEL __global__ ...`): found. Function-like ones: limits."""
    words = {n: {w.decode() for b in bodies if b is not None for w in _WORD.findall(b)} for n, bodies in defs.items()}
    names = {n for n, ws in words.items() if "__global__" in ws}
    limits: list[str] = []
    for source in sources:
        if b"__global__" not in source.data or b"define" not in source.data:
            continue
        for m in _FUNCTION_MACRO_KERNEL.finditer(source.data):
            line = source.data.count(b"\n", 0, m.start()) + 1
            limits.append(
                f"{source.rel}:{line}: kernels defined through the function-like macro {m.group(1).decode()}(...) "
                "are not listed: tree-sitter does not expand macros; give compile flags (--compile-commands) so libclang can"
            )
    grew = bool(names)
    while grew:  # a macro whose body names a kernel macro is one too
        more = {a for a, ws in words.items() if a not in names and ws & names}
        names |= more
        grew = bool(more)
    return frozenset(names), limits


_DEFINE_ANY = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)(\([^)\n]*\))?((?:[^\n\\]|\\.|\\\n)*)$", re.M)
_C_COMMENT = re.compile(rb"/\*.*?\*/|//[^\n]*", re.S)
_OPENER = re.compile(rb"(?:(?:inline\s+)?namespace\b[^{};]*\{\s*|extern\s*\"C\"\s*\{\s*)+")
_CLOSER = re.compile(rb"(?:\}\s*;?\s*)+")


def _block_macros(defs: dict[str, list[bytes | None]]) -> frozenset[str]:
    """Object-like macros that open (`#define LIB_NAMESPACE_BEGIN namespace lib {`, over continued lines, through other
    such macros or empty ones) or close (`... }`) a namespace or `extern "C"` block: the parser reads them as blanks,
    when the tree has both kinds. Every definition of such a macro (under #if branches) must open (close) or be empty."""
    kind: dict[str, str] = {}  # "empty" | "open" | "close" | "other"

    def classify(body: bytes) -> str:
        seen = set()
        for word in set(_WORD.findall(body)):
            k = kind.get(word.decode())
            if k in {"empty", "open", "close"}:
                seen.add(k)
                body = re.sub(rb"\b" + re.escape(word) + rb"\b", b" ", body)
        rest = body.strip()
        if rest and _OPENER.fullmatch(rest):
            seen.add("open")
        elif rest and _CLOSER.fullmatch(rest):
            seen.add("close")
        elif rest:
            return "other"
        seen.discard("empty")
        return seen.pop() if len(seen) == 1 else ("empty" if not seen else "other")

    for _ in range(6):  # a fixpoint: macros made of macros
        changed = False
        for name, bodies in defs.items():
            if any(b is None for b in bodies):
                new = "other"
            else:
                forms = {classify(b) for b in bodies if b is not None} - {"empty"}
                new = forms.pop() if len(forms) == 1 else ("empty" if not forms else "other")
            if kind.get(name) != new:
                kind[name], changed = new, True
        if not changed:
            break
    opens = {n for n, k in kind.items() if k == "open"}
    closes = {n for n, k in kind.items() if k == "close"}
    return frozenset(opens | closes) if opens and closes else frozenset()


def find_kernel(index: Index, name: str) -> Kernel:
    """The one kernel called `name` (plain, qualified, or `file:name`, each optionally `@line` for overloads in one
    file), or a UserError with choices."""
    want_file, want_line = "", 0
    at = re.fullmatch(r"(.+)@(\d+)", name)
    if at:
        name, want_line = at.group(1), int(at.group(2))
    if ":" in name and "::" not in name.split(":", 1)[0] + ":":
        head, _, tail = name.rpartition(":")
        if head and not head.endswith(":") and not tail.startswith(":"):
            want_file, name = head, tail
    exact = [k for k in index.kernels if k.qualified == name or (("::" not in name) and k.name == name)]
    if want_file:
        exact = [k for k in exact if k.file == want_file or k.file.endswith("/" + want_file)]  # whole path components
        if any(k.file == want_file for k in exact):  # `app.cu:k` names app.cu itself, not old/app.cu
            exact = [k for k in exact if k.file == want_file]
    if want_line:
        exact = [k for k in exact if k.line == want_line]
    if len(exact) == 1:
        return exact[0]
    if not exact:
        import difflib

        names = sorted({k.qualified for k in index.kernels} | {k.name for k in index.kernels})
        close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
        hint = f"did you mean {', '.join(close)}?" if close else f"the tree has {len(index.kernels)} kernels: run `s2s scan {index.root}`"
        raise UserError(f"no kernel named '{name}'", file=index.root, hint=hint)
    listing = "; ".join(f"{k.qualified} at {k.file}:{k.line}" for k in exact)
    same_file = len({k.file for k in exact}) == 1
    example = f"{exact[0].file}:{exact[0].name}" + (f"@{exact[0].line}" if same_file else "")
    raise UserError(f"kernel name '{name}' is ambiguous: {listing}", file=index.root,
                    hint=f"pick one as FILE:NAME{'@LINE' if same_file else ''}, e.g. --kernel {example}")
