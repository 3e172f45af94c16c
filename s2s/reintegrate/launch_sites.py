"""Applying a variant's launch configuration at every launch site of its kernel in the application.

The MEP measured one problem size; the application may launch with others. So the new configuration is
written as expressions of the site's own grid and block: the block becomes the winner's block, and the
grid covers (old grid x old block) x ratio threads per dimension, where the ratio is what the winner's
rewrite asked for (1 for a new block shape, the lanes per row for warp-per-row, swapped for x/y swaps).
"""
from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path

from tree_sitter import Node

from s2s.lang.dim3 import components
from s2s.lang.edits import extents
from s2s.lang.parsing import parse, src
from s2s.mep.manifest import Manifest
from s2s.scan.ranking import launches_of
from s2s.scan.tree import scan_tree


def _ratios(m: Manifest, grid: tuple[int, ...], block: tuple[int, ...], rules: list[str] | None = None) -> tuple[list[Fraction], bool]:
    """Per-dimension ratio of new to old global threads, and whether x and y were exchanged: from the passes'
    launch rules where the variant records them, else guessed from the numbers (variants of older versions).
    After an `extent:` rule the old threads are its sizes at the MEP's scalars, and only the later rules count."""
    if m.backend == "opencl":  # OpenCL sizes are work-items already
        old, new = [int(g) for g in m.launch.grid], [int(g) for g in grid]
    else:
        old = [m.launch.grid[d] * max(m.launch.block[d], 1) for d in range(3)]
        new = [grid[d] * max(block[d], 1) for d in range(3)]
    ext = _extent_rule(rules)
    if ext is not None and rules is not None:
        sizes = extents(ext, {q.name: q.value for q in m.params if q.role == "scalar"})
        old, rules = (list(sizes) if sizes is not None else old), rules[rules.index(ext) + 1:]
    if rules is not None:
        swapped = rules.count("swap-xy") % 2 == 1
    else:
        swapped = old[0] != old[1] and new[0] >= old[1] and new[1] >= old[0] and new[0] < old[0] * 2 // 1 and new[0] != old[0]
    if swapped:
        old = [old[1], old[0], old[2]]
    ratios = []
    for d in range(3):
        r = Fraction(new[d], old[d]) if old[d] else Fraction(1)
        if abs(float(r) - 1) < 0.05:
            r = Fraction(1)
        elif float(r) >= 1:
            r = Fraction(round(float(r)))
        elif abs(float(r) * round(1 / float(r)) - 1) < 0.05:  # 1/F of a coarsening, seen through the MEP's rounding
            r = Fraction(1, round(1 / float(r)))
        ratios.append(r)
    return ratios, swapped


def _extent_rule(rules: list[str] | None) -> str | None:
    return next((r for r in reversed(rules or []) if r.startswith("extent:")), None)


def _site_extents(rule: str, params: list[str], args: tuple[str, ...]) -> list[str] | None:
    """An `extent:` rule's sizes as expressions of the launch site's own arguments (None when they do not line up)."""
    if len(params) != len(args) or not params:
        return None
    table = dict(zip(params, args))
    sizes = (rule.split(":", 1)[1].split("|") + ["1", "1"])[:3]
    used = [table[w] for e in sizes for w in re.findall(r"\b[A-Za-z_]\w*\b", e) if w in table]
    if any(re.search(r"\+\+|--|(?<![=!<>])=(?!=)", a) for a in used):  # evaluated again in the grid: no side effects
        return None
    return [re.sub(r"\b[A-Za-z_]\w*\b", lambda w: f"({table[w.group(0)]})" if w.group(0) in table else w.group(0), e) for e in sizes]


