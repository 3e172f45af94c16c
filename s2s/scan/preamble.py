"""What a scan needs to know about a file before parsing any of them: its `#define`s, `#include`s, markers.

Read by byte-level searches only (no parser), from the file's content alone, so a `Preamble` is cached by content
hash. The tree-wide decisions made from all preambles (which macros make kernels where, which language a file is
compiled as) are in `macro_scope`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .launch_macros import LaunchMacro, launch_macro_of

# Any of these bytes may mean a kernel or a launch site (a kernel hidden behind a macro is found through the macro
# names instead). OpenCL C files are told by their extension and need the word `kernel`.
PARSE_MARKERS = (b"__global__", b"<<<", b"LaunchKernel", b"LaunchCooperativeKernel", b"clEnqueueNDRangeKernel")
_DEFINE = re.compile(rb"#[ \t]*define[ \t]+([A-Za-z_]\w*)(\([^)\n]*\))?((?:[^\n\\]|\\.|\\\n)*)")
_INCLUDE = re.compile(rb'#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]')
_C_COMMENT = re.compile(rb"/\*.*?\*/|//[^\n]*", re.S)
_WORD = re.compile(rb"[A-Za-z_]\w*")
_EMBEDDED_CL = re.compile(rb'"[^"\n]*__kernel\s+void\s+(\w+)')
# what says HIP or CUDA: the runtime's header, or its API (each pattern starts with a literal: a fast search)
_HIP = re.compile(rb"hip(?:/hip_runtime|LaunchKernelGGL|Malloc|Memcpy|DeviceSynchronize|Stream_t|Error_t)")
_CUDA = re.compile(rb"cuda(?:_runtime|\.h>|Malloc|Memcpy|DeviceSynchronize|Stream_t|Error_t)")
# a body that can open or close a namespace/extern "C" block (or be empty, or name other macros): kept verbatim
_IDENTS_ONLY = re.compile(rb"(?:\s*[A-Za-z_]\w*\b)*\s*")  # \b: one way to split, no backtracking blow-up
NOT_BLOCK = b"\x00"  # a body that cannot open or close a block, kept short


@dataclass(frozen=True)
class Define:
    name: str
    line: int
    words: tuple[str, ...] | None  # identifiers of an object-like body; None for a function-like macro
    block_body: bytes  # the body (comments out, continued lines joined) where it may open/close a block, else NOT_BLOCK
    function_kernel: bool = False  # a function-like macro whose body holds __global__


@dataclass(frozen=True)
class Preamble:
    lines: int
    defines: tuple[Define, ...]
    includes: tuple[tuple[str, bool], ...]  # (as written, angle-bracketed)
    launch_macros: tuple[LaunchMacro, ...]  # `where` holds the line only; the file is added when merged
    embedded_cl: tuple[tuple[int, str], ...]  # (line, name) of OpenCL kernels in C strings
    markers: bool  # holds a byte of PARSE_MARKERS
    opencl_word: bool  # holds `kernel` (an OpenCL C file without it holds no kernel)
    hip: bool  # the content says HIP (its runtime header or API)
    cuda: bool  # the content says CUDA (its runtime header or API)


def _blockish(body: bytes) -> bool:
    return b"namespace" in body or b"extern" in body or b"}" in body or _IDENTS_ONLY.fullmatch(body) is not None


def _at_line_start(data: bytes, at: int) -> bool:
    start = data.rfind(b"\n", 0, at) + 1
    return not data[start:at].strip(b" \t")


class _Lines:
    """Line numbers of increasing offsets, counted from the last one asked (linear over a file)."""

    def __init__(self, data: bytes) -> None:
        self.data, self.at, self.line = data, 0, 1

    def __call__(self, offset: int) -> int:
        if offset < self.at:
            self.at, self.line = 0, 1
        self.line += self.data.count(b"\n", self.at, offset)
        self.at = offset
        return self.line


def read_preamble(data: bytes) -> Preamble:
    line = _Lines(data)
    defines: list[Define] = []
    launch: list[LaunchMacro] = []
    if b"define" in data:
        for m in _DEFINE.finditer(data):
            if not _at_line_start(data, m.start()):
                continue
            name = m.group(1).decode()
            raw = m.group(3)
            if m.group(2):
                at = line(m.start())
                defines.append(Define(name, at, None, NOT_BLOCK, function_kernel=b"__global__" in raw))
                if b"<<<" in raw:
                    lm = launch_macro_of(name, m.group(2)[1:-1], raw, str(at))
                    if lm is not None:
                        launch.append(lm)
                continue
            body = _C_COMMENT.sub(b" ", raw.replace(b"\\\n", b" ")).strip()
            words = tuple(sorted({w.decode() for w in _WORD.findall(body)}))
            defines.append(Define(name, line(m.start()), words, body if _blockish(body) else NOT_BLOCK))
    includes: list[tuple[str, bool]] = []
    if b"include" in data:
        for m in _INCLUDE.finditer(data):
            if _at_line_start(data, m.start()):
                includes.append((m.group(2).decode("utf-8", "replace").strip(), m.group(1) == b"<"))
    line = _Lines(data)
    embedded = tuple((line(m.start()), m.group(1).decode()) for m in _EMBEDDED_CL.finditer(data)) \
        if b"__kernel" in data else ()
    return Preamble(
        lines=data.count(b"\n"), defines=tuple(defines), includes=tuple(includes), launch_macros=tuple(launch),
        embedded_cl=embedded, markers=any(m in data for m in PARSE_MARKERS), opencl_word=b"kernel" in data,
        hip=_HIP.search(data) is not None, cuda=_CUDA.search(data) is not None,
    )
