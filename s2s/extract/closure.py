"""The dependency closure of a kernel by names over the tree-sitter index.

Used when no compile flags are known, and as the editor's view when they are: every item is a
verbatim byte range of an original file, chosen because the kernel (or an item it needs) names it.
"""
from __future__ import annotations

import fnmatch
import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

from s2s.base.records import Kernel
from s2s.base.resources import grammars_dir
from s2s.lang.textsplit import matching_close, split_top_level
from s2s.scan.sources import SourceFile

from .decls import Decl, file_decls

_IDENT = re.compile(r"(?<!\w)[A-Za-z_]\w*")  # not the `f` of 1.5f or the `x1F` of 0x1F
_CALL = re.compile(r"(?<![\w.>:])([A-Za-z_]\w*)\s*(?:<[^<>;()]*>)?\s*\(")
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_STRING = re.compile(r'"(?:\\.|[^"\\\n])*"')
KEYWORDS = frozenset(
    "if else for while do switch case default return break continue goto sizeof typedef struct class union enum "
    "const volatile static extern inline register auto void char short int long float double signed unsigned bool "
    "true false nullptr template typename using namespace public private protected new delete this operator "
    "constexpr static_assert alignas alignof decltype noexcept throw try catch friend virtual explicit mutable "
    "asm __asm __asm__ "  # inline assembly (`asm volatile("..." : "=r"(r))`) is no call
    # preprocessor operators inside `#if` lines of macro blocks: never names to look up
    "defined __has_include __has_include_next __has_builtin __has_attribute __has_cpp_attribute __has_feature _Pragma "
    "__pragma".split()
)


_INCLUDE_LINE = re.compile(rb"^[ \t]*#[ \t]*include[ \t]*[<\"]([^>\"\n]+)[>\"]", re.M)


@dataclass
class Closure:
    items: list[Decl]
    external_includes: list[str]
    missing: list[tuple[str, str, int]] = field(default_factory=list)  # (name, file, line)
    notes: list[str] = field(default_factory=list)


_PRAGMA = re.compile(r"#[ \t]*pragma[ \t]+\w+")


def strip_comments(code: str) -> str:
    """Code without comments, string contents and pragma names (`#pragma unroll(n)` calls no function `unroll`)."""
    return _PRAGMA.sub(lambda m: " " * len(m.group(0)), _STRING.sub('""', _COMMENT.sub(" ", code)))


_MEMBER = re.compile(r"(?:(?<!\.)\.|->)\s*[A-Za-z_]\w*")


def identifiers(code: str, stripped: bool = False) -> list[str]:
    """Names the code refers to; members after `.` or `->` (`blockIdx.x`, `p.dt`) are not names of their own."""
    clean = code if stripped else strip_comments(code)
    return list(dict.fromkeys(n for n in _IDENT.findall(_MEMBER.sub(" ", clean)) if n not in KEYWORDS))


@functools.lru_cache(maxsize=1)
def _builtin_patterns() -> tuple[frozenset[str], tuple[str, ...]]:
    names: set[str] = set()
    prefixes: list[str] = []
    for raw in (grammars_dir() / "builtins.txt").read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        (prefixes.append(line) if "*" in line else names.add(line))
    return frozenset(names), tuple(prefixes)


@functools.cache
def is_builtin(name: str) -> bool:
    names, prefixes = _builtin_patterns()
    return name in names or any(fnmatch.fnmatchcase(name, p) for p in prefixes)


def _templated(d: Decl) -> bool:
    return d.text.lstrip().startswith("template")


