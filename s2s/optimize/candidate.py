"""A candidate rewrite of an MEP's kernel file: the whole new text, where it came from, its launch."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass


@dataclass(frozen=True)
class LaunchOverride:
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_mem: int = 0
    local_counts: tuple[tuple[str, int], ...] = ()  # host-sized __local arguments scaled to this block (s2s.optimize.launch_sizes)

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"grid": list(self.grid), "block": list(self.block), "shared_mem": self.shared_mem}
        if self.local_counts:  # absent otherwise: the fingerprints of every other launch stay what they were
            out["local_counts"] = dict(self.local_counts)
        return out


@dataclass(frozen=True)
class Candidate:
    source: bytes
    origin: str  # "pass:a,b{x=1}" | "llm:model" | "replay:file#n" | "pattern:..."
    parent: str | None = None
    launch: LaunchOverride | None = None
    note: str = ""
    launch_rules: tuple[str, ...] = ()  # the passes' launch rules in order (edits.LaunchChange.grid_from), for reintegration

    @property
    def fingerprint(self) -> str:
        launch = json.dumps(self.launch.as_dict(), sort_keys=True) if self.launch else ""
        return hashlib.sha256(self.source + launch.encode()).hexdigest()

    @property
    def id(self) -> str:
        return "v" + self.fingerprint[:10]

    @property
    def source_sha(self) -> str:
        return hashlib.sha256(self.source).hexdigest()
