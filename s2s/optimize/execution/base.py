"""The execution layer's one interface: where a candidate is built and evaluated.

The optimization loop hands a `Session` the ids of candidate variants already written into the MEP and
takes back one `EvalRecord` per variant as each finishes, in any order. Only the loop (the coordinator)
writes `history.sqlite` and the pattern library; workers return records and never touch either.

A work unit is plain data (`WorkUnit`): the MEP's path when the filesystem is shared, else the MEP's files
(sent once per worker) plus the variant's own files. `run_unit` is what a worker runs for one unit: build
(a cache hit when the coordinator already built it on a shared filesystem), check and time, under the
worker's device lock, and say which host, process and GPU did it.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import socket
import subprocess
import tempfile
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from s2s.base.devicelock import lock_path
from s2s.base.errors import UserError
from s2s.base.fsutil import atomic_write
from s2s.mep.backends import BuildResult
from s2s.mep.measure import RUNTIME_FAILED, Measurement, failed

# left out of the files that travel with a work unit: outputs, the coordinator's history, other variants
_STAY_HOME = ("build", "variants", "history.sqlite", "history.sqlite-wal", "history.sqlite-shm", "history.sqlite-journal")


@dataclass(frozen=True)
class EvalRecord:
    """One finished evaluation, as the coordinator records it."""
    variant: str
    build_ok: bool
    build_log: str
    messages: tuple[str, ...]  # the build's messages (what a repair is given)
    result: dict[str, Any]  # Measurement.to_json(), with "worker" added
    input_error: str | None = None  # the MEP itself is wrong: the coordinator stops with exit 2

    @property
    def verdict(self) -> str:
        return str(self.result.get("verdict", RUNTIME_FAILED))

    @property
    def worker(self) -> dict[str, Any]:
        return dict(self.result.get("worker") or {})

    def measurement(self) -> Measurement:
        return Measurement.from_json(self.result)


@dataclass(frozen=True)
class WorkUnit:
    mep: str  # the coordinator's MEP directory (used as is when `shared`)
    variant: str
    kernel_file: str
    digest: str = ""  # of the MEP's files that travel (empty when shared)
    variant_files: tuple[tuple[str, bytes], ...] = ()  # variants/<id>/... relative paths and contents

    @property
    def shared(self) -> bool:
        return not self.digest


@dataclass(frozen=True)
class ClusterOptions:
    """What `--cluster` and its companions say; the fields a backend does not use are ignored."""
    spec: str = "local"  # local | dask | slurm | tcp://host:port
    workers: int | None = None  # dask on this machine: worker processes (default: one per GPU, else 2)
    partition: str | None = None
    account: str | None = None
    walltime: str | None = None
    gpus_per_job: int | None = None
    jobs: int | None = None  # Slurm jobs (each runs `gpus_per_job` workers, at least one)
    shared_fs: bool | None = None  # None: the backend's default (shared on this machine, files travel elsewhere)
    max_retries: int = 2  # a unit whose worker died is tried this many more times, then recorded as failed
    config: str | None = None  # cluster.toml (default ~/.config/s2s/cluster.toml)
    extra: dict[str, Any] = field(default_factory=dict)


class Session(ABC):
    """The evaluations of one MEP's optimization on an executor."""

    @abstractmethod
    def submit(self, variants: list[str], *, first: bool = False) -> None:
        """Queue variants (already written under variants/); `first`: ahead of those queued (a repair)."""

    @abstractmethod
    def next(self) -> EvalRecord | None:
        """The next finished evaluation (blocks); None when nothing is outstanding."""

    @abstractmethod
    def close(self) -> None:
        """Drop what is still queued (the loop stopped early)."""


class Executor(ABC):
    name: str = ""
    slots: int = 1  # evaluations that can run at once (auto optimizes that many kernels at a time)

    @abstractmethod
    def session(self, mep_dir: Path, *, jobs: int) -> Session:
        ...

    def describe(self) -> str:
        return self.name

    @abstractmethod
    def close(self) -> None:
        """Give back what the executor started (a cluster, its workers)."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- records ---------------------------------------------------------------------------------------
def record_of(built: BuildResult, m: Measurement, worker: dict[str, Any]) -> EvalRecord:
    return EvalRecord(variant=built.variant or "", build_ok=built.ok, build_log=built.log, messages=built.messages,
                      result={**m.to_json(), "worker": worker})


def failed_record(variant: str, backend: str, kernel: str, message: str, worker: dict[str, Any] | None = None) -> EvalRecord:
    m = failed(RUNTIME_FAILED, backend=backend, kernel=kernel, variant=variant, messages=[message])
    return EvalRecord(variant=variant, build_ok=True, build_log="", messages=(), result={**m.to_json(), "worker": worker or {}})


def evaluate_built(built: BuildResult, worker: dict[str, Any]) -> EvalRecord:
    """Run a build under this machine's device lock; an MEP error comes back as `input_error`, not raised."""
    from s2s.mep import evaluate as ev

    if built.input_error:
        return EvalRecord(variant=built.variant or "", build_ok=False, build_log=built.log, messages=built.messages,
                          result={"verdict": "compile-failed"}, input_error=built.input_error)
    try:  # the harness takes the device lock itself: checks beside other evaluations' checks, the timing alone
        m = ev.run_built(built, harness_lock=lock_path())
    except UserError as err:
        return EvalRecord(variant=built.variant or "", build_ok=built.ok, build_log=built.log, messages=built.messages,
                          result={"verdict": RUNTIME_FAILED}, input_error=err.message)
    return record_of(built, m, worker)