def _cuda_config(grid_c: list[str], block_c: list[str], ratios: list[Fraction], swapped: bool, block: tuple[int, ...],
                 sizes: list[str] | None = None) -> tuple[str, str]:
    """The new <<<grid, block>>>: the old threads per dimension (or `sizes`, an extent rule's) scaled by the ratios."""
    if swapped:
        grid_c = [grid_c[1], grid_c[0], grid_c[2]]
        block_c = [block_c[1], block_c[0], block_c[2]]
        sizes = [sizes[1], sizes[0], sizes[2]] if sizes is not None else None
    dims = []
    for d in range(3):
        threads = f"({grid_c[d]}) * ({block_c[d]})" if sizes is None else sizes[d]
        r = ratios[d]
        if r != 1:
            threads = f"{threads} * {r.numerator}" if r.denominator == 1 else f"({threads} * {r.numerator} + {r.denominator - 1}) / {r.denominator}"
        dims.append(f"({threads} + {block[d] - 1}) / {block[d]}" if block[d] > 1 else threads)
    return f"dim3({', '.join(dims)})", f"dim3({block[0]}, {block[1]}, {block[2]})"


def apply_launch_change(plan, m: Manifest, root: Path, grid: tuple[int, ...], block: tuple[int, ...],  # type: ignore[no-untyped-def]
                        rules: list[str] | None = None) -> None:
    index = scan_tree(root)
    kernel = next((k for k in index.kernels if k.qualified == m.kernel and k.file == m.origin.get("file")), None)
    if kernel is None:
        plan.manual.append(f"{m.kernel}: set block {block} and grid {grid} (for the MEP's sizes) at its launch sites by hand")
        return
    sites = launches_of(index, kernel)
    ratios, swapped = _ratios(m, grid, block, rules)
    ext = _extent_rule(rules)
    if not sites:
        plan.manual.append(f"{m.kernel}: no launch site found in the tree (launched through a macro?); use block {block}, "
                           f"grid = threads x {[str(r) for r in ratios]} / block")
    # the kernel edit already in the plan moves later offsets of its file; sites go last to first
    kernel_path = next(iter(plan.files), None)
    k_old, k_new = plan.files[kernel_path] if kernel_path is not None else (b"", b"")
    k_pos, k_delta = _first_edit(k_old, k_new), len(k_new) - len(k_old)
    for site in sorted(sites, key=lambda s: (s.file, -s.start_byte)):
        path = (root / site.file).resolve()
        old, cur = plan.files.get(path, (path.read_bytes(), path.read_bytes()))
        start = site.start_byte + (k_delta if path == kernel_path and site.start_byte >= k_pos else 0)
        tree = parse(cur, m.dialect)
        call = tree.root_node.descendant_for_byte_range(start, start + 1)
        while call is not None and call.type != "call_expression":
            call = call.parent
        if call is None:
            plan.manual.append(f"{site.file}:{site.line}: launch of {m.kernel} not found after the kernel edit; set block {block}")
            continue
        fn: Node | None = call
        while fn is not None and fn.type != "function_definition":
            fn = fn.parent
        if site.kind == "chevron":
            cfg = next((c for c in call.children if c.type == "kernel_call_syntax"), None)
            nodes = [c for c in cfg.named_children if c.type != "comment"][:2] if cfg is not None else []
        else:
            args = call.child_by_field_name("arguments")
            items = [c for c in args.named_children if c.type != "comment"] if args is not None else []
            if site.kind == "hipLaunchKernelGGL":
                nodes = items[1:3]
            else:  # a launch macro: edit the call's own grid and block arguments, never the expansion
                g = next((c for c in items if src(cur, c).strip() == site.grid.strip()), None)
                b = next((c for c in items if src(cur, c).strip() == site.block.strip() and c is not g), None)
                nodes = [g, b] if g is not None and b is not None else []
        sizes = _site_extents(ext, [q.name for q in kernel.params], site.args) if ext is not None else None
        if ext is not None and (sizes is None or site.kind == "clEnqueueNDRangeKernel"):
            plan.manual.append(f"{site.file}:{site.line}: launch of {m.kernel}: the index is now 2-D; launch a grid covering "
                               f"{ext[7:].replace('|', ' x ')} threads (the kernel's sizes) in blocks of {block}, scaled by "
                               f"{[str(r) for r in ratios]}, by hand")
            continue
        if site.kind == "clEnqueueNDRangeKernel":
            edited_cl = _opencl_site(cur, call, site, ratios, block, m)
            if edited_cl is None:
                plan.manual.append(f"{site.file}:{site.line}: {site.kind} launch of {m.kernel}: set the local size to {block} and "
                                   f"scale the global size by {[str(r) for r in ratios]} by hand")
            else:
                plan.files[path] = (old, edited_cl)
                plan.notes.append(f"{site.file}:{site.line}: launch of {m.kernel} now uses local size {block[:int(site.work_dim or 1)]}")
            continue
        if len(nodes) != 2:
            plan.manual.append(f"{site.file}:{site.line}: {site.kind} launch of {m.kernel}: set the local size to {block} and "
                               f"scale the global size by {[str(r) for r in ratios]} by hand")
            continue
        g_text, b_text = src(cur, nodes[0]), src(cur, nodes[1])
        new_g, new_b = _cuda_config(components(nodes[0], cur, fn, tree.root_node), components(nodes[1], cur, fn, tree.root_node),
                                    ratios, swapped, block, sizes)
        edited = cur[:nodes[0].start_byte] + new_g.encode() + cur[nodes[0].end_byte:nodes[1].start_byte] + new_b.encode() + cur[nodes[1].end_byte:]
        plan.files[path] = (old, edited)
        plan.notes.append(f"{site.file}:{site.line}: launch of {m.kernel} now <<<{new_g}, {new_b}>>> (was <<<{g_text}, {b_text}>>>)")


