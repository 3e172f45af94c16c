"""Instrumenting a copy of the application at the launch sites of one kernel, or of several at once.

Source to source, on a copy (never the original): each file that holds a launch site gets an
`#include` of the generated capture header (CUDA: before its first top-level `#include`; OpenCL: after its last), a call before the
launch statement (it records the arguments, the buffers and the launch configuration) and a call
after it (it records the buffers again). OpenCL: every host file that calls clSetKernelArg gets the
header too, whose macro records the arguments set on each kernel object. CUDA: the kernel's own file
registers a reader for each `__constant__`/`__device__` symbol the kernel reads.

Several kernels share one header and one copy: each has a slot (its place in the list), its launches are counted
and recorded on their own, into the directory and at the launch its slot's environment variables name
(templates/capture/runtime_*.h.j2). A kernel whose sites cannot be instrumented is left out with its error; the
others are instrumented.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from s2s.base.encoding import decode, encode, encoding_of
from s2s.base.errors import UserError
from s2s.base.records import LaunchSite
from s2s.base.resources import render
from s2s.base.treefiles import copy_tree as safe_copy_tree
from s2s.base.treefiles import owner_writable, read_in_copy, write_in_copy
from s2s.lang.parsing import enclosing_loop, parse
from s2s.mep.manifest import Manifest
from s2s.scan.sources import CUDA_EXTS, HIP_EXTS, HOST_EXTS, language_of

from .deduce import declared_template, split_args
from .launch_forms import DEVICE_LAUNCH_KINDS, RUNTIME_LAUNCHES, kernel_expression, runtime_arguments

HEADER = "s2s_capture_rt.h"
_STATEMENT_PARENTS = {"compound_statement", "translation_unit", "case_statement", "labeled_statement"}
_COPY_IGNORE = (".git", ".hg", ".svn")


@dataclass
class Instrumented:
    root: Path  # the instrumented copy of the tree
    header: Path
    sites: list[str] = field(default_factory=list)  # file:line of each instrumented launch
    files: list[str] = field(default_factory=list)  # files changed in the copy
    notes: list[str] = field(default_factory=list)
    sites_of: dict[int, list[str]] = field(default_factory=dict)  # per slot: file:line of its instrumented launches
    notes_of: dict[int, list[str]] = field(default_factory=dict)  # per slot: what concerns that kernel only
    errors: dict[int, UserError] = field(default_factory=dict)  # per slot: why the kernel was not instrumented


def copy_tree(tree: Path, dest: Path, notes: list[str] | None = None) -> Path:
    """The tree copied to `dest` for an instrumented build: regular files and links only, never read through a link
    (`s2s.base.treefiles.copy_tree`), made owner-writable (a read-only tree builds in its copy); what was left out
    (FIFOs, devices, unreadable files) is said in `notes`."""
    skipped = safe_copy_tree(tree, dest, _COPY_IGNORE)
    owner_writable(dest)
    if skipped and notes is not None:
        more = f" (and {len(skipped) - 5} more)" if len(skipped) > 5 else ""
        notes.append(f"left out of the work copy: {'; '.join(skipped[:5])}{more}")
    return dest


def _statement(call, data: bytes):  # type: ignore[no-untyped-def]
    node = call
    while node.parent is not None and not (node.type.endswith("_statement") or node.type == "declaration"):
        node = node.parent
    return node


def _call_at(tree, start: int, end: int):  # type: ignore[no-untyped-def]
    node = tree.root_node.descendant_for_byte_range(start, end)
    while node is not None and not (node.type == "call_expression" and node.start_byte <= start and node.end_byte >= end):
        node = node.parent
    return node


def _include_offset(data: bytes, before: int, after_last: bool = False) -> int:
    """Before the first #include at preprocessor depth 0 (before `before`), else the file's start: the runtime
    header's own system includes then come before the application's macros (NPB's `#define M ...` in a header
    would otherwise break <string>), and after the feature macros a file sets before its first include.
    `after_last`: after the last such #include instead (OpenCL: its clSetKernelArg macro must not reach the
    declarations and C++ wrappers the application includes)."""
    depth, best, pos = 0, 0, 0
    for line in data[:before].splitlines(keepends=True):
        s = line.strip()
        if re.match(rb"#\s*if", s):
            depth += 1
        elif re.match(rb"#\s*endif", s):
            depth = max(0, depth - 1)
        elif depth == 0 and re.match(rb"#\s*include\b", s):
            if not after_last:
                return pos
            best = pos + len(line)
        pos += len(line)
    return best


def _c_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _host_namesake(data: bytes, name: str) -> bool:
    """Whether the file also declares a host function named like the kernel (NPB: `static void k();` wraps the launch
    of `__global__ void k(...)`): `&k` is then an overload set, and the capture call names the kernel's type."""
    short = re.escape(name.split("::")[-1]).encode()
    lines = data.splitlines()
    for i, line in enumerate(lines):
        if not re.search(rb"\b" + short + rb"\s*\(", line) or b"__global__" in line:
            continue
        if i and b"__global__" in lines[i - 1]:
            continue
        if re.match(rb"\s*(?:(?:static|inline|extern|void|int|bool|char|float|double|long|unsigned|auto)\b\s*\**\s*)+"
                    + short + rb"\s*\(", line):
            return True
    return False