class DeclIndex:
    """Declarations by name, for the files of one unit first and, on demand, for the rest of the tree."""

    def __init__(self, unit_files: list[Path], files: dict[Path, SourceFile], skip_dirs: list[Path] | None = None) -> None:
        """`skip_dirs`: libraries the MEP includes with -I; their definitions are never copied from outside the unit."""
        skip = tuple(skip_dirs or ())
        self.library = {p: s for p, s in files.items() if any(p.is_relative_to(d) for d in skip)}
        self.files = {p: s for p, s in files.items() if p not in self.library}
        self.rank = {p: i for i, p in enumerate(unit_files)}
        # the unit's files by tree-relative path, as Decl.file names them: membership and order in O(1)
        self.unit_rank = {files[p].rel: i for p, i in self.rank.items() if p in files}
        self.by_rel = {s.rel: s for s in files.values()}
        self.by_name: dict[str, list[Decl]] = {}
        self.parsed: set[Path] = set()
        for p in unit_files:
            self._add(p)

    def _add(self, path: Path) -> None:
        if path in self.parsed or path not in self.files:
            return
        self.parsed.add(path)
        for d in file_decls(self.files[path]):
            for name in d.names:
                self.by_name.setdefault(name, []).append(d)

    def lookup(self, name: str, outside: bool = True) -> tuple[list[Decl], bool]:
        """Definitions of `name`, and whether they come from outside the unit (searched only when `outside`)."""
        inside = [d for d in self.by_name.get(name, []) if self._in_unit(d)]
        if inside or not outside:
            return inside, False
        key = name.encode()
        pattern = re.compile(rb"\b" + re.escape(key) + rb"\b")
        for path, source in self.files.items():
            if path not in self.parsed and key in source.data and pattern.search(source.data):
                self._add(path)
        # outside the unit only functions and variables can be linked in (separate compilation, -rdc); a type,
        # macro or template the unit does not include is not the one its compile sees (a vendored library's, say)
        # (device functions and __device__/__constant__ variables: what device code can link against)
        return [d for d in self.by_name.get(name, []) if d.kind in {"function", "variable"} and d.device and not _templated(d)], True

    def in_library(self, name: str) -> bool:
        """`name` appears in a library the MEP includes with -I (so the compiler, not the closure, finds it)."""
        key = name.encode()
        return any(key in s.data and re.search(rb"\b" + re.escape(key) + rb"\b", s.data) for s in self.library.values())

    def defined_after(self, d: Decl, user_file: str, user_start: int) -> bool:
        """`d` is a macro the compiler meets only after the code at `user_start` of `user_file`: later in the same
        file, or in a file that includes `user_file` before it (`#include "ecdh.h"` then `#define P_x 5`: the
        kernel's parameter `P_x` in ecdh.h is no macro)."""
        if d.kind != "macro":
            return False
        if d.file == user_file:
            return d.start > user_start
        source = self.by_rel.get(d.file)
        if source is None:
            return False
        head = source.data[:d.start]
        target = user_file.rsplit("/", 1)[-1]
        return any(m.group(1).decode("utf-8", "replace").rsplit("/", 1)[-1] == target for m in _INCLUDE_LINE.finditer(head))

    def in_unit(self, d: Decl) -> bool:
        return self._in_unit(d)

    def _in_unit(self, d: Decl) -> bool:
        return d.file in self.unit_rank

    def order_key(self, d: Decl) -> tuple[int, int]:
        return self.unit_rank.get(d.file, -1), d.start


def choose(cands: list[Decl], kernel: Kernel) -> list[Decl]:
    """Among same-named declarations, the ones the kernel's compile would see."""
    cands = [d for d in cands if not (d.kind == "kernel" and d.file == kernel.file and d.start == kernel.start_byte)]
    cands = [d for d in cands if d.kind != "include"]
    if not cands:
        return []
    funcs = [d for d in cands if d.kind == "function"]
    if funcs and len(funcs) == len(cands):
        device = [d for d in funcs if d.device]
        defs = [d for d in (device or funcs) if "{" in d.text]
        return _unique(defs or device or funcs)
    variables = [d for d in cands if d.kind == "variable"]
    if variables and len(variables) == len(cands):
        definitions = [d for d in variables if not d.text.lstrip().startswith("extern")]
        return _unique(definitions[:1] or variables[:1])
    # a forward declaration (`template <typename T> struct Stats;`) is not the definition the code needs where the
    # tree has one: it made `Stats<float>` an incomplete type in the MEP. The declaration may still be needed by other
    # code (`struct Node; struct List { Node* head; }; struct Node {...};`): both are kept, each where it stood
    forward = [d for d in cands if d.kind == "type" and _FORWARD.match(d.text)]
    full = [d for d in cands if d not in forward]
    ahead = forward[:1] if forward and full else []
    cands = full or cands
    # macros, types, blocks: the first definition in unit order (redefinitions are the user's business), with the
    # specializations of a class template (`template <> struct BytesToType<16>`), each one a definition of its own
    first = cands[0]
    return _unique(ahead + cands[:1] + [d for d in cands[1:] if (d.kind == "block" and d.file == first.file)
                                        or (first.kind == "type" and d.kind == "type" and _specializes(d, first))])


