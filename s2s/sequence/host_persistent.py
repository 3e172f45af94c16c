"""Reintegration of the persistent form of a sequence MEP: the host loop's launches made as one cooperative launch per
batch of iterations, as a diff of the host code.

    persistent_loop(data, sites, plan) -> GraphEdit     (the rewritten file, or the reason the loop cannot take it)
    persistent_diff(mep) -> bytes                       (the unified diff against the application's tree)

The loop's host code runs as written (its pointer swaps and time index decide each launch's arguments); its launches
are held as for the body graph (host_graph.held_loop: each launch through s2s_body::launch), and each batch of the
window's iteration count, at most persistent.BATCH, is handed to s2s_persist::run
(templates/sequence/persistent_loop.h.j2), which launches its whole iterations as the persistent kernel where every
launch follows the schedule, and leaves the others to be made as the application made them (the host holds the next
batch's launches while one runs). The persistent kernel and its schedule (persistent.cu, made from the application's own
kernel bodies) go before the loop's function, in a namespace named for the loop's line. Refused, with the reason:
what refuses a graph of the loop (host_graph.host_loop: other calls in the loop than its launches and pure host code,
a launch the sequence does not hold, a stream of the application's, a return), a kernel not defined in the loop's
file before the loop's function (the persistent kernel there could not call its body), and what refused the form
itself when the MEP was written (sequence.json's "persistent").
"""
from __future__ import annotations

import re
from pathlib import Path

from s2s.base.errors import UserError
from s2s.base.records import LaunchSite
from s2s.base.resources import render
from s2s.lang.kernel_facts import find_kernel
from s2s.lang.parsing import parse

from .host_graph import BODY, GraphEdit, captured_host_file, held_loop, host_loop, top_level, unified_diff
from .persistent import BATCH, PersistentPlan, persistent_source, plan_from_dict


def persistent_loop(data: bytes, sites: list[LaunchSite], plan: PersistentPlan) -> GraphEdit:
    if not plan.applies:
        return GraphEdit(b"", f"no persistent form: {plan.reason}")
    root = parse(data, "cuda").root_node
    found = host_loop(root, data, sites)
    if isinstance(found, GraphEdit):
        return found
    line = found.node.start_point[0] + 1
    top = top_level(found.node)
    for la in plan.launches:
        kernel = find_kernel(root, data, "cuda", la.kernel)
        if kernel is None or kernel[0].end_byte > top.start_byte:
            return GraphEdit(b"", f"{la.kernel} is not defined in this file before the loop's function: the persistent "
                                  "kernel there could not call its body", line)
    namespace = f"s2s_persist_{line}"
    label = re.sub(r'[\s"\\]', "_", f"{sites[0].file}:{line}")  # as host_graph labels the loop's times
    iterations = min(plan.iterations, BATCH)
    batch = iterations * len(plan.launches)
    prelude = persistent_source(data.decode("utf-8", "replace"), plan, namespace) + render("sequence/persistent_loop.h.j2") + "\n"
    decl = f"s2s_body::Graph {BODY}({batch}, \"{label}\", false, &s2s_persist::run<{namespace}::s2s_persist_plan>);"
    what = (f"one cooperative launch per {iterations} iterations ({batch} launches) where they follow the captured "
            "schedule (s2s.sequence.persistent), else as written")
    return held_loop(data, found, decl, what, prelude)


def persistent_diff(mep: Path) -> bytes:
    """The diff that makes the loop the sequence MEP was captured from persistent, against its tree as it is now; a
    file changed since the capture, or a loop that cannot take the form, is one UserError with the reason."""
    manifest, tree, rel, sites = captured_host_file(mep)
    path = tree / rel
    data = path.read_bytes()
    edit = persistent_loop(data, sites, plan_from_dict(manifest.get("persistent", {})))
    if not edit.applies:
        raise UserError(f"the loop cannot be made persistent: {edit.reason}", file=str(path), line=edit.line or None)
    return unified_diff(rel, data, edit.data)