@dataclass
class _Slot:
    """What the capture calls at a CUDA kernel's sites need: its slot, its parameter types (for a kernel with a host
    namesake), its template parameters where its definition was read (None: looked for in the file)."""
    slot: int = 0
    param_types: list[str] | None = None
    template: list[str] | None = None
    record_targs: bool = True  # the runtime records the launch's named template arguments
    indirect: bool = False  # a launch through a function pointer: the runtime picks the slot from the function (indirect.py)


def _loop_exit_marks(data: bytes, dialect: str, sites: list[LaunchSite]) -> list[tuple[int, int, bytes]]:
    """The two insertions that put the innermost loop holding `sites` in a block ending with the runtime's loop_exit()
    (none when no loop holds them all)."""
    loop = enclosing_loop(parse(data, dialect).root_node, [(s.start_byte, s.end_byte) for s in sites])
    if loop is None:
        return []
    return [(loop.end_byte, loop.end_byte, b" s2s_capture::loop_exit(); }"), (loop.start_byte, loop.start_byte, b"{ ")]


def _edit_file(data: bytes, dialect: str, sites: list[tuple[LaunchSite, _Slot]], backend: str,
               marks: list[tuple[int, int, bytes]] | None = None) -> tuple[bytes, list[tuple[LaunchSite, UserError]]]:
    """The file with the capture calls around each site that can be instrumented, and the sites that could not
    (each with its error). `marks`: insertions of the caller's, made after the sites' at the same offset (so a mark at
    a loop's end follows the capture call that ends the loop's last statement)."""
    tree = parse(data, dialect)
    enc = encoding_of(data)  # the file's own bytes stay; what is added around them is in its encoding
    edits: list[tuple[int, int, bytes]] = list(marks or [])  # applied first among equal offsets: they land after
    failed: list[tuple[LaunchSite, UserError]] = []
    for site, slot in sites:
        try:
            edits += _site_edits(data, tree, enc, site, backend, slot)
        except UserError as err:
            failed.append((site, err))
    for start, end, text in sorted(edits, key=lambda e: (-e[0], -e[1])):
        data = data[:start] + text + data[end:]
    return data, failed