# -- what travels ----------------------------------------------------------------------------------
def bundle_of(mep_dir: Path) -> tuple[str, dict[str, bytes]]:
    """The MEP's files a worker needs (not its builds, history or other variants), and their digest."""
    mep_dir = Path(mep_dir)
    files: dict[str, bytes] = {}
    for path in sorted(mep_dir.rglob("*")):
        rel = path.relative_to(mep_dir)
        if not path.is_file() or rel.parts[0] in _STAY_HOME or rel.name.startswith("report."):
            continue
        files[rel.as_posix()] = path.read_bytes()
    h = hashlib.sha256()
    for name, data in files.items():
        h.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return h.hexdigest()[:20], files


def unit_for(mep_dir: Path, variant: str, kernel_file: str, digest: str) -> WorkUnit:
    vdir = Path(mep_dir) / "variants" / variant
    files = tuple((p.relative_to(mep_dir).as_posix(), p.read_bytes()) for p in sorted(vdir.rglob("*")) if p.is_file()) if digest else ()
    return WorkUnit(mep=str(mep_dir), variant=variant, kernel_file=kernel_file, digest=digest, variant_files=files)


def _materialize(unit: WorkUnit, files: dict[str, bytes]) -> Path:
    """The MEP in this worker's temporary directory, written once per MEP digest (several workers may share a node)."""
    root = Path(tempfile.gettempdir()) / "s2s-meps" / unit.digest
    root.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f"{unit.digest}.lock", "a+") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        if not (root / ".complete").is_file():
            for rel, data in files.items():
                _write_inside(root, rel, data)
            (root / ".complete").write_text("")
    for rel, data in unit.variant_files:
        _write_inside(root, rel, data)
    return root


def _write_inside(root: Path, rel: str, data: bytes) -> None:
    path = (root / rel).resolve()
    if not path.is_relative_to(root.resolve()):
        raise UserError(f"a work unit names a file outside its MEP: {rel}")
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, data)


# -- the worker's side -----------------------------------------------------------------------------
_PINNED: list[Any] = []  # the open GPU slot lock of this worker process (held for its life)


def pin_gpu() -> None:
    """One GPU per worker process: take the first free slot of CUDA_VISIBLE_DEVICES (a lock file per device,
    held while the process lives) and narrow CUDA_VISIBLE_DEVICES to it. dask-cuda rotates the list per
    worker, so each worker takes its own; several Slurm workers of one job share the list and split it."""
    if _PINNED:
        return
    devices = [d for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    # device numbers are per Slurm job where cgroups renumber them: the job id keeps two jobs' locks apart
    scope = os.environ.get("SLURM_JOB_ID", "node")
    if len(devices) <= 1:
        if devices and not os.environ.get("S2S_DEVICE_LOCK"):
            os.environ["S2S_DEVICE_LOCK"] = str(Path(tempfile.gettempdir()) / f"s2s-device-{scope}-{devices[0]}.lock")
        _PINNED.append(None)
        return
    for dev in devices:
        fh = open(Path(tempfile.gettempdir()) / f"s2s-gpu-slot-{scope}-{dev}.lock", "a+")  # noqa: SIM115 (held for life)
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.close()
            continue
        os.environ["CUDA_VISIBLE_DEVICES"] = dev
        os.environ["S2S_DEVICE_LOCK"] = str(Path(tempfile.gettempdir()) / f"s2s-device-{scope}-{dev}.lock")
        _PINNED.append(fh)
        return
    _PINNED.append(None)  # more workers than devices: they share the list and the device lock


def _gpu_uuid(dev: str) -> str:
    if not dev:
        return ""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=uuid", "--format=csv,noheader", "-i", dev],
                             capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def worker_info(address: str = "") -> dict[str, Any]:
    dev = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    info: dict[str, Any] = {"host": socket.gethostname(), "pid": os.getpid(), "gpu": dev, "address": address}
    if os.environ.get("SLURM_JOB_ID"):
        info["slurm_job"] = os.environ["SLURM_JOB_ID"]
    uuid = _gpu_uuid(dev) if "," not in dev else ""
    if uuid:
        info["gpu_uuid"] = uuid
    return info


def run_unit(unit: WorkUnit, files: dict[str, bytes] | None = None, address: str = "") -> EvalRecord:
    """A worker's whole job for one unit: the MEP (its path, or its files written here), build, run, record."""
    from s2s.mep import evaluate as ev

    pin_gpu()
    mep_dir = Path(unit.mep) if unit.shared else _materialize(unit, files or {})
    try:
        built = ev.build(mep_dir, unit.variant)
    except UserError as err:
        return EvalRecord(variant=unit.variant, build_ok=False, build_log="", messages=(), result={"verdict": RUNTIME_FAILED},
                          input_error=err.message)
    return evaluate_built(built, worker_info(address))
