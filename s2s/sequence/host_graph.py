"""Reintegration of the graph transformations of a sequence MEP: the host loop's launches as CUDA Graphs, as a diff.

    graph_loop(data, sites, body=N) -> GraphEdit  (the rewritten file, or the reason the loop cannot be graphed)
    graph_diff(mep, form) -> bytes                (the unified diff against the application's tree)

graph_body (the default, body=N): each launch of the loop goes through s2s_body::launch
(templates/sequence/body_graph.h.j2, inserted once in the file), which builds a graph of the first N launches (one
period of the loop body, N from the MEP's variation), instantiates it once and launches it once a body, updating only
the nodes whose arguments changed: the harness's graph_body, about half a millisecond to instantiate.
graph_window (body=0): a stream of our own (a blocking one, so it orders with the legacy default stream) captures the
whole loop into one graph, instantiated and launched once; measured slower in the applications when the loop runs once
(instantiating 10,000-20,000 nodes costs more than the launches it saves), kept for loops where it wins.
In both the loop's host code runs as written (its pointer swaps and time index decide each launch's arguments). It may
do nothing else a graph cannot hold: every call in the loop must be one of its launches or a host function that
cannot touch the device (std::swap, min, max, ...); a return, goto or throw, a launch on a stream of the application's
own, or a launch the sequence does not hold refuses it, with the reason.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tree_sitter import Node

from s2s.base.errors import UserError
from s2s.base.records import LaunchSite
from s2s.lang.parsing import descendants, enclosing_loop, parse

_PURE_HOST = {"std::swap", "swap", "std::min", "std::max", "min", "max", "fmin", "fmax", "fminf", "fmaxf", "std::abs",
              "abs", "fabs", "fabsf", "dim3", "assert"}  # assert: a host check of host values (it may end the process)
_DEFAULT_STREAMS = {"0", "NULL", "nullptr", "(cudaStream_t)0", "(cudaStream_t) 0"}
STREAM = "s2s_graph_stream"
BODY = "s2s_body_graph"


@dataclass(frozen=True)
class GraphEdit:
    data: bytes  # the file rewritten (empty when refused)
    reason: str = ""  # why the loop cannot be graphed, "" when it can
    line: int = 0  # the loop's first line

    @property
    def applies(self) -> bool:
        return not self.reason


def _call_name(call: Node, data: bytes) -> str:
    fn = call.child_by_field_name("function")
    return data[fn.start_byte:fn.end_byte].decode("utf-8", "replace").replace(" ", "") if fn is not None else ""


@dataclass(frozen=True)
class HostLoop:
    node: Node
    launches: list[Node]  # the loop's launch call expressions, in the file's order


def host_loop(root: Node, data: bytes, sites: list[LaunchSite]) -> HostLoop | GraphEdit:
    """The innermost loop holding every site, when a graph can hold what it does; else why not."""
    if not sites or any(s.kind != "chevron" for s in sites):
        return GraphEdit(b"", "only CUDA <<<>>> launches are graphed")
    loop = enclosing_loop(root, [(s.start_byte, s.end_byte) for s in sites])
    if loop is None:
        return GraphEdit(b"", "no loop holds every launch of the sequence")
    line = loop.start_point[0] + 1
    ranges = {(s.start_byte, s.end_byte) for s in sites}
    launches: list[Node] = []
    for node in descendants(loop):
        if node.type in {"return_statement", "goto_statement", "throw_statement"}:
            return GraphEdit(b"", f"the loop leaves by {node.type.split('_')[0]} (line {node.start_point[0] + 1}): the "
                                  "capture would not end", line)
        if node.type != "call_expression":
            continue
        config = _config(node)
        if config is None:
            name = _call_name(node, data)
            if name not in _PURE_HOST:
                return GraphEdit(b"", f"the loop calls {name or 'a function'} (line {node.start_point[0] + 1}) between "
                                      "its launches: only launches and pure host code are graphed", line)
            continue
        if not any(node.start_byte <= a and b <= node.end_byte for a, b in ranges):
            return GraphEdit(b"", f"a launch in the loop (line {node.start_point[0] + 1}) is not one of the sequence's", line)
        args = _config_args(config)
        if len(args) == 4 and _text(data, args[3]).strip() not in _DEFAULT_STREAMS:
            return GraphEdit(b"", f"the launch at line {node.start_point[0] + 1} runs on a stream of the application's", line)
        launches.append(node)
    return HostLoop(loop, launches)


def _config(call: Node) -> Node | None:
    return next((c for c in call.children if c.type == "kernel_call_syntax"), None)


def _config_args(config: Node) -> list[Node]:
    return [c for c in config.named_children if c.type != "comment"]


def _text(data: bytes, node: Node) -> str:
    return data[node.start_byte:node.end_byte].decode("utf-8", "replace")


def _apply(data: bytes, edits: list[tuple[int, int, bytes]]) -> bytes:
    out = data
    for a, b, text in sorted(edits, key=lambda e: (-e[0], -e[1])):
        out = out[:a] + text + out[b:]
    return out


def _indent(data: bytes, loop: Node) -> str:
    start = data.rfind(b"\n", 0, loop.start_byte) + 1
    indent = data[start:loop.start_byte].decode("latin-1")
    return indent if not indent.strip(" \t") else ""


def graph_loop(data: bytes, sites: list[LaunchSite], dialect: str = "cuda", *, body: int = 0, keep: bool = False) -> GraphEdit:
    """The loop rewritten: `body` > 0, as a graph of `body` launches (one period of the loop body) launched per body
    (templates/sequence/body_graph.h.j2, inserted once before the top-level declaration that holds the loop); 0, its
    launches captured into one graph launched once. `keep` (graph_run: `body` is a whole run of the loop): the graph is
    a static one, instantiated at the loop's first run and relaunched by the later ones."""
    root = parse(data, dialect).root_node
    found = host_loop(root, data, sites)
    if isinstance(found, GraphEdit):
        return found
    label = re.sub(r'[\s"\\]', "_", f"{sites[0].file}:{found.node.start_point[0] + 1}")  # a C string, one word
    return _body_graph(data, found, body, label, keep) if body > 0 else _window_graph(data, found)