def _site_edits(data: bytes, tree, enc: str, site: LaunchSite, backend: str,  # type: ignore[no-untyped-def]
                slot: _Slot) -> list[tuple[int, int, bytes]]:
    """The two insertions around one launch statement: the capture call before it and the one after it."""
    edits: list[tuple[int, int, bytes]] = []
    call = _call_at(tree, site.start_byte, site.end_byte)
    if call is None:
        raise UserError(f"capture: the launch at {site.file}:{site.line} was not found in the copy", file=site.file, line=site.line)
    stmt = _statement(call, data)
    where = _c_string(f"{site.file}:{site.line}")
    if stmt.type == "return_statement":
        raise UserError(f"capture: the launch at {site.file}:{site.line} is inside a return statement; "
                        "s2s capture records launches that are statements of their own", file=site.file, line=site.line)
    if backend == "opencl":
        args = call.child_by_field_name("arguments")
        items = [decode(data[c.start_byte:c.end_byte], enc) for c in (args.named_children if args is not None else [])
                 if c.type != "comment"]
        if len(items) < 6:
            raise UserError(f"capture: clEnqueueNDRangeKernel at {site.file}:{site.line} has fewer than 6 arguments",
                            file=site.file, line=site.line)
        before = f"s2s_cap_cl_before({items[0]}, {items[1]}, (cl_uint)({items[2]}), {items[3]}, {items[4]}, {items[5]}, {where});"
        after = f"s2s_cap_cl_after({items[0]}, {where});"
    elif slot.indirect and site.kind in RUNTIME_LAUNCHES:
        raise UserError(f"capture: {site.kind} at {site.file}:{site.line} launches through a pointer that names no kernel "
                        "of the tree: the types behind its argument array are not known", file=site.file, line=site.line)
    elif slot.indirect:
        launched = kernel_expression(site, call, data, enc)
        before = (f"s2s_capture::before_fn(({launched}), {where}, dim3({site.grid}), dim3({site.block}), "
                  f"(size_t)({site.shared_mem.strip() or '0'}), (cudaStream_t)({site.stream.strip() or '0'})"
                  + "".join(f", {a}" for a in site.args) + ");")
        after = f"s2s_capture::after_fn({where});"
    else:
        kernel = kernel_expression(site, call, data, enc)
        ref = f"&{kernel}"
        if slot.param_types is not None and "<" not in kernel and _host_namesake(data, kernel):
            ref = f"static_cast<void (*)({', '.join(slot.param_types)})>(&{kernel})"
        shmem = site.shared_mem.strip() or "0"
        stream = site.stream.strip() or "0"
        args = "".join(f", {a}" for a in site.args)
        at = f"<{slot.slot}>" if slot.slot else ""  # slot 0 is the runtime's default
        template = slot.template if slot.template is not None else _kernel_template(data, kernel.split("::")[-1])
        if site.kind in RUNTIME_LAUNCHES:  # the arguments behind the array of pointers, as the kernel's types
            array = runtime_arguments(call, data, enc)[3]
            before = (f"s2s_capture::before_array{at}({ref}, {where}, dim3({site.grid}), dim3({site.block}), "
                      f"(size_t)({shmem}), (cudaStream_t)({stream}), (void**)({array}));")
        elif _deduced(kernel, template):
            before = (f"s2s_capture::before_deduced{at}({where}, dim3({site.grid}), dim3({site.block}), (size_t)({shmem}), "
                      f"(cudaStream_t)({stream}){args});")
        else:
            before = (f"s2s_capture::before{at}({ref}, {where}, dim3({site.grid}), dim3({site.block}), (size_t)({shmem}), "
                      f"(cudaStream_t)({stream}){args});")
        before = (_explicit_targs(kernel) if slot.record_targs else "") + before
        after = f"s2s_capture::after{at}({where});"
    parent = stmt.parent.type if stmt.parent is not None else "translation_unit"
    braces = parent not in _STATEMENT_PARENTS and not parent.startswith("preproc_")
    if braces and stmt.type == "declaration":
        raise UserError(f"capture: the launch at {site.file}:{site.line} is a declaration that is the body of a "
                        f"{parent}", file=site.file, line=site.line)
    line_start = data.rfind(b"\n", 0, stmt.start_byte) + 1
    indent = data[line_start:stmt.start_byte].decode("latin-1")  # kept only when it is blanks
    indent = indent if not indent.strip(" \t") else ""
    if braces:
        edits.append((stmt.start_byte, stmt.start_byte, encode(f"{{ {before} /* s2s capture */\n{indent}", enc)))
        edits.append((stmt.end_byte, stmt.end_byte, encode(f"\n{indent}{after} }} /* s2s capture */", enc)))
    else:
        edits.append((stmt.start_byte, stmt.start_byte, encode(f"{before}  /* s2s capture */\n{indent}", enc)))
        edits.append((stmt.end_byte, stmt.end_byte, encode(f"\n{indent}{after}  /* s2s capture */", enc)))
    return edits


