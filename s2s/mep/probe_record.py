"""The bounds probe, once per reference: its outcome recorded in the MEP and reused by later evaluations.

The probe (templates/s2s_harness_common.cuh and opencl_runner.py, `probe_bounds`) launches the *reference* on buffers
followed by watched regions: whether the reference reads or writes past a buffer is a property of the reference
kernel, mep.toml and the harness, not of the variant. The first checked evaluation runs it; its outcome (clean, or
the fault that makes the MEP bad input) goes to `build/bounds_probe.json` under a key of content hashes (the backend's
`probe_inputs`: mep.toml, the reference's file and the local headers it includes, the harness, the compiler target or
the OpenCL device). Later evaluations whose key matches skip the probe (`--no-probe`); a recorded fault refuses them
without running anything, as the probe itself would. A re-extracted MEP or a changed reference, mep.toml or harness
changes the key, and the next evaluation probes again. A skipped probe (no room on the device) is not recorded.
"""
from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from s2s.base.fsutil import atomic_write

RECORD = "bounds_probe.json"
STATES = ("clean", "fault")  # the outcomes worth keeping; "skipped" depends on the device's free memory at the time


@dataclass(frozen=True)
class ProbeRecord:
    key: str
    state: str  # clean | fault
    message: str
    seed: int | None = None
    device: str = ""
    variant: str | None = None  # the evaluation that ran it

    @property
    def fault(self) -> bool:
        return self.state == "fault"

    def note(self) -> str:
        who = f"evaluation of {self.variant}" if self.variant else "evaluation of the reference"
        return (f"bounds probe: recorded by an earlier {who} (seed {self.seed}"
                + (f", {self.device}" if self.device else "") + f"), not repeated: {self.message}")


def key_of(parts: list[str | Path]) -> str:
    """sha256 over strings and files' contents, in order (a missing file hashes as missing)."""
    h = hashlib.sha256()
    for p in parts:
        if isinstance(p, Path):
            h.update(b"file\0" + str(p.name).encode() + b"\0")
            try:
                h.update(hashlib.sha256(p.read_bytes()).digest())
            except OSError:
                h.update(b"<missing>")
        else:
            h.update(b"text\0" + p.encode() + b"\0")
    return h.hexdigest()


def path_of(mep_dir: Path) -> Path:
    return Path(mep_dir) / "build" / RECORD


def load(mep_dir: Path, key: str) -> ProbeRecord | None:
    """The record of this key, or None (none yet, another key, unreadable)."""
    try:
        d = json.loads(path_of(mep_dir).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(d, dict) or d.get("key") != key or d.get("state") not in STATES or not isinstance(d.get("message"), str):
        return None
    seed = d.get("seed")
    return ProbeRecord(key=key, state=str(d["state"]), message=str(d["message"]),
                       seed=int(seed) if isinstance(seed, int) else None, device=str(d.get("device") or ""),
                       variant=d.get("variant") if isinstance(d.get("variant"), str) else None)


def save(mep_dir: Path, key: str, probe: Any, *, seed: int | None, device: str, variant: str | None) -> ProbeRecord | None:
    """Record the harness's `probe` outcome ({"state", "message"}) when it is one worth keeping."""
    if not isinstance(probe, dict) or probe.get("state") not in STATES or not isinstance(probe.get("message"), str):
        return None
    rec = ProbeRecord(key=key, state=str(probe["state"]), message=str(probe["message"]), seed=seed, device=device,
                      variant=variant)
    body = {"key": key, "state": rec.state, "message": rec.message, "seed": seed, "device": device, "variant": variant,
            "recorded": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    path = path_of(mep_dir)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, (json.dumps(body, indent=1) + "\n").encode("utf-8"))
    except OSError:
        return None  # a read-only MEP: the next evaluation probes again
    return rec
