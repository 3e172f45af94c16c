"""Per-file inventory: the kernels and launch sites one parsed file holds."""
from __future__ import annotations

import bisect
import hashlib
import itertools
import re

from tree_sitter import Node, QueryCursor

from s2s.base.records import Kernel, LaunchSite, Param, ParseProblem
from s2s.lang.params import make_param
from s2s.lang.parsing import captures, count_errors, first_error, parse, query, src, text
from s2s.lang.textsplit import split_top_level

from .launch_macros import LaunchMacro
from .sources import SourceFile, language_of

LOOP_TYPES = {"for_statement", "while_statement", "do_statement", "for_range_loop"}
SCOPE_TYPES = {"namespace_definition"}
# Launch forms the "launches" query finds; a file without any of these bytes skips that query.
_LAUNCH_BYTES = (b"<<<", b"hipLaunchKernel", b"hipExtLaunchKernel", b"clEnqueueNDRangeKernel", b"cudaLaunch", b"hipLaunch")


class LineTable:
    """Line numbers of byte offsets in O(log n) each: the newline offsets are found once per file."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self._starts: list[int] | None = None

    def line(self, offset: int) -> int:
        if self._starts is None:
            self._starts = [m.end() for m in re.finditer(b"\n", self.data)]
        return bisect.bisect_right(self._starts, offset) + 1


class FileFacts:
    """What one file holds, with the tree kept only while the file is processed."""

    def __init__(self, source: SourceFile, kernel_macros: frozenset[str] = frozenset(),
                 launch_macros: dict[str, LaunchMacro] | None = None, blank_macros: frozenset[str] = frozenset(),
                 language: str = "") -> None:
        self.source = source
        self.data = source.data
        # only the macros this file spells are worth a query (every macro name is a word of the file or absent)
        self.launch_macros = {n: m for n, m in (launch_macros or {}).items() if n.encode() in self.data}
        kernel_macros = frozenset(n for n in kernel_macros if n.encode() in self.data)
        blank_macros = frozenset(n for n in blank_macros if n.encode() in self.data)
        self.dialect = language or language_of(source.rel, source.data)
        self.tree = parse(self.data, self.dialect, kernel_macros, blank_macros)
        self.kernel_macros = kernel_macros
        self.lines = LineTable(self.data)

    # -- problems ---------------------------------------------------------------------------
    def problems(self) -> list[ParseProblem]:
        root = self.tree.root_node
        if not root.has_error:
            return []
        node = first_error(root)
        n = count_errors(root)
        if node is None:
            return [ParseProblem(self.source.rel, 1, 1, "parse error")]
        kind = "missing " + node.type if node.is_missing else "syntax error"
        snippet = src(self.data, node)[:40].replace("\n", " ")
        msg = f"{kind} near '{snippet}'" + (f" ({n} error nodes in file)" if n > 1 else "")
        return [ParseProblem(self.source.rel, node.start_point[0] + 1, node.start_point[1] + 1, msg)]

    # -- kernels ----------------------------------------------------------------------------
    def kernels(self) -> list[Kernel]:
        root = self.tree.root_node
        found: list[Kernel] = []
        if self.dialect == "opencl":
            for fn in captures("functions", root).get("function", []):
                at = self._opencl_kernel_word(fn)
                if at >= 0:
                    found.append(self._kernel(fn, "opencl", "", start=at))
            return found
        lang = "hip" if self.dialect == "hip" else "cuda"
        spelled = b"__global__" in self.data or any(len(m) >= len("__global__") for m in self.kernel_macros)
        for fn in captures("kernels", root).get("kernel", []) if spelled else []:
            found.append(self._kernel(fn, lang, self._hiding_macro(fn) if self.kernel_macros else ""))
        if self.kernel_macros:
            seen = {k.start_byte for k in found}
            for fn in captures("functions", root).get("function", []):
                macro = self._hiding_macro(fn)
                if macro:
                    k = self._kernel(fn, lang, macro)
                    if k.start_byte not in seen:
                        found.append(k)
        found.sort(key=lambda k: k.start_byte)
        return found

    def _opencl_kernel_word(self, fn: Node) -> int:
        """Offset of the `__kernel` keyword that makes this function a kernel, or -1."""
        before = self.data[max(0, fn.start_byte - 64) : fn.start_byte]
        m = re.search(rb"(?:^|[^\w])(__kernel|kernel)\s*$", before)
        return fn.start_byte - len(before) + m.start(1) if m else -1

    def _hiding_macro(self, fn: Node) -> str:
        for child in fn.children:
            if child.type == "function_declarator":
                break
            word = src(self.data, child).strip()
            if word in self.kernel_macros:
                return word
        # `KERNEL void f(...)` can also parse with KERNEL as the type and `void` lost in an error; and the macro may
        # follow `__launch_bounds__(...)`: every word between the start and the declarator counts
        decl = _function_declarator(fn)
        end = decl.start_byte if decl is not None else fn.start_byte + 80
        for word in re.findall(r"[A-Za-z_]\w*", self.data[fn.start_byte:end].decode("utf-8", "replace")):
            if word in self.kernel_macros:
                return word
        return ""

    def _kernel(self, fn: Node, lang: str, via: str, start: int = -1) -> Kernel:
        outer = fn
        template_params: tuple[str, ...] = ()
        if fn.parent is not None and fn.parent.type == "template_declaration":
            outer = fn.parent
            plist = outer.child_by_field_name("parameters")
            if plist is not None:
                template_params = tuple(src(self.data, c) for c in plist.named_children if c.type != "comment")
        declarator = _function_declarator(fn)
        name_node = declarator.child_by_field_name("declarator") if declarator else None
        name = text(name_node).strip()
        short = name.split("::")[-1]
        qualified = "::".join(self._namespaces(fn) + [name]) if name else ""
        params = self._params(declarator) if declarator else ()
        qualifiers = tuple(
            src(self.data, c).strip() for c in fn.children
            if c.type in {"launch_bounds", "storage_class_specifier", "attribute_specifier", "type_qualifier", "attribute_declaration"}
            or (not c.is_named and c.type in {"__global__", "__device__", "__host__", "__forceinline__", "__noinline__"})
        )
        if fn.parent is not None and fn.parent.type == "linkage_specification":
            qualifiers = ('extern "C"',) + qualifiers
        body = fn.child_by_field_name("body")
        start_byte = outer.start_byte if start < 0 else start
        if start >= 0:
            qualifiers = ("__kernel",) + qualifiers
        kernel_text = self.data[start_byte : outer.end_byte]
        return Kernel(
            name=short,
            qualified=qualified,
            file=self.source.rel,
            line=self.lines.line(start_byte),
            language=lang,
            params=params,
            template_params=template_params,
            qualifiers=qualifiers,
            start_byte=start_byte,
            end_byte=outer.end_byte,
            sha256=hashlib.sha256(kernel_text).hexdigest(),
            via_macro=via,
            loop_depth=loop_depth(body) if body is not None else 0,
        )

    def _namespaces(self, node: Node) -> list[str]:
        names: list[str] = []
        cur = node.parent
        while cur is not None:
            if cur.type == "namespace_definition":
                nm = cur.child_by_field_name("name")
                names.append(text(nm) if nm is not None else "(anonymous namespace)")
            cur = cur.parent
        return list(reversed(names))

    def _params(self, declarator: Node) -> tuple[Param, ...]:
        plist = declarator.child_by_field_name("parameters")
        if plist is None:
            return ()
        out: list[Param] = []
        prev_end = plist.start_byte + 1
        for child in plist.children:
            if child.type in {"parameter_declaration", "optional_parameter_declaration", "variadic_parameter_declaration"}:
                # OpenCL qualifiers were blanked and sit before the node: read from the last delimiter.
                raw = self.data[prev_end : child.end_byte].decode("utf-8", "replace").strip()
                out.append(make_param(raw, text(child.child_by_field_name("declarator"))))
            if child.type in {",", "(", "parameter_declaration", "optional_parameter_declaration"}:
                prev_end = child.end_byte
        return tuple(out)

    # -- launches ---------------------------------------------------------------------------
    def launches(self) -> list[LaunchSite]:
        root = self.tree.root_node
        caps = captures("launches", root) if any(b in self.data for b in _LAUNCH_BYTES) else {}
        sites = [self._chevron(n) for n in caps.get("chevron", [])]
        cl_objects: dict[str, str] | None = None
        for call in caps.get("api_call", []):
            fn = text(call.child_by_field_name("function"))
            if fn == "clEnqueueNDRangeKernel":
                if cl_objects is None:
                    cl_objects = self._cl_kernel_objects()
                site = self._cl_launch(call, cl_objects)
            elif fn in {"cudaLaunchKernel", "cudaLaunchCooperativeKernel", "hipLaunchKernel", "hipLaunchCooperativeKernel"}:
                site = self._runtime_launch(call, fn)
            else:
                site = self._hip_launch(call)
            if site is not None:
                sites.append(site)
        if self.launch_macros:
            sites.extend(self._macro_launches())
        sites.sort(key=lambda s: s.start_byte)
        return sites

    def _macro_launches(self) -> list[LaunchSite]:
        out = []
        for call in captures("calls", self.tree.root_node).get("call", []):
            fn = text(call.child_by_field_name("function"))
            lm = self.launch_macros.get(fn)
            args_node = call.child_by_field_name("arguments")
            if lm is None or args_node is None:
                continue
            items = [c for c in args_node.named_children if c.type != "comment"]
            if lm.kernel >= len(items):
                continue
            name, targs = _split_template(items[lm.kernel])
            config = [src(self.data, items[int(c[1:])]) if c.startswith("#") and int(c[1:]) < len(items) else c for c in lm.config]
            args = [src(self.data, c) for c in items[lm.args_from:]] if lm.args_from >= 0 else []
            site = self._site(call, name, f"macro:{fn}", config, args, targs)
            out.append(site)
        return out

    def _site(self, call: Node, kernel: str, kind: str, config: list[str], args: list[str], targs: str = "") -> LaunchSite:
        fn_name, depth, loop_line = _context(call)
        grid, block, shmem, stream = (config + ["", "", "", ""])[:4]
        return LaunchSite(
            kernel=kernel, file=self.source.rel, line=call.start_point[0] + 1, kind=kind, grid=grid, block=block,
            shared_mem=shmem, stream=stream, args=tuple(args), template_args=targs, enclosing_function=fn_name,
            in_loop=depth > 0, loop_depth=depth, loop_line=loop_line, start_byte=call.start_byte, end_byte=call.end_byte,
        )

    def _chevron(self, call: Node) -> LaunchSite:
        fn = call.child_by_field_name("function")
        name, targs = _split_template(fn)
        config_node = next(c for c in call.children if c.type == "kernel_call_syntax")
        config = [src(self.data, c) for c in config_node.named_children if c.type != "comment"]
        args_node = call.child_by_field_name("arguments")  # `0,  // start` : the comment is no argument
        args = [src(self.data, c) for c in args_node.named_children if c.type != "comment"] if args_node else []
        return self._site(call, name, "chevron", config, args, targs)

    def _hip_launch(self, call: Node) -> LaunchSite | None:
        args_node = call.child_by_field_name("arguments")
        if args_node is not None and "HIP_KERNEL_NAME" in src(self.data, args_node):
            return self._hip_kernel_name_launch(call, src(self.data, args_node))
        items = [c for c in args_node.named_children if c.type != "comment"] if args_node is not None else []
        if len(items) < 5:
            return None
        kernel_node = items[0]
        if kernel_node.type == "parenthesized_expression" and kernel_node.named_children:
            kernel_node = kernel_node.named_children[0]  # hipLaunchKernelGGL((k<T>), ...)
        if kernel_node.type == "call_expression" and text(kernel_node.child_by_field_name("function")) == "HIP_KERNEL_NAME":
            inner = kernel_node.child_by_field_name("arguments")
            if inner is not None and inner.named_children:  # hipLaunchKernelGGL(HIP_KERNEL_NAME(k<T>), ...)
                kernel_node = inner.named_children[0]
        name, targs = _split_template(kernel_node)
        config = [src(self.data, c) for c in items[1:5]]
        return self._site(call, name, "hipLaunchKernelGGL", config, [src(self.data, c) for c in items[5:]], targs)

    def _hip_kernel_name_launch(self, call: Node, args_text: str) -> LaunchSite | None:
        """hipLaunchKernelGGL(HIP_KERNEL_NAME(k<T, 4>), ...): the macro hides template commas; read the text."""
        parts = split_top_level(args_text.strip()[1:-1], angle=True)
        m = re.fullmatch(r"HIP_KERNEL_NAME\s*\((.*)\)", parts[0].strip(), re.S) if parts else None
        if m is None or len(parts) < 5:
            return None
        inner = m.group(1).strip()
        name, targs = (inner[: inner.index("<")].strip(), inner[inner.index("<") + 1 : inner.rindex(">")].strip()) \
            if "<" in inner else (inner, "")
        return self._site(call, name, "hipLaunchKernelGGL", parts[1:5], parts[5:], targs)

    def _runtime_launch(self, call: Node, fn: str) -> LaunchSite | None:
        """cudaLaunchKernel((void*)k, grid, block, args, shmem, stream): the kernel from the first argument."""
        args_node = call.child_by_field_name("arguments")
        items = [c for c in args_node.named_children if c.type != "comment"] if args_node is not None else []
        if len(items) < 3:
            return None
        kernel_text = re.sub(r"\((?:const\s+)?void\s*\*\)|reinterpret_cast<[^>]*>|&", " ", src(self.data, items[0]))
        name, targs = kernel_text.strip(" ()"), ""
        if "<" in name:
            name, targs = name[: name.index("<")].strip(), name[name.index("<") + 1 : name.rindex(">")].strip()
        config = [src(self.data, c) for c in items[1:3]] + [src(self.data, c) for c in items[4:6]]
        return self._site(call, name, fn, config, [], targs)

    def _cl_kernel_objects(self) -> dict[str, str]:
        objects: dict[str, str] = {}
        for _pattern, caps in QueryCursor(query("cl_kernel_objects")).matches(self.tree.root_node):
            var, args = caps["var"][0], caps["args"][0]
            names = args.named_children
            if len(names) >= 2 and names[1].type == "string_literal":
                objects[text(var).lstrip("*& ").strip()] = text(names[1]).strip('"')
        return objects

    def _cl_launch(self, call: Node, objects: dict[str, str]) -> LaunchSite | None:
        args_node = call.child_by_field_name("arguments")
        if args_node is None or len(args_node.named_children) < 6:
            return None
        items = [src(self.data, c) for c in args_node.named_children if c.type != "comment"]
        obj = items[1].strip()
        name = objects.get(obj, "")
        site = self._site(call, name or f"<kernel object {obj}>", "clEnqueueNDRangeKernel", [items[4], items[5]], [])
        return LaunchSite(**{**site.__dict__, "work_dim": items[2], "stream": items[0]})


def _function_declarator(fn: Node) -> Node | None:
    node = fn.child_by_field_name("declarator")
    while node is not None and node.type != "function_declarator":
        node = node.child_by_field_name("declarator")
    return node


def _split_template(node: Node | None) -> tuple[str, str]:
    """("ns::k", "float, 256") for `ns::k<float, 256>`."""
    if node is None:
        return "", ""
    whole = text(node).strip()
    lt = whole.find("<")
    if lt < 0:
        return whole, ""
    return whole[:lt].strip(), whole[lt + 1 : whole.rfind(">")].strip()


def _context(node: Node) -> tuple[str, int, int]:
    """The function holding `node` ("<lambda>", "" at file scope), how many loops hold it, and the line of the
    outermost of them (0: none)."""
    depth, outer = 0, 0
    cur = node.parent
    while cur is not None:
        if cur.type in LOOP_TYPES:
            depth += 1
            outer = cur.start_point[0] + 1
        if cur.type == "function_definition":
            decl = _function_declarator(cur)
            inner = decl.child_by_field_name("declarator") if decl else None
            return text(inner), depth, outer
        if cur.type == "lambda_expression":
            return "<lambda>", depth, outer
        cur = cur.parent
    return "", depth, outer


def loop_depth(node: Node) -> int:
    """The deepest nest of loops under `node` (not counting itself): every loop the "loops" query finds, its loop
    ancestors up to `node` counted by walking parents. No recursion: 100k nested blocks are fine."""
    best = 0
    for loop in captures("loops", node).get("loop", []):
        depth, cur = 1, loop.parent
        while cur is not None and cur != node:
            if cur.type in LOOP_TYPES:
                depth += 1
            cur = cur.parent
        best = max(best, depth)
    return best


_GLOBAL = re.compile(rb"\b__global__\b")


def unrecognized_kernels(source: SourceFile, kernels: list[Kernel], lines: LineTable | None = None) -> list[ParseProblem]:
    """`__global__` definitions the parse did not turn into kernels: reported, never dropped silently."""
    out = []
    data = source.data
    lines = lines or LineTable(data)
    spans = sorted((k.start_byte, k.end_byte) for k in kernels)
    starts = [a for a, _ in spans]
    ends = list(itertools.accumulate((b for _, b in spans), max))  # the furthest end among kernels starting before
    for m in _GLOBAL.finditer(data):
        at = m.start()
        i = bisect.bisect_right(starts, at) - 1
        if i >= 0 and ends[i] > at:
            continue
        line_start = data.rfind(b"\n", 0, at) + 1
        line = data[line_start:data.find(b"\n", at) if data.find(b"\n", at) >= 0 else len(data)]
        if line.lstrip().startswith((b"#", b"//", b"*", b"/*")):
            continue  # a macro definition or a comment
        brace, semi = data.find(b"{", at), data.find(b";", at)
        if semi >= 0 and (brace < 0 or semi < brace):
            continue  # a declaration, not a definition
        head = data[at:brace if brace >= 0 else at + 200].decode("utf-8", "replace")
        names = re.findall(r"([A-Za-z_]\w*)\s*(?:<[^<>]*>)?\s*\(", head)
        name = next((n for n in names if not n.startswith("__")), "?")
        lineno = lines.line(at)
        out.append(ParseProblem(source.rel, lineno, at - line_start + 1,
                                f"kernel '{name}' was not recognized (syntax the CUDA grammar does not parse); not listed"))
    return out