def _window_graph(data: bytes, found: HostLoop) -> GraphEdit:
    loop, edits = found.node, []
    for node in found.launches:
        config = _config(node)
        assert config is not None
        args, close = _config_args(config), config.children[-1]
        if len(args) == 2:
            edits.append((close.start_byte, close.start_byte, f", 0, {STREAM}".encode()))
        elif len(args) == 3:
            edits.append((close.start_byte, close.start_byte, f", {STREAM}".encode()))
        else:
            edits.append((args[3].start_byte, args[3].end_byte, STREAM.encode()))
    indent = _indent(data, loop)
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
    return GraphEdit(_apply(data, edits), "", loop.start_point[0] + 1)


def top_level(node: Node) -> Node:
    while node.parent is not None and node.parent.type != "translation_unit":
        node = node.parent
    return node


def _body_graph(data: bytes, found: HostLoop, body: int, label: str, keep: bool = False) -> GraphEdit:
    """Each launch `K<<<G, B[, S[, 0]]>>>(ARGS)` becomes `s2s_body::launch(s2s_body_graph, K, G, B, S, ARGS)`; the loop
    is wrapped in a block that declares the graph (`static` when kept) and ends the run after the loop (the launches of
    an unfinished body made ordinarily, the run's time written)."""
    if keep:
        what = (f"a CUDA Graph of its {body} launches (a whole run of the loop), instantiated at the first run, "
                "relaunched by each later one")
        decl = f"static s2s_body::Graph {BODY}({body}, \"{label}\", true);"
    else:
        what = f"a CUDA Graph of {body} launches (one period of its body), instantiated once, launched once a body"
        decl = f"s2s_body::Graph {BODY}({body}, \"{label}\");"
    return held_loop(data, found, decl, what, "")


