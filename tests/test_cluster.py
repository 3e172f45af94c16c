"""The execution layer (--cluster): a real Dask LocalCluster of 2 worker processes evaluating OpenCL MEPs on PoCL,
against --cluster local; a worker killed by pid mid-run; the work unit's travelling files; cluster.toml; the CLI."""
from __future__ import annotations

import os
import signal
import sqlite3
import threading
from pathlib import Path

import pytest
from conftest import SAMPLES, run_cli
from mep_util import with_noise_band

from s2s.base.errors import UserError
from s2s.optimize.execution import ClusterOptions, open_executor
from s2s.optimize.execution.base import WorkUnit, _materialize, bundle_of
from s2s.optimize.execution.dask_cluster import DaskExecutor, _refused
from s2s.optimize.execution.slurm import job_kwargs, settings
from s2s.optimize.loop import Options, optimize

OPTS = dict(rounds=1, max_evals=4, use_patterns=False)


@pytest.fixture(scope="module")
def matvec_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The MEP, with its noise band (the original timed against itself, three runs) measured once, on this machine, and
    kept in a history that holds nothing else: every copy starts from it, so that no optimize here times it again
    (the local run in round 1, a cluster run at the end). Local and cluster runs declare their winners against the
    same band."""
    return with_noise_band(SAMPLES / "ocl_solver", "matvec", tmp_path_factory.mktemp("cl") / "mep-matvec")


def _fresh(src: Path, dst: Path) -> Path:
    """A copy of the MEP: no build, no variants; its history holds the noise band alone."""
    import shutil

    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("build", "variants"))
    return dst


def _rows(mep: Path) -> dict[str, tuple[str, str]]:
    db = sqlite3.connect(mep / "history.sqlite")
    try:
        return {r[0]: (r[1], r[2]) for r in db.execute("SELECT id, status, result FROM candidates")}
    finally:
        db.close()


@pytest.fixture(scope="module")
def local_run(matvec_source: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    mep = _fresh(matvec_source, tmp_path_factory.mktemp("local") / "mep")
    return mep, optimize(mep, Options(**OPTS))  # type: ignore[arg-type]


@pytest.mark.slow
def test_dask_two_workers_same_verdicts_and_winner_candidates_as_local(local_run, matvec_source: Path, tmp_path: Path) -> None:
    import json

    local_mep, local_out = local_run
    mep = _fresh(matvec_source, tmp_path / "mep")
    # the files travel with each unit (shared_fs=False): workers build and run in their own temporary copies
    with open_executor(ClusterOptions(spec="dask", workers=2, shared_fs=False)) as ex:
        assert isinstance(ex, DaskExecutor) and len(ex.worker_pids()) == 2
        out = optimize(mep, Options(**OPTS, executor=ex))  # type: ignore[arg-type]
    local, dask = _rows(local_mep), _rows(mep)
    assert {k: v[0] for k, v in dask.items()} == {k: v[0] for k, v in local.items()}  # same candidates, same verdicts
    assert "pending" not in {v[0] for v in dask.values()} and out.evaluations == local_out.evaluations == len(dask)  # type: ignore[attr-defined]
    ok = {k for k, v in local.items() if v[0] == "ok"}
    assert out.best_id in ok and local_out.best_id in ok  # type: ignore[attr-defined]
    workers = [json.loads(v[1])["worker"] for v in dask.values()]
    assert len({w["pid"] for w in workers}) == 2 and all(w["address"].startswith("tcp://") for w in workers)
    assert not (mep / "build").exists() or not any((mep / "build").iterdir())  # nothing was built in the coordinator's MEP


@pytest.mark.slow
def test_worker_killed_mid_run_loses_and_duplicates_nothing(local_run, matvec_source: Path, tmp_path: Path) -> None:
    local_mep, _ = local_run
    mep = _fresh(matvec_source, tmp_path / "mep")
    killed: list[int] = []
    with open_executor(ClusterOptions(spec="dask", workers=2)) as ex:
        assert isinstance(ex, DaskExecutor)
        pids = ex.worker_pids()
        lock = threading.Lock()

        def kill_a_busy_worker(ev: dict[str, object]) -> None:
            with lock:
                if killed:
                    return
                busy = [addr for addr, keys in ex.client.processing().items() if keys]
                if busy:
                    killed.append(pids[busy[0]])
                    os.kill(pids[busy[0]], signal.SIGKILL)

        out = optimize(mep, Options(**OPTS, executor=ex), progress=kill_a_busy_worker)  # type: ignore[arg-type]
    assert killed, "no worker was busy after the first evaluation"
    local, dask = _rows(local_mep), _rows(mep)
    assert {k: v[0] for k, v in dask.items()} == {k: v[0] for k, v in local.items()}  # none lost, none failed, none twice
    assert out.evaluations == len(dask)
    import json

    done_by = [json.loads(v[1])["worker"]["pid"] for v in dask.values()]
    assert done_by.count(killed[0]) <= 1  # killed after the first record: what it was running was finished by another process


def test_units_carry_the_mep_files_but_not_builds_history_or_other_variants(tmp_path: Path) -> None:
    mep = tmp_path / "mep"
    for rel, text in {"mep.toml": "x", "kernel.cl": "k", "build/v1/a.o": "o", "history.sqlite": "h",
                      "variants/v1/kernel.cl": "v", "capture/in.bin": "c"}.items():
        (mep / rel).parent.mkdir(parents=True, exist_ok=True)
        (mep / rel).write_text(text)
    digest, files = bundle_of(mep)
    assert sorted(files) == ["capture/in.bin", "kernel.cl", "mep.toml"] and len(digest) == 20
    assert bundle_of(mep)[0] == digest
    (mep / "kernel.cl").write_text("k2")
    assert bundle_of(mep)[0] != digest
    unit = WorkUnit(mep=str(mep), variant="v1", kernel_file="kernel.cl", digest=digest + "x",
                    variant_files=(("variants/v1/kernel.cl", b"v"),))
    root = _materialize(unit, files)
    assert (root / "variants/v1/kernel.cl").read_bytes() == b"v" and (root / "capture/in.bin").read_text() == "c"
    evil = WorkUnit(mep=str(mep), variant="v1", kernel_file="kernel.cl", digest=digest + "y",
                    variant_files=(("../../escape.txt", b"!"),))
    with pytest.raises(UserError):
        _materialize(evil, files)


def test_slurm_settings_from_cluster_toml_and_command_line(tmp_path: Path) -> None:
    conf = tmp_path / "cluster.toml"
    conf.write_text('[slurm]\npartition = "gpu"\naccount = "p1"\ngpus_per_job = 4\njobs = 3\nprologue = ["module load cuda"]\n')
    s = settings(ClusterOptions(spec="slurm", config=str(conf), jobs=5))
    assert (s["partition"], s["account"], s["gpus_per_job"], s["jobs"]) == ("gpu", "p1", 4, 5)  # the command line wins
    kw = job_kwargs(s)
    assert kw["processes"] == 4 and "--gres=gpu:4" in kw["job_extra_directives"] and kw["queue"] == "gpu"
    assert kw["job_script_prologue"] == ["module load cuda"]
    conf.write_text('[slurm]\njobs = "two"\n')
    with pytest.raises(UserError) as err:
        settings(ClusterOptions(spec="slurm", config=str(conf)))
    assert err.value.file == str(conf) and "slurm.jobs" in err.value.message
    conf.write_text('[slurm]\nqueue = "x"\n')
    with pytest.raises(UserError, match="unknown key slurm.queue"):
        settings(ClusterOptions(spec="slurm", config=str(conf)))
    with pytest.raises(UserError, match="not found"):
        settings(ClusterOptions(spec="slurm", config=str(tmp_path / "none.toml")))


def test_cli_bad_cluster_is_one_line_and_exit_2(tmp_path: Path) -> None:
    res = run_cli("optimize", str(tmp_path), "--cluster", "mars")
    assert res.returncode == 2 and "unknown --cluster 'mars'" in res.stderr and "Traceback" not in res.stderr
    res = run_cli("optimize", str(tmp_path), "--cluster", "tcp://127.0.0.1:9")
    assert res.returncode == 2 and "cannot reach the Dask scheduler" in res.stderr and "Traceback" not in res.stderr
    # a port where nothing listens is refused at once (the client's retries waited out their 30 s first)
    assert "Connection refused" in res.stderr and isinstance(_refused("tcp://127.0.0.1:9"), ConnectionRefusedError)
    assert _refused("tcp://127.0.0.1") is None and _refused("tcp://127.0.0.1:notaport") is None


@pytest.mark.slow
def test_hanging_candidate_is_killed_by_its_timeout_and_its_worker_replaced(matvec_source: Path, tmp_path: Path) -> None:
    from s2s.optimize.candidate import Candidate
    from s2s.optimize.loop import write_variant

    mep = _fresh(matvec_source, tmp_path / "mep")
    toml = mep / "mep.toml"
    toml.write_text(toml.read_text().replace("timeout_s = 120.0", "timeout_s = 4.0"))  # the hang burns this long
    src = (mep / "kernel.cl").read_text()
    hang = Candidate(src.replace("    int i = get_global_id(0);\n", "    int i = get_global_id(0);\n    for (;;) { y[0] += 1.0f; }\n", 1).encode(),
                     "test:hang")
    assert hang.source != src.encode()
    write_variant(mep, "kernel.cl", hang)
    with open_executor(ClusterOptions(spec="dask", workers=1, shared_fs=False)) as ex:  # built and run on the worker
        assert isinstance(ex, DaskExecutor)
        before = set(ex.worker_pids().values())
        session = ex.session(mep, jobs=1)
        session.submit([hang.id])
        rec = session.next()
        assert rec is not None and rec.verdict == "timed-out" and "killed after 4 s" in " ".join(rec.result["messages"])
        assert rec.worker["pid"] in before
        assert session.next() is None
        after = set(ex.worker_pids().values())  # replace_worker waited for the restart
    assert after and not after & before


@pytest.mark.slow
def test_workers_sharing_a_device_list_each_pin_their_own_gpu(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = ("import os, sys, time; from s2s.optimize.execution.base import pin_gpu; pin_gpu(); "
            "print(os.environ['CUDA_VISIBLE_DEVICES'], os.environ['S2S_DEVICE_LOCK'], flush=True); sys.stdin.read()")
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="3,5", TMPDIR=str(tmp_path), SLURM_JOB_ID="77")
    first = subprocess.Popen([sys.executable, "-c", code], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        a = first.stdout.readline().split()  # type: ignore[union-attr]
        b = subprocess.run([sys.executable, "-c", code], env=env, input="", capture_output=True, text=True, timeout=120).stdout.split()
    finally:
        first.communicate("", timeout=120)
    assert a[0] == "3" and b[0] == "5"  # the first holds GPU 3 while it lives, so the second takes 5
    assert a[1] == str(tmp_path / "s2s-device-77-3.lock") and b[1] == str(tmp_path / "s2s-device-77-5.lock")