def _where(sites: list[LaunchSite], limit: int = 4) -> list[str]:
    out = [f"{s.file}:{s.line}" for s in sites[:limit]]
    return out + [f"{len(sites) - limit} more"] if len(sites) > limit else out


def _explicit_targs(kernel: str) -> str:
    """For a launch that names template arguments (`k<scalar_t, TOPK>`, inside a template host function where only
    the instance knows them): a statement that lets the runtime record each as the host compiler names it (a type,
    a value), on the record's `targs` line; "" for a launch that names none."""
    if "<" not in kernel:
        return ""
    given = [a.strip() for a in split_args(kernel.partition("<")[2].rpartition(">")[0]) if a.strip()]
    if not given:
        return ""
    parts = ", ".join('std::string("?")' if "..." in a else f"s2s_capture::targ<{a}>()" for a in given)
    return f"s2s_capture::explicit_targs() = +[]() -> std::string {{ return s2s_capture::join_targs({{{parts}}}); }}; "


def _with_include(data: bytes, header: Path, first_site: int, after_last: bool = False) -> bytes:
    at = _include_offset(data, first_site, after_last)
    line = f'#include "{header}"  /* s2s capture */\n'.encode()
    if at and not data[:at].endswith(b"\n"):
        line = b"\n" + line
    return data[:at] + line + data[at:]


def _symbol_registrations(m: Manifest, slot: int = 0) -> str:
    ns = [p for p in m.kernel.split("::")[:-1] if p and "anonymous" not in p]
    using = "".join(f"using namespace {'::'.join(ns[:k + 1])}; " for k in range(len(ns)))
    out = ["", "// ---- s2s capture: readers of the symbols the kernel reads --------------------------------------",
           "namespace { namespace s2s_capture_symbols { " + using]
    name, at = (f"s2s_reg_{slot}_", f"<{slot}>") if slot else ("s2s_reg_", "")
    for j, s in enumerate(m.symbols):
        out.append(f"static int {name}{j} = s2s_capture::register_symbol{at}(\"{s.name}\", "
                   f"[](std::vector<unsigned char>& out, size_t& esz) {{ out.resize(sizeof({s.name})); "
                   f"esz = sizeof(std::remove_all_extents_t<decltype({s.name})>); "
                   f"return cudaMemcpyFromSymbol(out.data(), {s.name}, sizeof({s.name})); }});")
    out.append("} }")
    return "\n".join(out) + "\n"


def opencl_sites(root: Path, kernel: str, index: Any = None) -> list[LaunchSite]:
    """Every clEnqueueNDRangeKernel of the kernel, and those on kernel objects not resolved to a name
    (the capture header checks the kernel's name at run time); `index`: the tree's scan where it was made."""
    from s2s.scan.tree import scan_tree

    index = index if index is not None else scan_tree(root)
    short = kernel.split("::")[-1]
    return [s for s in index.launches if s.kind == "clEnqueueNDRangeKernel"
            and (s.kernel == short or s.kernel.startswith("<kernel object"))]


def _kernel_template(data: bytes, name: str) -> list[str] | None:
    """The template parameters (`["class T", "int N = 4"]`) where `data` declares `name` as a kernel template
    (`template <class T> __global__ void name(`), else None."""
    pattern = rb"template\s*<([^;{}]*?)>\s*(?:static\s+)?(?:(?:__global__|__launch_bounds__\s*\([^)]*\))\s*)+[^;{}(]*?\b" + re.escape(name.encode()) + rb"\s*\("
    found = re.search(pattern, data)
    return None if found is None else split_args(found.group(1).decode("latin-1"))


