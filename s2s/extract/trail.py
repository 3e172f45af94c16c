"""How a statically inferred value was found: the steps of its provenance, in order, each once."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Trail:
    steps: list[str] = field(default_factory=list)

    def add(self, s: str) -> None:
        if s not in self.steps:
            self.steps.append(s)