def held_loop(data: bytes, found: HostLoop, decl: str, what: str, prelude: str) -> GraphEdit:
    """The loop's launches held by the body runtime (templates/sequence/body_graph.h.j2, inserted once before the
    top-level declaration that holds the loop, `prelude` after it): each `K<<<G, B[, S[, 0]]>>>(ARGS)` becomes
    `s2s_body::launch(s2s_body_graph, K, G, B, S, ARGS)`, the loop wrapped in a block that declares the runtime
    (`decl`) and ends its run after the loop; `what` says in a comment what the loop's launches became."""
    from s2s.base.resources import render

    loop, edits = found.node, []
    for node in found.launches:
        config, fn, call_args = _config(node), node.child_by_field_name("function"), node.child_by_field_name("arguments")
        assert config is not None and fn is not None and call_args is not None
        cfg = [_text(data, a) for a in _config_args(config)]
        args = [_text(data, a) for a in call_args.named_children if a.type != "comment"]
        head = ", ".join([BODY, _text(data, fn), cfg[0], cfg[1], cfg[2] if len(cfg) > 2 else "0"] + args)
        edits.append((node.start_byte, node.end_byte, f"s2s_body::launch({head})".encode()))
    indent = _indent(data, loop)
    before = f"{{  /* s2s sequence: the loop's launches as {what} */\n{indent}    {decl}\n{indent}"
    after = f"\n{indent}    {BODY}.end_run();\n{indent}}}"
    edits += [(loop.start_byte, loop.start_byte, before.encode()), (loop.end_byte, loop.end_byte, after.encode())]
    top = top_level(loop)
    edits.append((top.start_byte, top.start_byte, (render("sequence/body_graph.h.j2") + "\n" + prelude).encode()))
    return GraphEdit(_apply(data, edits), "", loop.start_point[0] + 1)


def unified_diff(rel: str, before: bytes, after: bytes) -> bytes:
    """`after` against `before` as a unified diff of the tree's file `rel`."""
    import difflib

    name = rel.encode()
    lines = difflib.diff_bytes(difflib.unified_diff, before.splitlines(keepends=True), after.splitlines(keepends=True),
                               fromfile=b"a/" + name, tofile=b"b/" + name)
    return b"".join(lines)


def captured_host_file(mep: Path) -> tuple[dict[str, Any], Path, str, list[LaunchSite]]:
    """(sequence.json, the tree, the host file's path in it, the loop's launch sites as the tree holds them now) of
    a sequence MEP; a file gone or changed since the capture is one UserError."""
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
    return manifest, tree, rel, sites


def file_sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def graph_diff(mep: Path, form: str = "graph_body") -> bytes:
    """The diff that graphs the loop the sequence MEP was captured from (`form`: graph_body, a graph of one period of
    the body launched per body; graph_run, a kept graph of a whole run of the loop, relaunched by each run;
    graph_window, the whole loop captured into one graph), against its tree as it is now;
    a file changed since the capture, or a loop that cannot be graphed, is one UserError with the reason."""
    manifest, tree, rel, sites = captured_host_file(mep)
    path = tree / rel
    data = path.read_bytes()
    body = 0
    if form == "graph_body":
        body = int(manifest.get("variation", {}).get("body_launches", 0))
    elif form == "graph_run":
        body = int(manifest.get("window", {}).get("launches", 0)) if manifest.get("window", {}).get("whole_run") else 0
    if form in {"graph_body", "graph_run"} and body < 1:
        what = "no loop body" if form == "graph_body" else "no whole run of the loop"
        raise UserError(f"the sequence MEP names {what} to graph", file=str(Path(mep) / "sequence.json"))
    edit = graph_loop(data, sites, body=body, keep=form == "graph_run")
    if not edit.applies:
        raise UserError(f"the loop cannot be graphed: {edit.reason}", file=str(path), line=edit.line or None)
    return unified_diff(rel, data, edit.data)