_FORWARD = re.compile(r"^\s*(?:template\s*<[^;{]*>\s*)?(?:struct|class|union)\s+(?:__align__\s*\(\s*\d+\s*\)\s*|"
                      r"alignas\s*\([^)]*\)\s*)?[\w:]+\s*;?\s*$", re.S)


def _specializes(d: Decl, primary: Decl) -> bool:
    """`d` is a specialization of the class template `primary` (`template <> struct S<16> {...}` of `template <int B>
    struct S {};`)."""
    return _templated(d) and any(re.search(r"\b(?:struct|class|union)\s+" + re.escape(n) + r"\s*<", d.text)
                                 for n in primary.names)


# functions a toolkit header declares for argument-dependent lookup, called unqualified: `init(&bar, n)` of
# cuda::barrier (cuda-samples simpleAWBarrier); known only where the unit includes that header
_HEADER_FUNCTIONS = {"init": ("cuda/barrier", "cuda/std/barrier")}


def _from_included_header(name: str, index: DeclIndex) -> bool:
    headers = _HEADER_FUNCTIONS.get(name, ())
    return any(re.search(rb"#\s*include\s*<" + re.escape(h.encode()) + rb">", s.data) for h in headers
               for p, s in index.files.items() if p in index.rank)


def _qualified(cands: list[Decl], name: str, code: str) -> list[Decl]:
    """The declarations a name can mean where the code only ever writes it qualified (`constants_device::dssp`):
    those of that namespace, not a global of the same name (NPB BT has both); every candidate otherwise."""
    uses = re.findall(r"((?:[A-Za-z_]\w*\s*::\s*)*)(?<![\w.>])" + re.escape(name) + r"\b", code)
    quals = {re.sub(r"\s+", "", u).rstrip(":") for u in uses}
    if not quals or "" in quals or len(cands) < 2:
        return cands
    inside = [d for d in cands if any(d.namespace == q or d.namespace.endswith("::" + q) for q in quals)]
    return inside or cands


def _unique(ds: list[Decl]) -> list[Decl]:
    seen: set[tuple[str, int]] = set()
    out = []
    for d in ds:
        if (d.file, d.start) not in seen:
            seen.add((d.file, d.start))
            out.append(d)
    return out


