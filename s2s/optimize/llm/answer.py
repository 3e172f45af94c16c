"""Turning an LLM's answer into a candidate kernel file, or a recorded reason why not.

The answer's code is parsed with tree-sitter; it must define the kernel under its original name with
the original parameters (a changed signature needs a declared launch mapping, which answers cannot
give). The kernel's definition replaces the original one; other functions the answer adds are inserted
just before it. A ```json block may carry a new launch: {"block": [x, y, z], "grid": [x, y, z]}.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

from s2s.lang.parsing import parse, text
from s2s.optimize.candidate import LaunchOverride

_BLOCK = re.compile(r"```([\w+-]*)[ \t]*\n(.*?)```", re.S)


@dataclass(frozen=True)
class Parsed:
    source: bytes | None
    launch: LaunchOverride | None
    reason: str  # empty when source is set


def _functions(tree_root):  # type: ignore[no-untyped-def]
    out = []
    stack = [tree_root]
    while stack:
        n = stack.pop()
        if n.type == "function_definition":
            out.append(n)
            continue
        stack.extend(reversed(n.named_children))
    return out


def _name(fn) -> str:  # type: ignore[no-untyped-def]
    d = fn.child_by_field_name("declarator")
    while d is not None and d.type != "function_declarator":
        d = d.child_by_field_name("declarator")
    inner = d.child_by_field_name("declarator") if d is not None else None
    return text(inner).split("::")[-1]


def _signature(fn) -> list[str]:  # type: ignore[no-untyped-def]
    d = fn.child_by_field_name("declarator")
    while d is not None and d.type != "function_declarator":
        d = d.child_by_field_name("declarator")
    params = d.child_by_field_name("parameters") if d is not None else None
    out = []
    for p in params.named_children if params is not None else []:
        t = " ".join(text(p).replace("__restrict__", "").replace("restrict", "").replace("const", "").split())
        out.append(re.sub(r"\s*\*\s*", "*", t))
    return out


def parse_answer(answer: str, kernel_file: bytes, kernel_range: tuple[int, int], kernel_name: str, dialect: str) -> Parsed:
    blocks = _BLOCK.findall(answer)
    code_blocks = [b for lang, b in blocks if lang.lower() not in {"json", "text", "sh", "bash", "console"}]
    if not code_blocks:
        return Parsed(None, None, "no code block in the answer")
    code = max(code_blocks, key=len)
    launch = _launch(blocks)
    tree = parse(code.encode(), dialect)
    if tree.root_node.has_error:
        return Parsed(None, launch, "the answer's code does not parse")
    fns = [f for f in _functions(tree.root_node) if _name(f) == kernel_name]
    if not fns:
        return Parsed(None, launch, f"the answer does not define the kernel {kernel_name}")
    new_fn = fns[0]
    old_tree = parse(kernel_file, dialect)
    old_fns = [f for f in _functions(old_tree.root_node) if _name(f) == kernel_name and f.start_byte >= kernel_range[0] - 64]
    if old_fns and _signature(old_fns[0]) != _signature(new_fn):
        return Parsed(None, launch, f"changed signature: ({', '.join(_signature(old_fns[0]))}) -> ({', '.join(_signature(new_fn))})")
    code_bytes = code.encode()
    start = new_fn.start_byte
    if new_fn.parent is not None and new_fn.parent.type == "template_declaration":
        start = new_fn.parent.start_byte
    kernel_text = code_bytes[start:new_fn.end_byte]
    if dialect == "opencl" and not kernel_text.lstrip().startswith((b"__kernel", b"kernel")):
        before = code_bytes[:start].rstrip()
        m = re.search(rb"(__kernel|kernel)\s*$", before)
        if m:
            kernel_text = before[m.start():] + b" " + kernel_text
    helpers = [code_bytes[f.start_byte:f.end_byte] for f in _functions(tree.root_node)
               if _name(f) != kernel_name and code_bytes[f.start_byte:f.end_byte] not in kernel_file]
    extra = b"".join(b"// s2s: helper added by the proposer\n" + h + b"\n" for h in helpers)
    start_k, end_k = kernel_range
    source = kernel_file[:start_k] + extra + kernel_text + kernel_file[end_k:]
    return Parsed(source, launch, "")


def _launch(blocks: list[tuple[str, str]]) -> LaunchOverride | None:
    for lang, body in blocks:
        if lang.lower() != "json":
            continue
        try:
            data = json.loads(body)
            block = tuple(int(x) for x in (list(data["block"]) + [1, 1, 1])[:3])
            grid = tuple(int(x) for x in (list(data["grid"]) + [1, 1, 1])[:3])
            return LaunchOverride(grid=grid, block=block, shared_mem=int(data.get("shared_mem", 0)))  # type: ignore[arg-type]
        except (ValueError, KeyError, TypeError):
            continue
    return None
