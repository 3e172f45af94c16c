"""The sequence MEP: a directory that replays a captured window of a host loop's launches, original and transformed.

    write_sequence_mep(out, window, kernels, refs, origin) -> Path

    sequence.json     where the window came from (tree, function, sites), its kernels, buffers, the argument variation
    kernels.cu        the loop body's kernels with their closure (kernels.py)
    harness.cu        templates/sequence/harness_cuda.cu.j2: replays the window as recorded (original), as one CUDA Graph
                      (graph_window), as a graph of the loop body launched once per body (graph_body), fused (where
                      pairs fuse) and persistent (where the body can be one cooperative launch), checks the final
                      states, times them, prints one JSON line
    persistent.cu     the window's whole iterations as one cooperative launch (s2s.sequence.persistent), when it applies
    Makefile          nvcc, -arch from NVCC_ARCH (sm_90 by default)
    data/replay.txt   the buffers (sizes, element types), the body graph (its launches, the nodes updated between
                      bodies), and every launch: kernel, grid, block, shared memory, arguments (a value's bytes, or a
                      buffer and an offset)
    data/bufN.before.bin, data/bufN.after.bin   each buffer before the window and after it, as the application left it
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from s2s.base.errors import UserError
from s2s.base.fsutil import atomic_write
from s2s.base.resources import render

from .fusion import FusedLaunch, fused_launches, fused_source, fusions
from .persistent import BATCH, persistent_plan, persistent_source
from .variation import Variation
from .window import Arg, Launch, Window

FLOAT_TYPES = {"float": "f32", "double": "f64"}
RTOL = 1e-5  # a float element of a transformed sequence against the original's (same kernels, same order: bitwise in practice)


def _launch_lines(kernel: int, la: Launch, args: tuple[Arg, ...]) -> list[str]:
    lines = [f"l {kernel} {' '.join(map(str, la.grid))} {' '.join(map(str, la.block))} {la.shmem} {len(args)}"]
    for i, a in enumerate(args):
        if a.kind == "value":
            lines.append(f"a v {a.size} {a.hex}")
        elif a.kind == "ptr":
            lines.append(f"a p {a.buf} {a.offset}")
        elif a.kind == "null":
            lines.append("a n")
        else:
            raise UserError(f"sequence capture: launch {la.ordinal} at {la.site} passes a pointer into no device "
                            f"allocation (argument {i}): host or symbol memory is not replayed yet",
                            file=la.site.rpartition(":")[0])
    return lines


def replay_table(window: Window, var: Variation, kernel_of_site: dict[str, int]) -> str:
    """data/replay.txt: what the harness reads (its format is the harness's `load`)."""
    lines = [f"buffers {len(window.buffers)}"]
    for b in window.buffers:
        lines.append(f"buffer {b.id} {b.bytes} {FLOAT_TYPES.get(window.element_type(b.id), 'bytes')}")
    lines.append(f"body {var.body_launches} update {len(var.updated_nodes)}")
    if var.updated_nodes:
        lines.append(" ".join(str(n) for n in var.updated_nodes))
    lines.append(f"launches {len(window.launches)}")
    for la in window.launches:
        lines += _launch_lines(kernel_of_site[la.site], la, la.args)
    return "\n".join(lines) + "\n"


def fused_table(launches: list[FusedLaunch]) -> str:
    """data/fused.txt: the window with its fused pairs, in replay.txt's launch format."""
    lines = [f"launches {len(launches)}"]
    for f in launches:
        lines += _launch_lines(f.kernel, f.launch, f.args)
    return "\n".join(lines) + "\n"


def write_sequence_mep(out: Path, window: Window, var: Variation, kernels_text: str, refs: dict[str, str],
                       origin: dict[str, object], notes: list[str]) -> Path:
    """The MEP in `out` (created; an existing sequence MEP there is replaced); `refs`: each site's kernel as the harness
    names it (`ns::k`, `k<float, 4>`)."""
    from s2s.base.meplock import mep_lock

    out = Path(out)
    if out.exists() and not (out / "sequence.json").is_file():
        raise UserError("not a sequence MEP: refusing to write into it", file=str(out), hint="choose another -o")
    made = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    try:
        with mep_lock(out, what="s2s sequence capture"):  # two captures to one -o left a mix of both
            return _write(out, window, var, kernels_text, refs, origin, notes)
    except BaseException:
        if made:
            shutil.rmtree(out, ignore_errors=True)
        raise


def _write(out: Path, window: Window, var: Variation, kernels_text: str, refs: dict[str, str],
           origin: dict[str, object], notes: list[str]) -> Path:
    names = sorted(set(refs.values()), key=list(refs.values()).index)
    kernel_of_site = {site: names.index(ref) for site, ref in refs.items()}
    table = replay_table(window, var, kernel_of_site)
    found = fusions(window, var, kernels_text, refs)
    sources = {f.name: fused_source(kernels_text, f) for f in found if f.applies}
    applied = [f for f in found if f.applies and sources[f.name]]
    table_names = names + sorted({f.name for f in applied}, key=[f.name for f in applied].index)
    data = out / "data"
    if data.is_dir():  # an earlier capture's buffers (it may have had more) go
        shutil.rmtree(data)
    data.mkdir(parents=True, exist_ok=True)
    for b in window.buffers:
        for when in ("before", "after"):
            shutil.copyfile(window.dump / f"buf{b.id}.{when}.bin", data / f"buf{b.id}.{when}.bin")
    atomic_write(data / "replay.txt", table.encode())
    atomic_write(out / "kernels.cu", kernels_text.encode())
    (out / "fused.cu").unlink(missing_ok=True)
    (data / "fused.txt").unlink(missing_ok=True)
    if applied:
        atomic_write(out / "fused.cu", ("\n".join(str(sources[name]) for name in table_names[len(names):])).encode())
        plan = fused_launches(window, var, applied, {n: i for i, n in enumerate(table_names)}, kernel_of_site)
        atomic_write(data / "fused.txt", fused_table(plan).encode())
    persist = persistent_plan(window, var, kernels_text, refs)
    (out / "persistent.cu").unlink(missing_ok=True)
    if persist.applies:
        atomic_write(out / "persistent.cu", persistent_source(kernels_text, persist).encode())
    atomic_write(out / "harness.cu", render("sequence/harness_cuda.cu.j2", launches=len(window.launches), kernels=names,
                                            kernel_refs=table_names, origin=str(origin.get("function", "?")),
                                            body=var.body_launches, period=var.period, rtol=RTOL,
                                            fused=bool(applied), persistent=persist.applies, persistent_batch=BATCH,
                                            body_length=len(var.body_sites)).encode())
    atomic_write(out / "Makefile", b"NVCC ?= nvcc\nNVCC_ARCH ?= sm_90\n\n"
                 b"harness: harness.cu kernels.cu $(wildcard fused.cu) $(wildcard persistent.cu)\n"
                 b"\t$(NVCC) -O2 -std=c++17 -arch=$(NVCC_ARCH) -o $@ harness.cu\n\nclean:\n\trm -f harness\n")
    manifest = {"origin": origin, "kernels": names, "sites": {s: names[k] for s, k in kernel_of_site.items()},
                "window": {"launches": len(window.launches), "whole_run": window.whole_run},
                "buffers": [{"id": b.id, "bytes": b.bytes, "kind": b.kind, "element": window.element_type(b.id)}
                            for b in window.buffers],
                "harness_kernels": table_names, "variation": var.as_dict(), "fusions": [f.describe() for f in found],
                "persistent": persist.as_dict(),
                "rtol": RTOL, "notes": notes}
    atomic_write(out / "sequence.json", (json.dumps(manifest, indent=2) + "\n").encode())
    return out