def _first_edit(old: bytes, new: bytes) -> int:
    n = min(len(old), len(new))
    i = 0
    while i < n and old[i] == new[i]:
        i += 1
    return i


def _opencl_site(cur: bytes, call, site, ratios: list[Fraction], block: tuple[int, ...], m: Manifest) -> bytes | None:  # type: ignore[no-untyped-def]
    """Declare the new global and local sizes just before the statement and pass them to the call."""
    args = call.child_by_field_name("arguments")
    items = [c for c in args.named_children if c.type != "comment"] if args is not None else []
    if len(items) < 6:
        return None
    try:
        dims = int(src(cur, items[2]).strip())
    except ValueError:
        return None
    stmt = call
    while stmt.parent is not None and stmt.type not in {"expression_statement", "declaration", "return_statement"}:
        stmt = stmt.parent
    if stmt.type not in {"expression_statement", "declaration", "return_statement"}:
        return None
    old_global = src(cur, items[4]).strip()
    tag = re.sub(r"\W", "_", m.kernel.split("::")[-1]) + f"_{site.line}"
    glob = []
    for d in range(dims):
        threads = f"({old_global})[{d}]"
        r = ratios[d]
        if r != 1:
            threads = f"{threads} * {r.numerator}" if r.denominator == 1 else f"({threads} * {r.numerator} + {r.denominator - 1}) / {r.denominator}"
        glob.append(f"(({threads}) + {block[d] - 1}) / {block[d]} * {block[d]}" if block[d] > 1 else threads)
    line_start = cur.rfind(b"\n", 0, stmt.start_byte) + 1
    indent = cur[line_start:stmt.start_byte].decode("latin-1")  # kept only when it is blanks
    indent = indent if indent.strip(" \t") == "" else ""
    decl = (f"size_t s2s_local_{tag}[{dims}] = {{{', '.join(str(b) for b in block[:dims])}}};  /* s2s: the winner's work-group size */\n"
            f"{indent}size_t s2s_global_{tag}[{dims}] = {{{', '.join(glob)}}};\n{indent}")
    out = (cur[:stmt.start_byte] + decl.encode() + cur[stmt.start_byte:items[4].start_byte] + f"s2s_global_{tag}".encode()
           + cur[items[4].end_byte:items[5].start_byte] + f"s2s_local_{tag}".encode() + cur[items[5].end_byte:])
    return out
