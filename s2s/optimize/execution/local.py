"""`--cluster local` (the default): builds in a thread pool on this machine's cores, evaluations one at a
time on this machine's device (the harness takes the device lock: its checks beside other evaluations', its
timing alone), in the order submitted (a repair goes first). Builds run ahead of the evaluations: the first
candidate is evaluated as soon as it is built, while the next ones compile. A variant is run only when the loop
asks for the next record, so a loop that stops early leaves the rest unevaluated."""
from __future__ import annotations

import os
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from s2s.mep import evaluate as ev
from s2s.mep.backends import BuildResult

from .base import EvalRecord, Executor, Session, evaluate_built


class LocalSession(Session):
    def __init__(self, mep_dir: Path, jobs: int) -> None:
        self.mep_dir = Path(mep_dir)
        self.pool = ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="s2s-build")
        self.queue: deque[Future[BuildResult]] = deque()

    def submit(self, variants: list[str], *, first: bool = False) -> None:
        if first:  # a repair: built now, beside the queued builds, and evaluated next
            done: list[Future[BuildResult]] = []
            for v in variants:
                f: Future[BuildResult] = Future()
                f.set_result(ev.build(self.mep_dir, v))
                done.append(f)
            self.queue.extendleft(reversed(done))
            return
        self.queue.extend(self.pool.submit(ev.build, self.mep_dir, v) for v in variants)

    def next(self) -> EvalRecord | None:
        if not self.queue:
            return None
        built = self.queue.popleft().result()  # a build that raised (the MEP itself is wrong) raises here
        return evaluate_built(built, {"host": os.uname().nodename, "pid": os.getpid(), "gpu": os.environ.get("CUDA_VISIBLE_DEVICES", "")})

    def close(self) -> None:
        for f in self.queue:
            f.cancel()
        self.queue.clear()
        self.pool.shutdown(wait=True, cancel_futures=True)


class LocalExecutor(Executor):
    name = "local"
    slots = 1

    def session(self, mep_dir: Path, *, jobs: int) -> Session:
        return LocalSession(mep_dir, jobs)

    def close(self) -> None:
        pass  # nothing was started
