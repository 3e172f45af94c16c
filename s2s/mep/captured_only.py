"""A captured MEP whose reference faults on a generated input set: the application's own data replay (the captured
sets were checked first), but the seeded variations of them are inputs the kernel cannot take (integer inputs are
reordered captured values, but floats it turns into indices, or integers valid only in their captured order, are not
safe to vary). Such a kernel is still optimized, checked on its captured sets only (`[check] input_sets = 0`), and
mep.toml says why."""
from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from .manifest import load, save

# the labels the harnesses give generated sets (CUDA and OpenCL alike): "input set 2 (seed 77)", "after timing, fresh
# input set (seed 78)"; a captured set is labelled "captured input set (launch ...)". A fault the harness reports
# itself ("the reference kernel failed (LABEL)"), or a runner killed by it ("... during the reference kernel, LABEL":
# an out-of-bounds access on a CPU OpenCL device is a segmentation fault)
_GENERATED = re.compile(r"(?:the reference kernel failed \(|during the reference kernel, )"
                        r"((?:after timing, fresh )?input set(?: \d+)? \(seed \d+\))")


def faulted_on_generated(message: str) -> str | None:
    """The generated set the reference faulted on, named as the message names it; None when the failure is not the
    reference's on a generated set (a fault on captured data is the MEP's own problem and stays an error)."""
    m = _GENERATED.search(message)
    return m.group(1) if m else None


def check_captured_only(mep_dir: Path, message: str) -> str | None:
    """When `message` is the reference's fault on a generated set of a captured MEP with generated sets left, rewrite
    mep.toml to check the captured sets only and return the note saying so; else None (nothing changed)."""
    which = faulted_on_generated(message)
    m = load(mep_dir)
    if which is None or not m.capture or m.input_sets == 0:
        return None
    detail = message.split(which, 1)[-1].lstrip("):, ").split(";", 1)[0].strip() or message.split(" during ", 1)[0]
    note = (f"the reference faults on generated input sets ({which}: {detail}) but replays the application's captured "
            "data: checked on the captured sets only ([check] input_sets = 0)")
    save(replace(m, input_sets=0, notes=[*m.notes, note]), mep_dir)
    return note