def name_closure(kernel: Kernel, kernel_text: str, index: DeclIndex) -> tuple[list[Decl], list[tuple[str, str, int]], list[str]]:
    chosen: dict[tuple[str, int], Decl] = {}
    deps: dict[tuple[str, int], list[tuple[str, int]]] = {}
    missing: list[tuple[str, str, int]] = []
    notes: list[str] = []
    root_key = ("<kernel>", 0)
    work: list[tuple[tuple[str, int], str, str, int]] = [(root_key, kernel_text, kernel.file, kernel.line)]
    deps[root_key] = []
    kernel_words = set(identifiers(strip_comments(kernel_text), stripped=True)) - _SCALAR_WORDS
    for op in _operators_on(kernel_words, index):  # `a * s` on a float4 with the unit's `operator*(float4, float)`
        okey = (op.file, op.start)
        deps[root_key].append(okey)
        if okey not in chosen:
            chosen[okey] = op
            deps[okey] = []
            work.append((okey, op.text, op.file, op.line))
    while work:
        key, code, file, line = work.pop()
        clean = strip_comments(code)
        calls = set(_CALL.findall(clean))
        own = declared_names(clean, stripped=True)
        if key in chosen and chosen[key].kind == "type":  # `__device__ T add(const T &a, const T &b);` declared in the
            own |= set(_MEMBER_DECL.findall(clean))  # class, defined by its specializations or after it: no call
        itself = set(chosen[key].names) if key in chosen else set()
        # a function's own name in its head is no call of its same-named overloads; only its body's calls are
        in_body = set(identifiers(clean.split("{", 1)[1], stripped=True)) \
            if key in chosen and chosen[key].kind == "function" and "{" in clean else None
        for name in identifiers(clean, stripped=True):
            if name == kernel.name or name in itself and (name in own or in_body is not None and name not in in_body):
                continue  # a declaration's own names (`__constant__ double dssp` in its namespace) need nothing else
            # a parameter or local of this item, or a builtin (`abs`, `min`, `atomicAdd`) is not searched for across
            # the whole tree: a vendored library's definition is not the one the compiler provides
            cands, outside = index.lookup(name, outside=name not in own and not is_builtin(name))
            user = (kernel.file, kernel.start_byte) if key == root_key else (file, chosen[key].start if key in chosen else 0)
            picked = choose([d for d in _qualified(cands, name, clean) if not index.defined_after(d, *user)], kernel)
            if key in chosen and chosen[key].kind == "type" and name in own:  # `float lambda;`, a field: not the
                picked = [d for d in picked if d.kind not in {"function", "variable"}]  # function lambda(Params p)
            if key in chosen and chosen[key].kind == "type":  # a member declared in the class and defined after it
                # (`Gen<S>::draw<float>() {...}`, explicit specializations of a member template): the type's own code
                picked = _unique(picked + [d for d in cands if _defines_member_of(d, chosen[key])])
            if not picked:
                if (name in calls and name not in own and not is_builtin(name) and not _is_local_call(name, clean)
                        and not index.in_library(name) and not _from_included_header(name, index)):
                    if name.isupper():  # an upper-case macro from a system or toolkit header
                        notes.append(f"{file}:{line}: macro {name} is not defined in the tree; assumed to come from an included header")
                    else:
                        missing.append((name, file, line))
                continue
            for d in picked:
                dkey = (d.file, d.start)
                if key in chosen and _defines_member_of(d, chosen[key]):
                    deps.setdefault(dkey, []).append(key)  # `Gen<S>::draw<float>() {...}` comes after class Gen
                    deps[root_key].append(dkey)  # and is in the file because its type is
                else:
                    deps[key].append(dkey)
                if dkey in chosen:
                    continue
                chosen[dkey] = d
                deps.setdefault(dkey, [])
                if d.kind == "type":  # `a[i] + b[i]` on a struct: its free operators, which no name in the code spells
                    for op in _operators_of(d, index):
                        okey = (op.file, op.start)
                        deps[key].append(okey)
                        if okey not in chosen:
                            chosen[okey] = op
                            deps[okey] = []
                            work.append((okey, op.text, op.file, op.line))
                if outside and d.kind in {"function", "variable"}:
                    notes.append(f"{name} comes from {d.file}:{d.line}, outside the kernel's translation unit "
                                 "(separate compilation, -rdc); copied into the MEP")
                work.append((dkey, d.text, d.file, d.line))
    order = _topological(deps, root_key, chosen, index)
    return order, missing, notes


def _defines_member_of(d: Decl, owner: Decl) -> bool:
    """`d` is a member function of the type `owner` defined outside its class (`Gen<std::uint32_t>::draw<float>()`)."""
    if d.kind != "function" or owner.kind != "type":
        return False
    head = strip_comments(d.text).split("(", 1)[0]
    return any(re.search(r"\b" + re.escape(n) + r"\s*(?:<[^;{}()]*>)?\s*::\s*~?[A-Za-z_]\w*\s*(?:<[^;{}()]*>)?\s*$", head)
               for n in owner.names)


_SCALAR_WORDS = frozenset("int float double char bool unsigned signed long short const volatile void size_t auto "
                          "return if else for while do".split())


