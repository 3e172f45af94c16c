"""`s2s sequence`: capture a window of a host loop's launches from a run of the application into a sequence MEP.

    capture_sequence(tree, build_cmd, run_cmd, output, function=..., window=..., skip=..., profile=...) -> SequenceCapture

The loop is a sequence of the measured profile (s2s.capture.sequences: the launches a host function's loops make), the
most GPU time first, launch-bound ones before the rest, or the one in `function`. A copy of the tree has every launch
site of the loop wrapped by the sequence runtime (templates/sequence/capture_cuda.h.j2), is built and run with the
user's commands, and records `window` launches after the first `skip`, at most to the end of that execution of the
innermost loop holding the sites (the host code around the loop may reset the buffers or run other kernels: a window
across it could not be replayed): their arguments and the state of every buffer they touch before and after. The
original tree is only read.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from s2s.base.errors import UserError
from s2s.base.records import Index, LaunchSite
from s2s.base.resources import render
from s2s.capture.profile import Launch as ProfiledLaunch
from s2s.capture.sequences import Sequence, sequences

from .variation import Variation, variation
from .window import Window, read_window

HEADER = "s2s_sequence_rt.h"
MAX_WINDOW = 100_000  # launches recorded at most (their arguments are a few lines each; the buffers are dumped twice)


@dataclass
class SequenceCapture:
    mep: Path
    sequence: Sequence
    window: Window
    variation: Variation
    notes: list[str] = field(default_factory=list)


def choose(found: list[Sequence], function: str | None) -> Sequence:
    """The loop to capture: the one in `function` (NAME, FILE:NAME, or FILE:NAME@LINE for one of a function's loops,
    LINE its outermost loop's), else the launch-bound one with the most GPU time, else the one with the most GPU time.
    A function with several loops of launches gives the one with the most GPU time for NAME or FILE:NAME."""
    if function:
        hits = [q for q in found if function in {q.function, f"{q.file}:{q.function}", q.loop_id}]
        if not hits:
            have = ", ".join(q.loop_id for q in found) or "none"
            raise UserError(f"sequence: no loop of launches in function {function!r} was measured (loops seen: {have})")
        return hits[0]
    if not found:
        raise UserError("sequence: the measured run made no launch from a host loop twice",
                        hint="s2s sequence captures loops of launches; `s2s capture` records one kernel's launch")
    bound = [q for q in found if q.launch_bound]
    return (bound or found)[0]


def site_refs(sites: list[LaunchSite], qualified: dict[str, str], window: Window | None = None) -> dict[str, str]:
    """Each site's kernel as the harness names it: its qualified name, with the template arguments the site gives.
    Where the site names them through the host's own template parameters (`k<scalar_t, TOPK>` in a template host
    function), the window's launches recorded them as the instance that ran names them (`float, 4`): those are used;
    a site whose launches in the window ran two instances is refused."""
    ran: dict[str, set[tuple[str, ...]]] = {}
    for la in window.launches if window is not None else ():
        if la.targs:
            ran.setdefault(la.site, set()).add(la.targs)
    out: dict[str, str] = {}
    for s in sites:
        name = s.kernel.split("<")[0].strip()
        ref = qualified[name]
        where = f"{s.file}:{s.line}"
        instances = ran.get(where, set())
        if len(instances) > 1:
            shown = "; ".join("<" + ", ".join(t) + ">" for t in sorted(instances))
            raise UserError(f"sequence capture: the launches at {where} ran {len(instances)} instances of {name} "
                            f"({shown}); one harness kernel per site replays one", file=s.file, line=s.line)
        targs = next(iter(instances)) if instances else ()
        if targs and all(t.strip() not in ("", "?") for t in targs):
            ref += "<" + ", ".join(t.strip() for t in targs) + ">"
        elif "<" in s.kernel:
            ref += s.kernel[s.kernel.index("<"):]
        elif s.template_args:
            ref += f"<{s.template_args}>"
        out[where] = ref
    return out


def capture_sequence(tree: str | Path, build_cmd: str, run_cmd: str, output: str | Path, *, function: str | None = None,
                     window: int | None = None, skip: int = 0, profile: list[ProfiledLaunch] | None = None,
                     index: Index | None = None, timeout: float = 1800.0) -> SequenceCapture:
    from s2s.capture import _run
    from s2s.capture.instrument import copy_tree, wrap_launch_sites
    from s2s.capture.profile import measure
    from s2s.scan.sources import check_tree
    from s2s.scan.tree import scan_tree

    from .host_graph import file_sha256
    from .kernels import body_kernels
    from .mep import write_sequence_mep

    root = check_tree(str(tree))
    if not root.is_dir():
        raise UserError("sequence capture needs the application's directory (it is built and run)", file=str(tree))
    if skip < 0 or (window is not None and window < 1):
        raise UserError("sequence: --skip counts from 0 and --window from 1")
    index = index or scan_tree(root)
    with tempfile.TemporaryDirectory(prefix="s2s-sequence-") as tmp:
        work = Path(tmp)
        if profile is None:
            profile = measure(root, work / "profile", build_cmd, run_cmd, timeout=timeout, launches=list(index.launches)).launches
        seq = choose(sequences(profile, list(index.launches)), function)
        notes: list[str] = []
        count = window or max(0, seq.launches - skip)
        if count > MAX_WINDOW:
            notes.append(f"the loop made {count} launches; the window holds the first {MAX_WINDOW}")
            count = MAX_WINDOW
        if count < 1:
            raise UserError(f"sequence: --skip {skip} leaves none of the loop's {seq.launches} launches")
        sites = [s for s in index.launches if f"{s.file}:{s.line}" in seq.sites]
        others = [s for s in sites if s.kind != "chevron"]
        if others:
            raise UserError(f"sequence: {others[0].kind} launches are not captured yet (CUDA chevron launches are)",
                            file=others[0].file, line=others[0].line)
        app = copy_tree(root, work / "app", notes)
        header = work / HEADER
        header.write_text(render("sequence/capture_cuda.h.j2"))
        wrap_launch_sites(app, header, sites, mark_loop_exit=True)  # the window ends with the loop's execution
        log = work / "sequence.log"
        env = dict(os.environ)
        dump = work / "dump"
        env.update({"S2S_SEQ_DIR": str(dump), "S2S_SEQ_SKIP": str(skip), "S2S_SEQ_WINDOW": str(count)})
        _run(build_cmd, app, env, timeout, log, "build")
        _run(run_cmd, app, env, timeout, log, "run")
        got = read_window(dump)
        var = variation(got.launches)
        names = [s.kernel.split("<")[0].strip() for s in sites]
        kernels = body_kernels(root, sorted(set(names), key=names.index), index)
        origin = {"tree": str(root), "file": seq.file, "file_sha256": file_sha256(root / seq.file), "function": seq.function,
                  "sites": seq.sites, "skip": skip,
                  "build_cmd": build_cmd, "run_cmd": run_cmd, "profiled_launches": seq.launches,
                  "profiled_mean_launch_us": round(seq.mean_launch_us, 3)}
        mep = write_sequence_mep(Path(output), got, var, kernels.text, site_refs(sites, kernels.qualified, got), origin,
                                 notes + list(kernels.notes))
        got = replace(got, dump=mep / "data")
    return SequenceCapture(mep=mep, sequence=seq, window=got, variation=var, notes=notes + list(kernels.notes))
