"""What a proposer sees and what it returns."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from s2s.lang.kernel_facts import KernelFacts
from s2s.lang.target_device import H200, TargetDevice
from s2s.mep.history import Row
from s2s.mep.manifest import Manifest
from s2s.optimize.candidate import Candidate, LaunchOverride
from s2s.optimize.patterns import Pattern


@dataclass
class State:
    manifest: Manifest
    original: bytes  # the MEP's reference kernel file
    kernel: str  # unqualified kernel name
    dialect: str  # "cuda" | "opencl" (HIP is parsed as CUDA)
    facts: KernelFacts | None
    round: int = 1
    rows: list[Row] = field(default_factory=list)
    best: Candidate | None = None
    best_speedup: float = 1.0
    best_pipeline: str = ""
    patterns: list[Pattern] = field(default_factory=list)
    budget: int = 30  # evaluations left
    device: str = ""
    target: TargetDevice = H200  # what passes' launch rules and the cost model hold launches against (s2s.optimize.target)
    ok_candidates: list[tuple[float, Candidate, str]] = field(default_factory=list)  # (speedup, candidate, pipeline)
    feedback: dict[str, Any] = field(default_factory=dict)  # Nsight Compute profiles by name (s2s.mep.profile_ncu)

    @property
    def base_launch(self) -> LaunchOverride:
        launch = self.manifest.launch
        return LaunchOverride(grid=tuple(launch.grid), block=tuple(launch.block), shared_mem=launch.shared_mem)  # type: ignore[arg-type]


class Proposer(Protocol):
    name: str

    def propose(self, state: State) -> list[Candidate]: ...

    def repair(self, candidate: Candidate, log: str, state: State) -> Candidate | None: ...
