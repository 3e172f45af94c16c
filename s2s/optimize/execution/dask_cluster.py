"""`--cluster dask` (this machine: one worker per GPU, else worker processes on the CPU) and
`--cluster tcp://host:port` (any running Dask scheduler); the Slurm backend (slurm.py) reuses the executor.

Each evaluation is one Dask task (`_dask_unit`) on a worker with one thread, so a GPU runs one evaluation at
a time. A worker that dies mid-evaluation loses nothing finished: the scheduler runs the task again on
another worker, up to `max_retries` more times (distributed.scheduler.allowed-failures), after which the
evaluation is recorded as failed with the reason. A candidate that times out (its harness is killed by
the MEP's timeout) gets its worker restarted, in case it left the GPU in a bad state.
"""
from __future__ import annotations

import logging
import shutil
import subprocess
import uuid
from collections import deque
from concurrent.futures import CancelledError
from pathlib import Path
from typing import Any

from s2s.base.errors import UserError
from s2s.mep import evaluate as ev
from s2s.mep.manifest import load
from s2s.mep.measure import TIMED_OUT

from .base import (
    ClusterOptions,
    EvalRecord,
    Executor,
    Session,
    bundle_of,
    evaluate_built,
    failed_record,
    run_unit,
    unit_for,
    worker_info,
)


def _dask_unit(unit: Any, files: dict[str, bytes] | None) -> EvalRecord:
    from distributed import get_worker

    return run_unit(unit, files, address=get_worker().address)


def gpu_count() -> int:
    if shutil.which("nvidia-smi") is None:
        return 0
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for ln in out.stdout.splitlines() if ln.startswith("GPU ")) if out.returncode == 0 else 0


def _quiet() -> None:
    for name in ("distributed", "dask_jobqueue", "bokeh", "tornado"):
        logging.getLogger(name).setLevel(logging.ERROR)


def local_cluster(opts: ClusterOptions) -> tuple[Any, str]:
    """A cluster on this machine: dask-cuda's LocalCUDACluster where installed, else one Nanny per GPU with
    CUDA_VISIBLE_DEVICES pinned, else `opts.workers` (default 2) CPU worker processes. Returns (cluster, what)."""
    import dask
    from distributed import LocalCluster, Nanny, Scheduler, SpecCluster

    _quiet()
    gpus = gpu_count()
    n = opts.workers or gpus or 2
    with dask.config.set({"distributed.scheduler.allowed-failures": opts.max_retries}):
        if gpus:
            try:
                from dask_cuda import LocalCUDACluster  # type: ignore[import-not-found]

                return LocalCUDACluster(n_workers=min(n, gpus), threads_per_worker=1, dashboard_address=":0"), \
                    f"dask-cuda LocalCUDACluster, {min(n, gpus)} GPU workers"
            except ImportError:
                pass
            workers = {f"gpu{i}": {"cls": Nanny, "options": {"nthreads": 1, "env": {"CUDA_VISIBLE_DEVICES": str(i % gpus)}}}
                       for i in range(n)}
            cluster = SpecCluster(workers=workers, scheduler={"cls": Scheduler, "options": {"dashboard_address": ":0"}})
            return cluster, f"{n} workers pinned to GPUs {', '.join(str(i % gpus) for i in range(n))}"
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0")
        return cluster, f"{n} CPU worker processes (no GPU found)"


class DaskSession(Session):
    def __init__(self, ex: DaskExecutor, mep_dir: Path, jobs: int) -> None:
        from distributed import as_completed

        self.ex = ex
        self.mep_dir = Path(mep_dir)
        self.jobs = jobs
        self.manifest = load(self.mep_dir)
        self.ready: deque[EvalRecord] = deque()
        self.pending: dict[str, str] = {}  # future key -> variant
        self.futures: list[Any] = []
        self.done = as_completed()
        self.digest, self.files = "", None
        if not ex.shared:
            self.digest, files = bundle_of(self.mep_dir)
            self.files = ex.client.scatter([files], hash=True)[0]  # once per worker that needs it, not per task

    def submit(self, variants: list[str], *, first: bool = False) -> None:
        if not variants:
            return
        todo = list(variants)
        if self.ex.prebuild:  # same filesystem: build on this machine's cores, the workers only run
            builds = ev.build_many(self.mep_dir, variants, jobs=self.jobs)
            todo = []
            for b in builds:
                if b.ok:
                    todo.append(b.variant or "")
                else:  # a failed build needs no GPU: its record is made here
                    self.ready.append(evaluate_built(b, worker_info()))
        for vid in todo:
            unit = unit_for(self.mep_dir, vid, self.manifest.kernel_file, self.digest)
            fut = self.ex.client.submit(_dask_unit, unit, self.files, key=f"s2s-eval-{vid}-{uuid.uuid4().hex[:8]}",
                                        pure=False, priority=10 if first else 0, retries=self.ex.max_retries)
            self.pending[fut.key] = vid
            self.futures.append(fut)
            self.done.add(fut)

    def next(self) -> EvalRecord | None:
        if self.ready:
            return self.ready.popleft()
        if not self.pending:
            return None
        fut = next(self.done)
        vid = self.pending.pop(fut.key)
        try:
            rec: EvalRecord = fut.result()
        except CancelledError:
            return self.next()
        except Exception as exc:  # KilledWorker after the retries, or the task itself failed on every try
            why = type(exc).__name__ + (f": {exc}" if str(exc) else "")
            rec = failed_record(vid, self.manifest.backend, self.manifest.kernel,
                                f"not evaluated: the cluster gave up after {self.ex.max_retries + 1} tries ({why[:300]})")
        if rec.verdict == TIMED_OUT and rec.worker.get("address"):
            self.ex.replace_worker(str(rec.worker["address"]))
        return rec

    def close(self) -> None:
        for fut in self.futures:
            if fut.key in self.pending:
                fut.cancel()
        self.pending.clear()


