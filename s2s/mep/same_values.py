"""A captured launch that writes the values its buffers already held (a benchmark's repeated launch over the same
data, an in-place update at its fixed point, a merge step over ordered data) leaves every in-out buffer as it found
it: compared with its contents before, the reference "writes nothing", and nothing could tell a variant that skips
the work from it. Where the kernel overwrites such a buffer without reading it, the buffer is checked as an output
instead: poisoned before every run, so what the reference writes shows. The harness confirms that the kernel does not
read it (on the captured inputs, the reference over the poisoned buffer must write what the application's launch
left there), else the MEP is put back as it was and the launch truly writes nothing new.

The reverse holds too: an output the source shows only written (`a[i] = ...` under a guard, a `+=` through an alias the
analysis does not follow) whose reference, on the captured inputs, does not write what the application's launch left
there once the buffer starts poisoned reads its prior contents: it is an in-out buffer, replayed from its captured
contents (`check_as_inout`)."""
from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

from .capture_index import check_capture
from .manifest import Manifest, load, save

WRITES_NOTHING = "writes nothing on captured"
# the harnesses' refusal (templates/s2s_harness_common.cuh, mep/backends/opencl_runner.py) of an output that is read
READS_PRIOR = re.compile(r"params\.(\w+): role out, but on the captured input set .*?the kernel reads its prior "
                         r"contents; its role is inout", re.S)


def unchanged_inouts(m: Manifest, mep_dir: Path) -> list[str]:
    """The in-out buffers whose captured contents after the launch are the bytes they held before it, in every
    replayed set of [capture] (the shared views of another parameter's memory are checked through their owner)."""
    if not m.capture:
        return []
    check_capture(m, mep_dir)  # the files it names lie inside the MEP
    index = json.loads((mep_dir / str(m.capture.get("index", "capture/index.json"))).read_bytes())
    wanted = {int(x) for x in m.capture.get("sets", [])}
    entries = [e for e in index.get("sets", []) if e.get("replayed", True) and (not wanted or int(e.get("launch", 0)) in wanted)]
    names = []
    for p in m.params:
        if p.role != "inout" or p.shares or not entries:
            continue
        infos = [e.get("params", {}).get(p.name, {}) for e in entries]
        if all(i.get("kind") == "buffer" and (mep_dir / i["before"]).read_bytes() == (mep_dir / i["after"]).read_bytes()
               for i in infos):
            names.append(p.name)
    return names


def check_as_outputs(mep_dir: Path, message: str) -> tuple[Manifest, str] | None:
    """When `message` refuses a captured MEP whose reference writes nothing and some in-out buffers came back from the
    application's launch unchanged, rewrite mep.toml to check those as outputs; returns the manifest as it was (to
    put back when the harness finds that the kernel reads them) and the note; else None (nothing changed)."""
    if WRITES_NOTHING not in message:
        return None
    m = load(mep_dir)
    names = unchanged_inouts(m, mep_dir)
    if not names:
        return None
    listed = ", ".join(f"params.{n}" for n in names)
    note = (f"{listed}: the captured launch wrote the values the buffer(s) already held; checked as output(s), poisoned "
            "before every run (role inout -> out), so that what the kernel writes shows")
    params = [replace(p, role="out") if p.name in names else p for p in m.params]
    save(replace(m, params=params, notes=[*m.notes, note]), mep_dir)
    return m, note


def check_as_inout(mep_dir: Path, message: str) -> tuple[str, str] | None:
    """When `message` is the harness's finding that an output of a captured MEP reads its prior contents, rewrite
    mep.toml with that buffer in-out (replayed from its captured contents before the launch); returns the buffer's name
    and the note; else None (nothing changed)."""
    found = READS_PRIOR.search(message)
    if found is None:
        return None
    m = load(mep_dir)
    name = found.group(1)
    if not m.capture or not any(p.name == name and p.role == "out" and not p.shares for p in m.params):
        return None
    note = (f"params.{name}: role out -> inout (on the captured inputs the reference over a poisoned buffer did not write "
            "what the application's launch left there: the kernel reads its prior contents, which are replayed)")
    params = [replace(p, role="inout") if p.name == name else p for p in m.params]
    save(replace(m, params=params, notes=[*m.notes, note]), mep_dir)
    return name, note
