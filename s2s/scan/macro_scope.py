"""Macro scope per translation unit, and each file's language from what its units include.

A real tree holds many programs side by side: `#define GLOBAL __global__` in one benchmark's header must not turn
the functions of another directory's OpenMP port into CUDA kernels. A definition is visible in the file that holds
it, in every file that file includes (transitively), and in every file included by a unit that reaches it: the files
a compiler could see it from. The include graph is resolved without flags (relative to the includer, else by the
path's tail inside the tree, nearest directory first). Visibility travels as bit sets over the include graph, in time
linear in its edges.

The language follows the same scope: a header of a unit that includes `hip/hip_runtime.h` (or calls the HIP API) is
HIP even in a `.cu` or `.h` file, unless its own text says CUDA.
"""
from __future__ import annotations

import posixpath
import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from .launch_macros import LaunchMacro
from .preamble import NOT_BLOCK, Preamble
from .sources import CUDA_EXTS, HIP_EXTS, OPENCL_EXTS

_HIP_BIT = "<hip>"
_CUDA_BIT = "<cuda>"


@dataclass
class Scope:
    kernel_macros: dict[str, frozenset[str]] = field(default_factory=dict)  # file -> kernel macros it can see
    launch_macros: dict[str, dict[str, LaunchMacro]] = field(default_factory=dict)  # file -> launch macros it sees
    language: dict[str, str] = field(default_factory=dict)  # file -> "opencl" | "hip" | "cuda" | "cpp"
    blank_macros: frozenset[str] = frozenset()  # namespace-block macros, tree-wide
    limits: list[str] = field(default_factory=list)


def kernel_macro_names(preambles: Iterable[Preamble]) -> frozenset[str]:
    """Object-like macros that expand to `__global__`, directly or through other macros (`#define CUB_KERNEL
    CCCL_KERNEL`, `#define CCCL_KERNEL __global__`), wherever in the tree they are defined."""
    mentions: dict[str, set[str]] = {}  # word -> macros whose body holds it
    for pre in preambles:
        for d in pre.defines:
            for w in d.words or ():
                mentions.setdefault(w, set()).add(d.name)
    names: set[str] = set()
    todo = deque(["__global__"])
    while todo:  # a macro whose body names a kernel macro is one too
        for name in mentions.get(todo.popleft(), ()):
            if name not in names:
                names.add(name)
                todo.append(name)
    return frozenset(names)


def resolve_includes(rels: list[str], preambles: dict[str, Preamble]) -> dict[str, list[str]]:
    """file -> the tree's files it includes. `"x.h"` relative to the includer first; then every file whose path ends
    with the written one (`<lib/x.h>`, whose -I flags are unknown), the nearest to the includer. A bare `<x.h>` is a
    system header unless the includer's own project (first directory) holds it: a vendored `math.h` elsewhere in the
    tree is not what `<math.h>` means."""
    known = set(rels)
    by_name: dict[str, list[str]] = {}
    for rel in rels:
        by_name.setdefault(posixpath.basename(rel), []).append(rel)
    memo: dict[tuple[str, str, bool], list[str]] = {}
    edges: dict[str, list[str]] = {}
    for rel in rels:
        out: list[str] = []
        here = posixpath.dirname(rel)
        for written, angle in preambles[rel].includes:
            if posixpath.basename(written) not in by_name:
                continue  # no file of that name in the tree: a system or toolkit header
            key = (here, written, angle)
            if key not in memo:
                memo[key] = _resolve(here, written, angle, known, by_name)
            out.extend(memo[key])
        edges[rel] = out
    return edges


def _resolve(here: str, written: str, angle: bool, known: set[str], by_name: dict[str, list[str]]) -> list[str]:
    if not angle:
        cand = posixpath.normpath(posixpath.join(here, written))
        if cand in known:
            return [cand]
    tail = written.lstrip("./")
    if "../" in tail or not tail:
        return []
    matches = [p for p in by_name[posixpath.basename(tail)] if p == tail or p.endswith("/" + tail)]
    if angle and "/" not in tail:
        top = here.split("/", 1)[0]
        matches = [p for p in matches if here and p.split("/", 1)[0] == top]
    if len(matches) > 1:
        best = max(_shared_dirs(here, p) for p in matches)
        matches = [p for p in matches if _shared_dirs(here, p) == best]
    return matches


def _shared_dirs(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a.split("/"), posixpath.dirname(b).split("/")):
        if x != y:
            break
        n += 1
    return n


def visible_bits(rels: list[str], edges: dict[str, list[str]], own: dict[str, int]) -> dict[str, int]:
    """Bits visible in each file: its own, those of every file it reaches (its units' headers), and everything
    visible in a file that includes it. Two worklist fixpoints over the include graph (cycles allowed)."""
    includers: dict[str, list[str]] = {r: [] for r in rels}
    for rel, outs in edges.items():
        for o in outs:
            includers[o].append(rel)
    down = _fixpoint(rels, own, edges, includers)
    return _fixpoint(rels, down, includers, edges)


def _fixpoint(rels: list[str], base: dict[str, int], pull: dict[str, list[str]], notify: dict[str, list[str]]) -> dict[str, int]:
    """value[f] = base[f] | OR(value[g] for g in pull[f]), the least fixpoint."""
    value = {r: base.get(r, 0) for r in rels}
    todo = deque(r for r in rels if value[r])
    queued = set(todo)
    while todo:
        g = todo.popleft()
        queued.discard(g)
        bits = value[g]
        for f in notify[g]:  # f pulls from g
            if bits & ~value[f]:
                value[f] |= bits
                if f not in queued:
                    queued.add(f)
                    todo.append(f)
    return value


