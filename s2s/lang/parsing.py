"""tree-sitter parsing of CUDA, HIP, C++ host code and OpenCL C.

OpenCL C does not parse with the CUDA grammar (address-space qualifiers), so OpenCL sources are
normalised first by blanking those keywords with spaces of the same length: byte offsets stay exact,
and the blanked words are read back from the original text where they matter.
"""
from __future__ import annotations

import re
from functools import cache, lru_cache

import tree_sitter_cuda
from tree_sitter import Language, Node, Parser, Query, QueryCursor, Tree

from s2s.base.resources import read_grammar_query
from s2s.lang.textsplit import blank_directives_in_lists

OPENCL_KERNEL_WORDS = ("__kernel", "kernel")
_OPENCL_BLANK = re.compile(
    rb"\b(__kernel|kernel|__global|global|__local|local|__constant|constant|__private|private|"
    rb"__read_only|read_only|__write_only|write_only|__read_write|read_write)\b(?!\s*[(=;,\[.])"
)
_OPENCL_RESTRICT = re.compile(rb"\brestrict\b")


@lru_cache(maxsize=1)
def language() -> Language:
    return Language(tree_sitter_cuda.language())


@lru_cache(maxsize=1)
def parser() -> Parser:
    return Parser(language())


@cache
def query(name: str) -> Query:
    return Query(language(), read_grammar_query(name))


def captures(name: str, node: Node) -> dict[str, list[Node]]:
    return QueryCursor(query(name)).captures(node)


def normalize_opencl(data: bytes) -> bytes:
    """Blank OpenCL-only keywords, keeping every byte offset."""
    out = _OPENCL_BLANK.sub(lambda m: b" " * len(m.group(0)), data)
    return _OPENCL_RESTRICT.sub(lambda m: b" " * len(m.group(0)), out)


_CLUSTER = re.compile(rb"__cluster_dims__\s*\([^()]*\)|\b__(?:builtin_)?align__\s*\([^()]*\)")
_BOUNDS3 = re.compile(rb"(__launch_bounds__\s*\([^(),]*,[^(),]*)(,[^(),]*)\)")
_LAMBDA_SPACE = re.compile(rb"(\]\s*)(__device__|__host__\s+__device__|__host__)(?=\s*[(\w])")


def normalize_cuda(data: bytes) -> bytes:
    """Blank CUDA syntax tree-sitter-cuda does not know, keeping every byte offset: `__cluster_dims__(...)`,
    `__align__(16)` (`typedef struct __align__(16) {...} T;` is otherwise no type), the third argument of
    `__launch_bounds__`, and the execution space of extended lambdas."""
    if b"__cluster_dims__" not in data and b"__launch_bounds__" not in data and b"]" not in data \
            and b"align__" not in data:
        return data
    out = _CLUSTER.sub(lambda m: b" " * len(m.group(0)), data)
    out = _BOUNDS3.sub(lambda m: m.group(1) + b" " * len(m.group(2)) + b")", out)
    return _LAMBDA_SPACE.sub(lambda m: m.group(1) + b" " * len(m.group(2)), out)


_GLOBAL = b"__global__"


def spell_macros(data: bytes, kernel_macros: frozenset[str], blank_macros: frozenset[str] = frozenset()) -> bytes:
    """`CUB_DETAIL_KERNEL_ATTRIBUTES void k(...)` read as `__global__                   void k(...)`: an object-like
    macro known to expand to `__global__` is spelled as the keyword, padded to its length, so that every byte offset
    stays (a macro word before the return type of a template is a syntax error to tree-sitter). Names shorter than
    the keyword stay as they are. `blank_macros` (`CUB_NAMESPACE_BEGIN` = `namespace cub {`, and its `}`) become
    spaces: an opened block tree-sitter cannot see would leave its closing brace unbalanced."""
    for name in blank_macros:
        word = name.encode()
        if word in data:
            data = re.sub(rb"\b" + re.escape(word) + rb"\b", b" " * len(word), data)
    for name in kernel_macros:
        word = name.encode()
        if len(word) >= len(_GLOBAL) and word in data:
            data = re.sub(rb"\b" + re.escape(word) + rb"\b", _GLOBAL + b" " * (len(word) - len(_GLOBAL)), data)
    return data


def parse(data: bytes, dialect: str, kernel_macros: frozenset[str] = frozenset(),
          blank_macros: frozenset[str] = frozenset()) -> Tree:
    text = normalize_opencl(data) if dialect == "opencl" else normalize_cuda(data)
    text = blank_directives_in_lists(text)  # `#ifdef` lines inside a parameter list: one branch, as the compiler reads it
    if (kernel_macros or blank_macros) and dialect != "opencl":
        text = spell_macros(text, kernel_macros, blank_macros)
    return parser().parse(text)


def text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", "replace")


def src(data: bytes, node: Node) -> str:
    """The original text under a node (not the normalised one)."""
    return data[node.start_byte : node.end_byte].decode("utf-8", "replace")


MAX_NESTING = 400  # syntax nodes deep; the analyses walk kernels recursively, and no real kernel comes near this


def nesting(node: Node, limit: int = MAX_NESTING) -> int:
    """How deep the syntax under `node` goes, counted without recursion and at most to `limit` + 1."""
    deepest, stack = 0, [(node, 0)]
    while stack:
        n, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        stack.extend((c, depth + 1) for c in n.children)
    return deepest


def descendants(node: Node, named: bool = False) -> list[Node]:
    """`node` and every node under it (`named`: the named ones), in no particular order (for counting and collecting);
    an explicit stack, so that a kernel nested 100,000 blocks deep is input, not a RecursionError."""
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(n.named_children if named else n.children)
    return out


LOOP_TYPES = frozenset({"for_statement", "while_statement", "do_statement", "for_range_loop"})


def enclosing_loop(root: Node, ranges: list[tuple[int, int]]) -> Node | None:
    """The innermost loop statement holding every byte range of `ranges` (launch sites, say), None when none does."""
    if not ranges:
        return None
    node: Node | None = root.descendant_for_byte_range(ranges[0][0], ranges[0][1])
    while node is not None:
        if node.type in LOOP_TYPES and all(node.start_byte <= a and b <= node.end_byte for a, b in ranges):
            return node
        node = node.parent
    return None


def first_error(node: Node) -> Node | None:
    """The first ERROR or MISSING node under a tree with errors (in document order; no recursion, so 100k nested
    blocks are fine)."""
    stack = [node]
    while stack:
        cur = stack.pop()
        if cur.is_error or cur.is_missing:
            return cur
        stack.extend(reversed([c for c in cur.children if c.has_error or c.is_missing or c.is_error]))
    return None


def count_errors(node: Node) -> int:
    """ERROR and MISSING nodes under `node` (without recursion)."""
    if not node.has_error:
        return 0
    n, stack = 0, [node]
    while stack:
        cur = stack.pop()
        n += 1 if (cur.is_error or cur.is_missing) else 0
        stack.extend(c for c in cur.children if c.has_error or c.is_missing or c.is_error)
    return n
