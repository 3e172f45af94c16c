"""Issue 30: a read-only MEP ended in tracebacks (run: mkdir build/) or was called a damaged history. The MEP is
bind-mounted read-only onto itself in a private mount namespace of the command (`unshare -m`, root only: skipped
elsewhere), so nothing outside the test sees the mount."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from safety_util import fake_win, fingerprint, matmul_mep, one_line_exit_2, private_copy


def _can_mount(tmp: Path) -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    res = subprocess.run(["unshare", "-m", "sh", "-c", f"mount --bind {tmp} {tmp} && mount -o remount,bind,ro {tmp}"],
                         capture_output=True)
    return res.returncode == 0


@pytest.fixture(scope="module")
def golden(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return matmul_mep(tmp_path_factory.mktemp("romep"))


def _read_only_run(mep: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    script = (f'mount --bind "{mep}" "{mep}" && mount -o remount,bind,ro "{mep}" && '
              f'exec "{sys.executable}" -m s2s "$@"')
    return subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.slow
@pytest.mark.parametrize(("cmd", "said"), [(["run", "--no-time"], "Read-only file system"),
                                           (["optimize", "--max-evals", "1", "--no-patterns"], "cannot write in the MEP"),
                                           (["report"], "is not damaged; its directory or disk is read-only")])
def test_a_read_only_mep_is_named_in_one_line(golden: tuple[Path, Path], tmp_path: Path, cmd: list[str], said: str) -> None:
    if not _can_mount(tmp_path):
        pytest.skip("needs root and unshare -m to mount the MEP read-only")
    _tree, mep = private_copy(golden, tmp_path)
    fake_win(mep)  # a history: report has something to write
    before = fingerprint(mep)
    res = _read_only_run(mep, [cmd[0], str(mep), *cmd[1:]])
    one_line_exit_2(res.returncode, res.stderr)
    assert said in res.stderr and "is damaged" not in res.stderr, res.stderr
    assert fingerprint(mep) == before