def _declared_template(root: Path, m: Manifest) -> list[str] | None:
    """The template parameters of the manifest's kernel, read from its definition in the copy (the kernel may be
    defined in a header and launched elsewhere); [] for a plain kernel, None where the definition was not found."""
    rel = str(m.origin.get("file", ""))
    found = declared_template(root / rel, rel, m.kernel) if rel else None
    return None if found is None else list(found)


def _deduced(kernel: str, template: list[str] | None) -> bool:
    """Whether the launch of `kernel` (as written at the site: `k`, `k<256>`) leaves template arguments to deduction:
    fewer given than the template has parameters without a default (a parameter pack counts as one)."""
    if not template:
        return False
    given = split_args(kernel.partition("<")[2].rpartition(">")[0]) if "<" in kernel else []
    return len([a for a in given if a.strip()]) < len([d for d in template if "=" not in d])


def _family(backend: str) -> str:
    """The runtime that records a backend's launches: "cuda" for CUDA and HIP (built for NVIDIA GPUs), else "opencl"."""
    return "cuda" if backend in {"cuda", "hip"} else backend


def instrument(tree: Path, work: Path, m: Manifest, cuda_sites: list[LaunchSite]) -> Instrumented:
    """Copy `tree` to work/app and instrument the copy for the kernel of manifest `m` (slot 0); a site that cannot be
    instrumented raises its UserError."""
    out = instrument_kernels(tree, work, [(m, cuda_sites)])
    if 0 in out.errors:
        raise out.errors[0]
    out.notes += out.notes_of[0]  # one kernel: its notes are the copy's
    return out


