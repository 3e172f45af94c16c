"""Where candidates are built and evaluated: `--cluster local | dask | slurm | tcp://host:port`."""
from __future__ import annotations

from .base import ClusterOptions, EvalRecord, Executor, Session, WorkUnit

__all__ = ["ClusterOptions", "EvalRecord", "Executor", "Session", "WorkUnit", "open_executor"]


def open_executor(opts: ClusterOptions) -> Executor:
    """The executor `opts.spec` names; the caller closes it (it is a context manager)."""
    if opts.spec == "local":
        from .local import LocalExecutor

        return LocalExecutor()
    if opts.spec == "slurm":
        from .slurm import open_slurm

        return open_slurm(opts)
    from .dask_cluster import open_dask

    return open_dask(opts)