def _operators_of(t: Decl, index: DeclIndex) -> list[Decl]:
    """Free operator functions of the unit whose parameters name one of the type's names (`V2 operator+(const V2& a,
    const V2& b)`), as the kernel may use them."""
    return _operators_on(set(t.names), index)


def _operators_on(types: set[str], index: DeclIndex) -> list[Decl]:
    """Free operator functions of the unit whose parameter types name one of `types` (`float4 operator*(float4 a,
    float s)` for a kernel that uses float4)."""
    out = []
    for name, decls in index.by_name.items():
        if not name.startswith("operator"):
            continue
        for d in decls:
            head = d.text.split("{", 1)[0]
            params = head[head.find("(") + 1: head.rfind(")")] if "(" in head else ""
            words: set[str] = set()
            for param in split_top_level(params):
                names = re.findall(r"[A-Za-z_]\w*", param.split("=")[0])
                words |= set(names[:-1] if len(names) > 1 else names)  # the types, not the parameter's name
            if index.in_unit(d) and words & types:
                out.append(d)
    return out


_DECLARED = re.compile(r"(\b[A-Za-z_][\w:<>]*|[*&])\s*[*&]*\s*\b([A-Za-z_]\w*)\s*(?=[,;=)\[]|\s*:\s)")
_NOT_TYPES = frozenset("return else case goto throw delete new sizeof typedef define".split())
_CONTROL = frozenset("if for while do switch using namespace template typename operator co_return co_yield".split())


# `T random(seed, state);` (an object built in place; also `constexpr unsigned int n(a * b);`, `unsigned int x(i);`)
# and `double rk_double() {` (a member function defined in the item)
_CONSTRUCTED = re.compile(r"(?:^|[;{}(])\s*(?:(?:const|constexpr|static|volatile|register|unsigned|signed|long|short)\s+)*"
                          r"([A-Za-z_][\w:]*(?:<[^<>;()]*>)?)\s*[*&]*\s+([A-Za-z_]\w*)\s*\(")
_DEFINED_FN = re.compile(r"([A-Za-z_][\w:<>]*|[*&])\s*[*&]*\s+([A-Za-z_]\w*)\s*\([^;{}()]*(?:\([^;{}()]*\)[^;{}()]*)*\)"
                         r"\s*(?:const\s*)?(?:noexcept\s*)?\{")


# a member function declared (not defined) in a class body, at a statement's start: `__device__ T lo(const T &a);`
_MEMBER_DECL = re.compile(r"(?:^|(?<=[;{}])|(?<=public:)|(?<=private:)|(?<=protected:))\s*"
                          r"(?:(?:__device__|__host__|__forceinline__|inline|static|virtual|constexpr|explicit|const)\s+)*"
                          r"[A-Za-z_][\w:]*(?:<[^<>;(){}]*>)?[\s*&]+([A-Za-z_]\w*)\s*\([^;{}()]*\)\s*(?:const\s*)?"
                          r"(?:noexcept\s*)?(?:override\s*)?(?:=\s*(?:0|default|delete)\s*)?;")