def instrument_kernels(tree: Path, work: Path, kernels: list[tuple[Manifest, list[LaunchSite]]],
                       indirect: list[LaunchSite] | None = None) -> Instrumented:
    """Copy `tree` to work/app once and instrument the copy for every kernel of `kernels` (manifest, its CUDA launch
    sites), kernel i in slot i. A kernel that cannot be instrumented (no launch site, a site that is no statement,
    another backend than the first kernel's) is in `errors` and left out; the others are instrumented.
    `indirect`: the tree's CUDA launches through a function pointer or a template's parameter (indirect.py), each
    instrumented once for every kernel: the runtime records a launch there in the slot of the kernel it runs. A kernel
    without a launch site of its own is captured from them."""
    tree = Path(tree).resolve()
    work = Path(work).resolve()
    copy_notes: list[str] = []
    root = copy_tree(tree, work / "app", copy_notes)
    header = work / HEADER
    out = Instrumented(root=root, header=header, notes=copy_notes)
    backend = _family(kernels[0][0].backend) if kernels else "cuda"
    if any(m.backend == "hip" for m, _ in kernels):
        from .hipcc import refuse_hip_on_amd

        refuse_hip_on_amd()
    slots: list[dict[str, str | list[str]]] = []
    owners: dict[tuple[str, int], tuple[LaunchSite, list[int]]] = {}  # each site once, with the slots it serves
    only_indirect: list[int] = []  # kernels recorded from the indirect sites alone
    index = None
    for i, (m, cuda_sites) in enumerate(kernels):
        short = m.kernel.split("::")[-1]
        out.sites_of[i], out.notes_of[i] = [], []
        if backend == "opencl":
            slots.append({"short": short, "kinds": "".join("s" if p.role == "scalar" else "l" if p.space == "local" else "b"
                                                           for p in m.params)})
        else:
            slots.append({"short": short, "name": "::".join(part for part in m.kernel.split("::") if "anonymous" not in part),
                          "fallback": [str(int(p.count)) if p.role != "scalar" and isinstance(p.count, int)
                                                       else "0" for p in m.params]})
        if _family(m.backend) != backend:
            out.errors[i] = UserError(f"capture: {m.kernel} is a {m.backend} kernel and {kernels[0][0].kernel} a {backend} one: "
                                      "one capture run records kernels of one kind", hint=f"capture {m.kernel} on its own")
            continue
        if backend == "opencl":
            if index is None:
                from s2s.scan.tree import scan_tree

                index = scan_tree(root)
            sites = opencl_sites(root, m.kernel, index)
        else:
            sites = [s for s in cuda_sites if s.kind in DEVICE_LAUNCH_KINDS]
            out.notes_of[i] += [f"{s.file}:{s.line}: {s.kind} launch not instrumented (chevron and hipLaunchKernelGGL "
                                "launches only)" for s in cuda_sites if s.kind not in DEVICE_LAUNCH_KINDS]
            if not sites and indirect:  # recorded where the run launches it through a function pointer
                only_indirect.append(i)
                out.notes_of[i].append(f"{m.kernel} has no launch site that names it; recorded from the launches through a "
                                       f"function pointer or a template's parameter ({', '.join(_where(indirect))}; the runtime names "
                                       "the function launched there with cudaFuncGetName, CUDA 12.3 or later)")
                continue
        if not sites:
            out.errors[i] = UserError(f"capture: no launch site of {m.kernel} found in {tree}", file=str(tree),
                                      hint="s2s capture instruments the statements that launch the kernel")
            continue
        for s in sites:
            key = (s.file, s.start_byte)
            if key not in owners:
                owners[key] = (s, [i])
            elif backend == "opencl":  # one site serves every kernel it may launch (the runtime checks the name)
                owners[key][1].append(i)
            else:  # a chevron (a hipLaunchKernelGGL) names one kernel: the first that listed the site records it
                out.notes_of[i].append(f"{s.file}:{s.line}: the launch site is instrumented for "
                                       f"{kernels[owners[key][1][0]][0].kernel}")
    through: set[tuple[str, int]] = set()  # the indirect sites: one call serves every kernel instrumented
    if backend == "cuda" and indirect:
        served = [i for i in range(len(kernels)) if i not in out.errors]
        for s in indirect:
            key = (s.file, s.start_byte)
            if served and s.kind in DEVICE_LAUNCH_KINDS and key not in owners:
                owners[key] = (s, list(served))
                through.add(key)
    template = "capture/runtime_opencl.h.j2" if backend == "opencl" else "capture/runtime_cuda.h.j2"
    header.write_text(render(template, kernels=[m.kernel for m, _ in kernels], slots=slots))
    info = {i: _Slot(i, None if m.template_args else [p.type for p in m.params],
                     _declared_template(root, m) if backend != "opencl" else None)
            for i, (m, _) in enumerate(kernels) if i not in out.errors}
    by_file: dict[str, list[tuple[LaunchSite, list[int]]]] = {}
    for s, slots_of in owners.values():
        by_file.setdefault(s.file, []).append((s, slots_of))
    edited: dict[str, tuple[bytes, list[tuple[LaunchSite, list[int]]]]] = {}
    missed: set[tuple[str, int]] = set()  # indirect sites that could not be instrumented
    for rel, file_sites in by_file.items():
        data = read_in_copy(root / rel)
        dialect = language_of(rel, data)
        todo = [(s, _Slot(record_targs=False, indirect=True) if (s.file, s.start_byte) in through else info[owned[0]])
                for s, owned in file_sites if owned[0] in info]
        text, failed = _edit_file(data, "cpp" if dialect == "opencl" else dialect, todo, backend)
        for s, err in failed:  # the kernels this site launches are left out: the run would miss their launches there
            if (s.file, s.start_byte) in through:  # which kernel it runs is not known: its launches are not counted
                missed.add((s.file, s.start_byte))
                for i in owners[(s.file, s.start_byte)][1]:  # (nor timed in the profile: the ordinals agree)
                    out.notes_of[i].append(f"{s.file}:{s.line}: launch through a function pointer not instrumented: "
                                           f"{err.message}")
                continue
            for i in owners[(s.file, s.start_byte)][1]:
                out.errors.setdefault(i, err)
        edited[rel] = (text, file_sites)
    if through and through <= missed:
        for i in only_indirect:
            out.errors.setdefault(i, UserError(f"capture: no launch site of {kernels[i][0].kernel} found in {tree}, and none "
                                               "of the launches through a function pointer could be instrumented",
                                               file=str(tree), hint="; ".join(out.notes_of[i][-2:])))
    changed: dict[str, bytes] = {}
    for rel, (text, file_sites) in edited.items():
        live = [(s, owned) for s, owned in file_sites if any(i not in out.errors for i in owned)
                and (s.file, s.start_byte) not in missed]
        if not live:
            continue
        changed[rel] = _with_include(text, header, min(s.start_byte for s, _ in file_sites), backend == "opencl")
        for s, owned in sorted(live, key=lambda x: x[0].start_byte):
            out.sites.append(f"{s.file}:{s.line}")
            for i in owned:
                out.sites_of[i].append(f"{s.file}:{s.line}")
    if backend == "opencl":
        for path in sorted(root.rglob("*")):
            rel = path.relative_to(root).as_posix()
            if rel in changed or not path.is_file() or path.suffix.lower() not in HOST_EXTS | CUDA_EXTS | HIP_EXTS:
                continue
            try:
                data = read_in_copy(path)
            except OSError:  # not a regular file, unreadable or over the cap: scan did not read it either
                continue
            m_call = re.search(rb"\bclSetKernelArg\s*\(", data)
            if m_call:
                changed[rel] = _with_include(data, header, m_call.start(), True)
    else:
        for i, (m, _) in enumerate(kernels):
            if i in out.errors or not m.symbols:
                continue
            rel = str(m.origin.get("file", ""))
            path = root / rel
            if rel and path.is_file():
                data = changed[rel] if rel in changed else read_in_copy(path)
                if f'#include "{header}"'.encode() not in data:
                    kernel_at = int(m.origin.get("start_byte", len(data)) or 0)
                    data = _with_include(data, header, kernel_at)
                changed[rel] = data + _symbol_registrations(m, i).encode()
            else:
                out.notes_of[i].append(f"symbols {', '.join(s.name for s in m.symbols)}: the kernel's file was not "
                                       "found; they are not captured and are filled from the seed")
    for rel, data in changed.items():
        write_in_copy(root, rel, data)
        out.files.append(rel)
    return out


