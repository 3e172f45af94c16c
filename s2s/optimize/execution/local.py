"""`--cluster local` (the default): builds in a thread pool on this machine's cores, evaluations one at a
time behind this machine's device lock, in the order submitted (a repair goes first). Lazy: a variant is run
only when the loop asks for the next record, so a loop that stops early leaves the rest unevaluated."""
from __future__ import annotations

import os
from collections import deque
from pathlib import Path

from s2s.mep import evaluate as ev
from s2s.mep.backends import BuildResult

from .base import EvalRecord, Executor, Session, evaluate_built


class LocalSession(Session):
    def __init__(self, mep_dir: Path, jobs: int) -> None:
        self.mep_dir = Path(mep_dir)
        self.jobs = jobs
        self.queue: deque[BuildResult] = deque()

    def submit(self, variants: list[str], *, first: bool = False) -> None:
        if not variants:
            return
        builds = ev.build_many(self.mep_dir, variants, jobs=self.jobs) if len(variants) > 1 else [ev.build(self.mep_dir, variants[0])]
        if first:
            self.queue.extendleft(reversed(builds))
        else:
            self.queue.extend(builds)

    def next(self) -> EvalRecord | None:
        if not self.queue:
            return None
        built = self.queue.popleft()
        return evaluate_built(built, {"host": os.uname().nodename, "pid": os.getpid(), "gpu": os.environ.get("CUDA_VISIBLE_DEVICES", "")})

    def close(self) -> None:
        self.queue.clear()


class LocalExecutor(Executor):
    name = "local"
    slots = 1

    def session(self, mep_dir: Path, *, jobs: int) -> Session:
        return LocalSession(mep_dir, jobs)

    def close(self) -> None:
        pass  # nothing was started
