"""--cluster slurm against a real single-node Slurm (Debian's slurm-wlm and munge, installed by `make system-deps`):
the daemons are started here as root in a temporary directory and stopped after. Where Slurm cannot start, the
test says why and skips, except under CI=true, where it fails."""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ROOT, SAMPLES
from slurm_node import SlurmNode

from s2s.extract.mep_writer import make_mep


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmNode]:
    node = SlurmNode(tmp_path_factory.mktemp("slurm"))
    why = node.why_not()
    if why is None:
        try:
            node.start()
        except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
            why = f"Slurm did not start: {exc}"
    if why is not None:
        node.stop()
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)
    yield node
    node.stop()


@pytest.mark.slow
def test_optimize_through_slurm_jobs(slurm: SlurmNode, tmp_path: Path) -> None:
    mep = tmp_path / "mep-matvec"
    make_mep(str(SAMPLES / "ocl_solver"), "matvec", str(mep))
    env = dict(slurm.env, XDG_CONFIG_HOME=str(tmp_path / "config"), PYTHONPATH=str(ROOT))  # no user cluster.toml
    cmd = [sys.executable, "-m", "s2s", "optimize", str(mep), "--cluster", "slurm", "--gpus-per-job", "0", "--cluster-jobs", "1",
           "--walltime", "00:10:00", "--rounds", "1", "--max-evals", "3", "--no-patterns"]
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=240)
    assert res.returncode in (0, 1), res.stdout + res.stderr + slurm.logs()
    assert "cluster: dask: Slurm, 1 job(s)" in res.stdout.replace("\n", " ")
    db = sqlite3.connect(mep / "history.sqlite")
    rows = db.execute("SELECT id, status, result FROM candidates").fetchall()
    db.close()
    assert len(rows) == 3 and all(r[1] not in ("pending", "runtime-failed") for r in rows), rows
    workers = [json.loads(r[2])["worker"] for r in rows]
    assert all(w.get("slurm_job") for w in workers), workers  # every evaluation ran inside a Slurm job
    assert all(w["pid"] != os.getpid() for w in workers)
    assert not (mep / "build").exists() or not any((mep / "build").iterdir())  # the files travelled; built in the job
    left = subprocess.run(["squeue", "-h"], capture_output=True, text=True, env=slurm.env, timeout=30)
    assert left.stdout.strip() == "", left.stdout  # the cluster's jobs were cancelled when s2s ended