def compute_scope(rels: list[str], preambles: dict[str, Preamble], included: dict[str, str] | None = None) -> Scope:
    """`included`: {file the walk did not list (`k.cuknl`): the file that includes it}; such a file is compiled as its
    includer is (its own text saying HIP or CUDA aside)."""
    kmacros = kernel_macro_names(preambles.values())
    labels: dict[str, int] = {_HIP_BIT: 1, _CUDA_BIT: 2}
    own: dict[str, int] = {}
    launch_defs: dict[str, LaunchMacro] = {}
    for rel in rels:
        pre = preambles[rel]
        bits = (1 if pre.hip else 0) | (2 if pre.cuda else 0)
        for d in pre.defines:
            if d.words is not None and d.name in kmacros and any(w == "__global__" or w in kmacros for w in d.words):
                bits |= 1 << labels.setdefault(d.name, len(labels))
        for lm in pre.launch_macros:
            key = "launch:" + lm.name
            bits |= 1 << labels.setdefault(key, len(labels))
            launch_defs.setdefault(lm.name, LaunchMacro(lm.name, lm.kernel, lm.config, lm.args_from, f"{rel}:{lm.where}"))
        if bits:
            own[rel] = bits
    scope = Scope(blank_macros=block_macros(preambles.values()))
    if own:
        visible = visible_bits(rels, resolve_includes(rels, preambles), own)
    else:
        visible = {}
    names = sorted(labels, key=labels.__getitem__)
    for rel in rels:
        bits = visible.get(rel, 0)
        seen = [names[i] for i in range(2, len(names)) if bits >> labels[names[i]] & 1] if bits > 3 else []
        scope.kernel_macros[rel] = frozenset(n for n in seen if not n.startswith("launch:"))
        scope.launch_macros[rel] = {n[7:]: launch_defs[n[7:]] for n in seen if n.startswith("launch:")}
        scope.language[rel] = _language(rel, preambles[rel], bool(bits & 1), bool(bits & 2))
    for rel, host in (included or {}).items():  # in the order found: an includer's language is known first
        text = preambles.get(rel)
        if rel in scope.language and text is not None and not text.hip and not text.cuda:
            scope.language[rel] = scope.language.get(host, scope.language[rel])
    for rel in rels:
        for d in preambles[rel].defines:
            if d.function_kernel:
                scope.limits.append(
                    f"{rel}:{d.line}: kernels defined through the function-like macro {d.name}(...) are not listed: "
                    "tree-sitter does not expand macros; give compile flags (--compile-commands) so libclang can")
        if preambles[rel].embedded_cl and scope.language[rel] != "opencl":
            for line, name in preambles[rel].embedded_cl:
                scope.limits.append(f"{rel}:{line}: OpenCL kernel {name} is embedded in a C string; "
                                    "kernels in strings are not scanned (move it to a .cl file to extract it)")
    return scope


def _language(rel: str, pre: Preamble, hip_seen: bool, cuda_seen: bool) -> str:
    ext = posixpath.splitext(rel)[1].lower()
    if ext in OPENCL_EXTS:
        return "opencl"
    if pre.hip or ext in HIP_EXTS:
        return "hip"
    if pre.cuda:
        return "cuda"
    if hip_seen and not cuda_seen:
        return "hip"
    return "cuda" if ext in CUDA_EXTS else "cpp"


_OPENER = re.compile(rb"(?:(?:inline\s+)?namespace\b[^{};]*\{\s*|extern\s*\"C\"\s*\{\s*)+")
_CLOSER = re.compile(rb"(?:\}\s*;?\s*)+")
_WORD = re.compile(rb"[A-Za-z_]\w*")


def block_macros(preambles: Iterable[Preamble]) -> frozenset[str]:
    """Object-like macros that open (`#define LIB_NAMESPACE_BEGIN namespace lib {`, over continued lines, through other
    such macros or empty ones) or close (`... }`) a namespace or `extern "C"` block: the parser reads them as blanks,
    when the tree has both kinds. Every definition of such a macro (under #if branches) must open (close) or be empty."""
    defs: dict[str, list[bytes | None]] = {}
    for pre in preambles:
        for d in pre.defines:
            defs.setdefault(d.name, []).append(None if d.words is None else d.block_body)
    kind: dict[str, str] = {}  # "empty" | "open" | "close" | "other"

    def classify(body: bytes) -> str:
        if body == NOT_BLOCK:
            return "other"
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

    candidates = {n: bodies for n, bodies in defs.items() if all(b is not None and b != NOT_BLOCK for b in bodies)}
    for name in defs.keys() - candidates.keys():
        kind[name] = "other"
    for _ in range(6):  # a fixpoint: macros made of macros
        changed = False
        for name, bodies in candidates.items():
            forms = {classify(b) for b in bodies if b is not None} - {"empty"}
            new = forms.pop() if len(forms) == 1 else ("empty" if not forms else "other")
            if kind.get(name) != new:
                kind[name], changed = new, True
        if not changed:
            break
    opens = {n for n, k in kind.items() if k == "open"}
    closes = {n for n, k in kind.items() if k == "close"}
    return frozenset(opens | closes) if opens and closes else frozenset()
