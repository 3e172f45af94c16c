from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The installed CLI in a child process, as a user would run it."""
    return subprocess.run([sys.executable, "-m", "s2s", *args], capture_output=True, text=True, cwd=cwd, timeout=600)


@pytest.fixture
def cli():  # type: ignore[no-untyped-def]
    return run_cli


needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(autouse=True)
def _private_pattern_library(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never write the user's pattern library."""
    monkeypatch.setenv("S2S_PATTERNS", str(tmp_path_factory.getbasetemp() / "patterns.json"))
    monkeypatch.setenv("S2S_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "s2s-cache"))  # nor the scan cache


@pytest.fixture(scope="module")
def solver(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private copy of the OpenCL sample without build outputs, one per test module."""
    dest = tmp_path_factory.mktemp("app") / "ocl_solver"
    shutil.copytree(SAMPLES / "ocl_solver", dest, ignore=shutil.ignore_patterns("build", "ocl_solver"))
    return dest
