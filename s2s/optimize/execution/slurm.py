"""`--cluster slurm`: Dask workers in Slurm batch jobs (dask-jobqueue's SLURMCluster), one worker process
per GPU of a job. Settings come from the command line, else `~/.config/s2s/cluster.toml`'s [slurm] table:

    [slurm]
    partition = "gpu"          account = "proj123"      walltime = "01:00:00"
    gpus_per_job = 4           jobs = 2                  cores = 16     memory = "64GB"
    shared_fs = true           prologue = ["module load cuda"]          job_extra = ["--constraint=h100"]
    python = "/home/me/s2s/.venv/bin/python"             # the workers' Python, with s2s installed
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from s2s.base.errors import UserError

from .base import ClusterOptions
from .dask_cluster import DaskExecutor, _quiet

KEYS = {"partition": str, "account": str, "walltime": str, "gpus_per_job": int, "jobs": int, "cores": int, "memory": str,
        "shared_fs": bool, "prologue": list, "job_extra": list, "python": str, "interface": str, "local_directory": str}


def config_path(opts: ClusterOptions) -> Path:
    if opts.config:
        return Path(opts.config)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "s2s" / "cluster.toml"


def read_config(path: Path, required: bool) -> dict[str, Any]:
    """The [slurm] table of cluster.toml, each value checked against its type (a wrong one: exit 2 naming the file)."""
    if not path.is_file():
        if required:
            raise UserError("cluster configuration not found", file=str(path))
        return {}
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UserError(f"not valid TOML: {exc}", file=str(path)) from exc
    table = doc.get("slurm", {})
    if not isinstance(table, dict):
        raise UserError("[slurm] must be a table", file=str(path))
    for key, value in table.items():
        want = KEYS.get(key)
        if want is None:
            raise UserError(f"unknown key slurm.{key}", file=str(path), hint=", ".join(sorted(KEYS)))
        if not isinstance(value, want) or (want is int and isinstance(value, bool)):
            raise UserError(f"slurm.{key} must be a {want.__name__}, not {value!r}", file=str(path))
    return table


def settings(opts: ClusterOptions) -> dict[str, Any]:
    """Command line over cluster.toml over defaults."""
    conf = read_config(config_path(opts), required=opts.config is not None)
    given = {"partition": opts.partition, "account": opts.account, "walltime": opts.walltime, "gpus_per_job": opts.gpus_per_job,
             "jobs": opts.jobs, "shared_fs": opts.shared_fs}
    out: dict[str, Any] = {"walltime": "01:00:00", "gpus_per_job": 1, "jobs": 1, "cores": 0, "memory": "",
                           "shared_fs": False, "prologue": [], "job_extra": [], "python": sys.executable}
    out.update(conf)
    out.update({k: v for k, v in given.items() if v is not None})
    out.update(opts.extra)
    if out["jobs"] < 1 or out["gpus_per_job"] < 0:
        raise UserError("--cluster-jobs must be at least 1 and --gpus-per-job at least 0")
    return out


def job_kwargs(s: dict[str, Any]) -> dict[str, Any]:
    """SLURMCluster's arguments for these settings (a worker process per GPU, one thread each)."""
    procs = max(1, int(s["gpus_per_job"]))
    cores = int(s["cores"]) or procs
    extra = [*s["job_extra"]] + ([f"--gres=gpu:{s['gpus_per_job']}"] if s["gpus_per_job"] else [])
    kw: dict[str, Any] = {"queue": s.get("partition"), "account": s.get("account"), "walltime": s["walltime"], "cores": cores,
                          "processes": procs, "memory": s["memory"] or f"{2 * procs}GB", "python": s["python"],
                          "job_extra_directives": extra, "job_script_prologue": list(s["prologue"]),
                          "scheduler_options": {"dashboard_address": ":0"}}
    if not s["memory"]:
        kw["job_directives_skip"] = ["--mem"]  # let the partition's default apply
    for key in ("interface", "local_directory"):
        if s.get(key):
            kw[key] = s[key]
    kw["log_directory"] = str(_log_directory())  # the jobs' slurm-N.out files: never in the user's working directory
    return kw


def _log_directory() -> Path:
    cache = os.environ.get("S2S_CACHE_DIR") or str(Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "s2s")
    return Path(cache) / "slurm-logs"


SINFO_TIMEOUT_S = 30.0  # sinfo retries a configuration it cannot read for 60 s before it says so


def check_slurm() -> None:
    """Slurm is there and its controller answers (`sinfo`, within SINFO_TIMEOUT_S), before any job is submitted:
    without it the jobs failed in the background, a traceback per job, and the cluster waited for workers that never
    came."""
    import shutil

    from s2s.base.procs import run_group

    for tool in ("sbatch", "sinfo"):
        if shutil.which(tool) is None:
            raise UserError(f"--cluster slurm: Slurm's {tool} is not on PATH", hint="run s2s on a Slurm login node, or "
                            "use --cluster dask (this machine) or tcp://HOST:PORT (a running Dask scheduler)")
    res = run_group(["sinfo", "--noheader", "--format=%P"], cwd=Path.cwd(), timeout_s=SINFO_TIMEOUT_S)
    if res.returncode != 0:
        last = (res.output.strip().splitlines() or ["no output"])[-1]
        raise UserError(f"--cluster slurm: Slurm does not answer here (sinfo: {last.strip()[:160]})",
                        hint="check that slurmctld runs and SLURM_CONF names its configuration")


def open_slurm(opts: ClusterOptions) -> DaskExecutor:
    import dask
    from distributed import Client

    try:
        from dask_jobqueue import SLURMCluster
    except ImportError as exc:
        raise UserError("--cluster slurm needs dask-jobqueue", hint="pip install dask-jobqueue") from exc
    _quiet()
    s = settings(opts)
    check_slurm()
    with dask.config.set({"distributed.scheduler.allowed-failures": opts.max_retries}):
        try:
            cluster = SLURMCluster(**job_kwargs(s))
        except (OSError, RuntimeError, ValueError) as exc:
            raise UserError(f"cannot start a Slurm cluster: {exc}", file=str(config_path(opts))) from exc
    cluster.scale(jobs=int(s["jobs"]))
    client = Client(cluster)
    slots = int(s["jobs"]) * max(1, int(s["gpus_per_job"]))
    what = f"Slurm, {s['jobs']} job(s) x {max(1, int(s['gpus_per_job']))} worker(s)" + (
        f" on partition {s['partition']}" if s.get("partition") else "")
    return DaskExecutor(client, cluster, what=what, shared=bool(s["shared_fs"]), max_retries=opts.max_retries, slots=slots)