def declared_names(code: str, stripped: bool = False) -> set[str]:
    """Names the code declares itself: parameters, locals, loop variables (`int i`, `const float* a`, `T sum = 0`,
    every name of `double a, b, c;`), objects built in place (`T random(seed)`), functions it defines (members of a
    structure) and macros it defines (`#define lhsA(a, b) ...` inside a kernel's body)."""
    clean = code if stripped else strip_comments(code)
    names = {m.group(2) for m in _DECLARED.finditer(clean) if m.group(1) not in _NOT_TYPES}
    names |= {m.group(2) for m in _CONSTRUCTED.finditer(clean) if m.group(1) not in _NOT_TYPES | _CONTROL}
    names |= {m.group(2) for m in _DEFINED_FN.finditer(clean) if m.group(1) not in _NOT_TYPES | _CONTROL}
    names |= set(re.findall(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)", clean, re.M))  # macros the item defines itself
    names |= {m.group(1) for m in _TYPEDEF.finditer(clean)}  # `typedef Plain<0, 0> Impl;`, called as `Impl(tid)`
    names |= {m.group(1) for m in _TEMPLATE_PARAM.finditer(clean)}  # `template <typename Keep>`: `Keep (&k)[N]`
    for m in _LOCAL_TYPE.finditer(clean):  # `union view_t {`: its constructor `view_t(...)`; `} view(p);` an object
        names |= {n for n in m.groups() if n}
        close = matching_close(clean, m.end() - 1)
        after = _AFTER_BODY.match(clean, close + 1) if close > 0 else None
        if after:
            names.add(after.group(1))
    for m in _DECL_LIST.finditer(clean):  # `double r43, c1345, c34;`: every declarator, not only the first
        if m.group(1) in _NOT_TYPES | _CONTROL or "," not in m.group(2):
            continue
        items = [_DECLARATOR.match(part) for part in _top_level_commas(m.group(2))]
        if all(items):
            names |= {i.group(1) for i in items if i}
    return names - KEYWORDS


_TYPEDEF = re.compile(r"\btypedef\b[^;{}]*?([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)*;")
_TEMPLATE_PARAM = re.compile(r"(?<=[<,])\s*(?:typename|class)\s*(?:\.\.\.\s*)?([A-Za-z_]\w*)\s*(?=[,>=])")
_LOCAL_TYPE = re.compile(r"\b(?:struct|class|union)\s+(?:__align__\s*\([^()]*\)\s*)?([A-Za-z_]\w*)?\s*(?::[^;{}()]*)?\{")
_AFTER_BODY = re.compile(r"\s*[*&]*\s*([A-Za-z_]\w*)\s*(?=[(;,=\[{])")


_DECL_LIST = re.compile(r"(?:^|[;{}(])\s*(?:(?:const|static|volatile|register|unsigned|signed|long|short)\s+)*"
                        r"([A-Za-z_][\w:]*)(?:<[^<>;()]*>)?\s+([^;{}]+);")
_DECLARATOR = re.compile(r"\s*[*&]*\s*([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)*(?:=.*)?$", re.S)


def _top_level_commas(text: str) -> list[str]:
    out, depth, start = [], 0, 0
    for i, c in enumerate(text):
        depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(c, 0)
        if c == "," and depth == 0:
            out.append(text[start:i])
            start = i + 1
    return out + [text[start:]]


def _is_local_call(name: str, code: str) -> bool:
    """A functor, lambda or function pointer declared in the code itself."""
    return re.search(r"\b" + re.escape(name) + r"\s*=", code) is not None or \
        re.search(r"[\w>*&]\s+" + re.escape(name) + r"\s*[;=({]", code) is not None and \
        re.search(r"\bauto\s+" + re.escape(name), code) is not None


def _topological(deps: dict[tuple[str, int], list[tuple[str, int]]], root: tuple[str, int],
                 chosen: dict[tuple[str, int], Decl], index: DeclIndex) -> list[Decl]:
    order: list[Decl] = []
    state: dict[tuple[str, int], int] = {}
    # the definition of a type the code also declares ahead (`struct Cell; struct Grid { Cell* c; }; struct Cell {
    # Grid* g; };`): a declaration that comes before it in unit order is content with the forward declaration, as
    # it was in the code; the definition comes where a later one needs it, at the latest just before the root
    forward = {k[0] for k, d in chosen.items() if d.kind == "type" and _FORWARD.match(d.text)}
    later = {k for k, d in chosen.items() if k[0] in forward and d.kind == "type" and not _FORWARD.match(d.text)}
    deferred: list[tuple[str, int]] = []

    def visit(key: tuple[str, int]) -> None:
        if state.get(key):
            return  # done, or a cycle through pointers to incomplete types: unit order settles it
        state[key] = 1
        for dep in sorted(set(deps.get(key, [])), key=lambda k: index.order_key(chosen[k])):
            if dep in later and key in chosen and index.order_key(chosen[key]) < index.order_key(chosen[dep]):
                deferred.append(dep)
                continue
            visit(dep)
        if key == root:
            for dep in deferred:  # grows while it runs: a deferred definition may defer another
                visit(dep)
        state[key] = 2
        if key in chosen:
            order.append(chosen[key])

    visit(root)
    return order
