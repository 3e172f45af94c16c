"""Issue 30: `--cluster tcp://` against a server that answers garbage (a traceback: its bytes read as a 3 EiB frame)
or accepts and never answers (minutes of waiting), and `--cluster slurm` where Slurm is absent or does not answer
(a traceback per job): one line each, exit 2, bounded in time. The servers are local sockets of the test."""
from __future__ import annotations

import gc
import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from safety_util import cli_inproc, matmul_mep, one_line_exit_2

from s2s.optimize.execution import dask_cluster


@pytest.fixture(scope="module")
def mep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return matmul_mep(tmp_path_factory.mktemp("cluster"))[1]


@contextmanager
def _server(reply: bytes | None) -> Iterator[int]:
    """A local server: each connection gets `reply` (None: nothing) and is held open until the end."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    srv.settimeout(0.2)
    stop, held = threading.Event(), []

    def serve() -> None:
        while not stop.is_set():
            try:
                conn = srv.accept()[0]
            except OSError:
                continue
            held.append(conn)
            if reply is not None:
                try:
                    conn.sendall(reply)
                except OSError:
                    pass

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        yield srv.getsockname()[1]
    finally:
        stop.set()
        t.join(timeout=5)
        for c in held:
            c.close()
        srv.close()


@pytest.mark.slow
@pytest.mark.parametrize("reply", [b"\xff" * 4096, b"HTTP/1.0 200 OK\r\n\r\nhello\r\n" * 50, None], ids=["garbage", "http", "silent"])
def test_a_tcp_cluster_that_is_no_dask_scheduler_is_one_line(mep: Path, reply: bytes | None, monkeypatch: pytest.MonkeyPatch,
                                                             capsys) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(dask_cluster, "CONNECT_TIMEOUT_S", 3.0)
    monkeypatch.setattr(dask_cluster, "CONNECT_GRACE_S", 1.0)  # the silent server: given up after 4 s, not 8
    with _server(reply) as port:
        t0 = time.monotonic()
        rc, _o, err = cli_inproc(["optimize", str(mep), "--cluster", f"tcp://127.0.0.1:{port}", "--max-evals", "1",
                                  "--no-patterns"], capsys)
        took = time.monotonic() - t0
    one_line_exit_2(rc, err)
    assert f"tcp://127.0.0.1:{port}" in err and "Dask scheduler" in err, err
    assert took < 30, took


def test_slurm_without_its_tools_is_one_line(mep: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("PATH", str(tmp_path))  # no sbatch, no sinfo
    rc, _o, err = cli_inproc(["optimize", str(mep), "--cluster", "slurm", "--max-evals", "1", "--no-patterns"], capsys)
    one_line_exit_2(rc, err)
    assert "--cluster slurm" in err and "not on PATH" in err, err


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("sinfo") is None or shutil.which("sbatch") is None, reason="Slurm's tools are not installed")
def test_slurm_whose_controller_does_not_answer_is_one_line(mep: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys) -> None:  # type: ignore[no-untyped-def]
    from s2s.optimize.execution import slurm

    monkeypatch.setenv("SLURM_CONF", str(tmp_path / "no-slurm.conf"))
    monkeypatch.setattr(slurm, "SINFO_TIMEOUT_S", 2.0)  # sinfo retries an unreadable configuration for 60 s
    t0 = time.monotonic()
    rc, _o, err = cli_inproc(["optimize", str(mep), "--cluster", "slurm", "--max-evals", "1", "--no-patterns"], capsys)
    one_line_exit_2(rc, err)
    assert "Slurm does not answer" in err, err
    assert time.monotonic() - t0 < 30
    assert os.environ["SLURM_CONF"].endswith("no-slurm.conf")


@pytest.mark.slow
def test_a_real_scheduler_is_still_reached(tmp_path: Path) -> None:
    from distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        client = dask_cluster.connect(cluster.scheduler_address, timeout_s=20)
        try:
            assert client.submit(lambda x: x + 1, 41).result(timeout=20) == 42
        finally:
            client.close()


def test_a_failed_connection_leaves_no_client_for_the_collector() -> None:
    """A Client that failed half-way (a server answering garbage) stayed alive in a reference cycle and closed itself
    whenever the cyclic collector ran: once inside a later Client's construction, whose thread then deadlocked on
    LoopRunner's class-wide lock, and the next LocalCluster of the process waited forever (a hung test run)."""
    from distributed import Client

    from s2s.base.errors import UserError

    def alive() -> int:
        return sum(isinstance(o, Client) for o in gc.get_objects())

    before = alive()
    for reply in (b"\xff" * 4096, b"HTTP/1.0 200 OK\r\n\r\nhello\r\n" * 50):
        with _server(reply) as port, pytest.raises(UserError, match="not as a Dask scheduler"):
            dask_cluster.connect(f"tcp://127.0.0.1:{port}", timeout_s=3)
    assert alive() <= before