def wrap_launch_sites(root: Path, header: Path, sites: list[LaunchSite], *, mark_loop_exit: bool = False) -> list[str]:
    """In the copy `root`, every CUDA chevron launch of `sites` wrapped in `s2s_capture::before(&k, ...)` and
    `s2s_capture::after(...)` calls, and its file made to include `header` (a runtime that defines them: the kernel
    capture's, or the sequence capture's); the FILE:LINE of each site wrapped. `mark_loop_exit`: the innermost loop
    holding a file's sites is followed by `s2s_capture::loop_exit();` (in a block of its own), so that the sequence
    runtime ends its window where one execution of the loop ends, before the host code around the loop (a reset of
    the buffers, other kernels) changes the state the window's replay starts from."""
    by_file: dict[str, list[LaunchSite]] = {}
    for s in sites:
        if s.kind in DEVICE_LAUNCH_KINDS:
            by_file.setdefault(s.file, []).append(s)
    done: list[str] = []
    for rel, file_sites in sorted(by_file.items()):
        data = read_in_copy(root / rel)
        dialect = language_of(rel, data)
        marks = _loop_exit_marks(data, dialect, file_sites) if mark_loop_exit else []
        edited, failed = _edit_file(data, dialect, [(s, _Slot()) for s in file_sites], "cuda", marks)
        if failed:
            raise failed[0][1]
        write_in_copy(root, rel, _with_include(edited, header, min(s.start_byte for s in file_sites)))
        done += [f"{s.file}:{s.line}" for s in sorted(file_sites, key=lambda s: s.start_byte)]
    return done
