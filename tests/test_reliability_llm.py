"""Issue 30: an unreachable LLM endpoint ended "stopped: no-new-candidates", exit 0, never named. A port nothing
listens on (taken from the kernel, then closed) and a server that accepts and never answers are named in one line."""
from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest
from conftest import SAMPLES
from safety_util import cli_inproc, one_line_exit_2

from s2s.extract.mep_writer import make_mep

pytest.importorskip("openai")


@pytest.fixture
def mep(tmp_path: Path) -> Path:
    out = tmp_path / "mep-mv"
    make_mep(str(SAMPLES / "ocl_solver"), "matvec", str(out))
    return out


def _config(tmp_path: Path, port: int) -> Path:
    cfg = tmp_path / "llm.toml"
    cfg.write_text(f'base_url = "http://127.0.0.1:{port}/v1"\nmodel = "m"\napi_key = "k"\nmax_retries = 1\ntimeout_s = 2\n')
    return cfg


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.mark.slow
def test_an_llm_endpoint_nobody_listens_on_is_named(mep: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    port = _closed_port()
    rc, _o, err = cli_inproc(["optimize", str(mep), "--proposer", "llm", "--llm-config", str(_config(tmp_path, port)),
                              "--max-evals", "2", "--no-patterns", "--no-profile"], capsys)
    one_line_exit_2(rc, err)
    assert f"127.0.0.1:{port}" in err and "did not answer" in err, err


@pytest.mark.slow
def test_an_llm_endpoint_that_never_answers_is_named(mep: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    port = srv.getsockname()[1]
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:  # takes each connection and says nothing
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(srv.accept()[0])
            except OSError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        t0 = time.monotonic()
        rc, _o, err = cli_inproc(["optimize", str(mep), "--proposer", "llm", "--llm-config", str(_config(tmp_path, port)),
                                  "--max-evals", "2", "--no-patterns", "--no-profile"], capsys)
        assert time.monotonic() - t0 < 120
    finally:
        stop.set()
        t.join(timeout=5)
        for c in held:
            c.close()
        srv.close()
    one_line_exit_2(rc, err)
    assert f"127.0.0.1:{port}" in err and "did not answer" in err, err