class DaskExecutor(Executor):
    name = "dask"

    def __init__(self, client: Any, cluster: Any = None, *, what: str = "", shared: bool = True, prebuild: bool = False,
                 max_retries: int = 2, slots: int | None = None) -> None:
        self.client = client
        self.cluster = cluster
        self.what = what
        self.shared = shared
        self.prebuild = prebuild
        self.max_retries = max_retries
        self.slots = slots or max(1, len(client.scheduler_info().get("workers", {})))

    @property
    def dashboard(self) -> str:
        try:
            import bokeh  # noqa: F401  (the dashboard needs it)
        except ImportError:
            return ""
        return str(self.client.dashboard_link or "")

    def describe(self) -> str:
        link = self.dashboard
        return (f"dask: {self.what}; scheduler {self.client.scheduler.address}; "
                + (f"dashboard {link}" if link else "no dashboard (bokeh is not installed)"))

    def session(self, mep_dir: Path, *, jobs: int) -> Session:
        return DaskSession(self, mep_dir, jobs)

    def replace_worker(self, address: str) -> None:
        try:
            self.client.restart_workers([address], timeout=120, raise_for_error=False)
        except Exception as exc:  # a worker without a nanny cannot be restarted: say so, keep going
            logging.getLogger("s2s").warning("could not restart worker %s after a time-out: %s", address, exc)

    def worker_pids(self) -> dict[str, int]:
        import os

        return {k: int(v) for k, v in self.client.run(os.getpid).items()}

    def close(self) -> None:
        try:
            self.client.close()
        finally:
            if self.cluster is not None:
                self.cluster.close()


def _refused(spec: str) -> ConnectionRefusedError | None:
    """The refusal of a scheduler address where nothing listens: known at once, where the client would retry it for
    its whole 30 s timeout. Anything else (no answer, a name not resolved) is left to the client."""
    import socket
    from urllib.parse import urlsplit

    try:
        url = urlsplit(spec)
        host, port = url.hostname, url.port
    except ValueError:
        return None
    if not host or port is None:
        return None
    try:
        socket.create_connection((host, port), timeout=5).close()
    except ConnectionRefusedError as exc:
        return exc
    except OSError:
        return None
    return None


CONNECT_TIMEOUT_S = 30.0
CONNECT_GRACE_S = 5.0  # past the limit, for the client's own error (a TCP connect that timed out) to say what happened


def connect(spec: str, timeout_s: float | None = None) -> Any:
    """A Client of the scheduler at `spec`, within `timeout_s` all told: Client's own timeout bounds the TCP connect
    but not the handshake, so a server that accepts and stays silent held s2s for minutes, and one that answers
    garbage ended in a traceback (its first bytes read as a 3 EiB frame). Either is one line now."""
    import gc
    import threading

    from distributed import Client

    limit = CONNECT_TIMEOUT_S if timeout_s is None else timeout_s
    hint = "start one with `dask scheduler`, and give its address as tcp://HOST:PORT"
    refused = _refused(spec)  # nothing listens: known at once, where the client would retry for its whole timeout
    if refused is not None:
        raise UserError(f"cannot reach the Dask scheduler at {spec}: {refused}", hint=hint) from None
    box: dict[str, Any] = {}
    guard, gave_up = threading.Lock(), threading.Event()

    def attempt() -> None:
        try:
            client = Client(spec, timeout=limit)
        except BaseException as exc:  # to the caller's thread as its name and text, never the exception itself
            box["error"] = (type(exc).__name__, str(exc), isinstance(exc, OSError))
        else:
            with guard:
                if not gave_up.is_set():
                    box["client"] = client
                    return
            client.close()  # the caller is gone: nobody else would
            return
        # The Client that failed half-way is still alive here (the exception's frames held it, in a cycle) and closes
        # itself in its finalizer. Left to the cyclic collector, that finalizer ran inside a later Client's
        # construction, in whichever thread allocated then: LoopRunner.start holds a class-wide lock that close()
        # takes too, so that thread deadlocked and every later Client or LocalCluster of the process waited forever
        # (distributed 2026.8; a hung test run). Collected now, in this thread, no lock is held.
        gc.collect()

    t = threading.Thread(target=attempt, name="s2s-dask-connect", daemon=True)  # left behind if it never returns
    t.start()
    t.join(limit + CONNECT_GRACE_S)
    with guard:
        if "client" not in box and "error" not in box:
            gave_up.set()
    if gave_up.is_set():
        raise UserError(f"the Dask scheduler at {spec} did not answer within {limit:g} s", hint=hint)
    if "error" in box:
        name, text, is_os_error = box["error"]
        if is_os_error:
            raise UserError(f"cannot reach the Dask scheduler at {spec}: {text}", hint=hint) from None
        raise UserError(f"{spec} answered, but not as a Dask scheduler ({name}: {text[:120]})", hint=hint) from None
    return box["client"]


def open_dask(opts: ClusterOptions) -> DaskExecutor:
    from distributed import Client

    _quiet()
    if opts.spec == "dask":
        cluster, what = local_cluster(opts)
        client = Client(cluster)
        shared = True if opts.shared_fs is None else opts.shared_fs
        return DaskExecutor(client, cluster, what=what, shared=shared, prebuild=shared, max_retries=opts.max_retries)
    if opts.spec.startswith(("tcp://", "tls://")):
        client = connect(opts.spec)
        return DaskExecutor(client, None, what=f"scheduler at {opts.spec}", shared=bool(opts.shared_fs),
                            max_retries=opts.max_retries)
    raise UserError(f"unknown cluster '{opts.spec}'", hint="local, dask, slurm or tcp://host:port")
