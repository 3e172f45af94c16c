"""Reintegration of the graph_window transformation: the host loop's launches captured into one CUDA Graph, as a diff.

    graph_loop(data, sites) -> GraphEdit          (the rewritten file, or the reason the loop cannot be graphed)
    graph_diff(mep) -> bytes                      (the unified diff against the application's tree)

The innermost loop that holds every launch site of the sequence is wrapped: a stream of our own (a blocking one, so it
orders with the legacy default stream the application's other work uses) captures the loop's launches, which are moved
onto it; the graph is instantiated and launched once, and the stream synchronized before the code after the loop runs.
The loop's host code still runs as written (its pointer swaps and time index decide each captured launch's arguments).
It may do nothing else a graph cannot hold: every call in the loop must be one of its launches or a host function that
cannot touch the device (std::swap, min, max, ...); a return, goto or throw, a launch on a stream of the application's
own, or a launch the sequence does not hold refuses it, with the reason.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from tree_sitter import Node

from s2s.base.errors import UserError
from s2s.base.records import LaunchSite
from s2s.lang.parsing import descendants, parse

_LOOPS = {"for_statement", "while_statement", "do_statement", "for_range_loop"}
_PURE_HOST = {"std::swap", "swap", "std::min", "std::max", "min", "max", "fmin", "fmax", "fminf", "fmaxf", "std::abs",
              "abs", "fabs", "fabsf"}
_DEFAULT_STREAMS = {"0", "NULL", "nullptr", "(cudaStream_t)0", "(cudaStream_t) 0"}
STREAM = "s2s_graph_stream"


@dataclass(frozen=True)
class GraphEdit:
    data: bytes  # the file rewritten (empty when refused)
    reason: str = ""  # why the loop cannot be graphed, "" when it can
    line: int = 0  # the loop's first line

    @property
    def applies(self) -> bool:
        return not self.reason


def _loop_of(root: Node, sites: list[LaunchSite]) -> Node | None:
    node: Node | None = root.descendant_for_byte_range(sites[0].start_byte, sites[0].end_byte)
    while node is not None:
        if node.type in _LOOPS and all(node.start_byte <= s.start_byte and s.end_byte <= node.end_byte for s in sites):
            return node
        node = node.parent
    return None


def _call_name(call: Node, data: bytes) -> str:
    fn = call.child_by_field_name("function")
    return data[fn.start_byte:fn.end_byte].decode("utf-8", "replace").replace(" ", "") if fn is not None else ""


def graph_loop(data: bytes, sites: list[LaunchSite], dialect: str = "cuda") -> GraphEdit:
    root = parse(data, dialect).root_node
    if not sites or any(s.kind != "chevron" for s in sites):
        return GraphEdit(b"", "only CUDA <<<>>> launches are graphed")
    loop = _loop_of(root, sites)
    if loop is None:
        return GraphEdit(b"", "no loop holds every launch of the sequence")
    line = loop.start_point[0] + 1
    ranges = {(s.start_byte, s.end_byte) for s in sites}
    edits: list[tuple[int, int, bytes]] = []
    for node in descendants(loop):
        if node.type in {"return_statement", "goto_statement", "throw_statement"}:
            return GraphEdit(b"", f"the loop leaves by {node.type.split('_')[0]} (line {node.start_point[0] + 1}): the "
                                  "capture would not end", line)
        if node.type != "call_expression":
            continue
        config = next((c for c in node.children if c.type == "kernel_call_syntax"), None)
        if config is None:
            name = _call_name(node, data)
            if name not in _PURE_HOST:
                return GraphEdit(b"", f"the loop calls {name or 'a function'} (line {node.start_point[0] + 1}) between "
                                      "its launches: only launches and pure host code are graphed", line)
            continue
        if not any(node.start_byte <= a and b <= node.end_byte for a, b in ranges):
            return GraphEdit(b"", f"a launch in the loop (line {node.start_point[0] + 1}) is not one of the sequence's", line)
        args = [c for c in config.named_children if c.type != "comment"]
        close = config.children[-1]
        if len(args) == 2:
            edits.append((close.start_byte, close.start_byte, f", 0, {STREAM}".encode()))
        elif len(args) == 3:
            edits.append((close.start_byte, close.start_byte, f", {STREAM}".encode()))
        elif data[args[3].start_byte:args[3].end_byte].decode("utf-8", "replace").strip() in _DEFAULT_STREAMS:
            edits.append((args[3].start_byte, args[3].end_byte, STREAM.encode()))
        else:
            return GraphEdit(b"", f"the launch at line {node.start_point[0] + 1} runs on a stream of the application's", line)
    start = data.rfind(b"\n", 0, loop.start_byte) + 1
    indent = data[start:loop.start_byte].decode("latin-1")
    indent = indent if not indent.strip(" \t") else ""
    inner = indent + "    "
    before = (f"{{  /* s2s sequence: the loop's launches captured into one CUDA Graph, launched once */\n"
              f"{inner}cudaStream_t {STREAM};\n{inner}cudaGraph_t s2s_graph;\n{inner}cudaGraphExec_t s2s_graph_exec;\n"
              f"{inner}cudaStreamCreate(&{STREAM});\n"
              f"{inner}cudaStreamBeginCapture({STREAM}, cudaStreamCaptureModeThreadLocal);\n{indent}")
    after = (f"\n{inner}cudaStreamEndCapture({STREAM}, &s2s_graph);\n"
             f"{inner}cudaGraphInstantiate(&s2s_graph_exec, s2s_graph, 0);\n"
             f"{inner}cudaGraphLaunch(s2s_graph_exec, {STREAM});\n{inner}cudaStreamSynchronize({STREAM});\n"
             f"{inner}cudaGraphExecDestroy(s2s_graph_exec);\n{inner}cudaGraphDestroy(s2s_graph);\n"
             f"{inner}cudaStreamDestroy({STREAM});\n{indent}}}")
    edits += [(loop.start_byte, loop.start_byte, before.encode()), (loop.end_byte, loop.end_byte, after.encode())]
    out = data
    for a, b, text in sorted(edits, key=lambda e: (-e[0], -e[1])):
        out = out[:a] + text + out[b:]
    return GraphEdit(out, "", line)


def file_sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def graph_diff(mep: Path) -> bytes:
    """The diff that graphs the loop the sequence MEP was captured from, against its tree as it is now; a file changed
    since the capture, or a loop that cannot be graphed, is one UserError with the reason."""
    import difflib

    from s2s.scan.tree import scan_tree

    manifest = json.loads((Path(mep) / "sequence.json").read_text())
    origin = manifest.get("origin", {})
    tree, rel = Path(str(origin.get("tree", ""))), str(origin.get("file", ""))
    path = tree / rel
    if not rel or not path.is_file():
        raise UserError("the sequence's host file is not there any more", file=str(path))
    if origin.get("file_sha256") and file_sha256(path) != origin["file_sha256"]:
        raise UserError("the host file changed since the sequence was captured; capture it again", file=str(path))
    wanted = set(origin.get("sites", []))
    sites = sorted((s for s in scan_tree(tree).launches if f"{s.file}:{s.line}" in wanted), key=lambda s: s.start_byte)
    data = path.read_bytes()
    edit = graph_loop(data, sites)
    if not edit.applies:
        raise UserError(f"the loop cannot be graphed: {edit.reason}", file=str(path), line=edit.line or None)
    name = rel.encode()
    lines = difflib.diff_bytes(difflib.unified_diff, data.splitlines(keepends=True), edit.data.splitlines(keepends=True),
                               fromfile=b"a/" + name, tofile=b"b/" + name)
    return b"".join(lines)
