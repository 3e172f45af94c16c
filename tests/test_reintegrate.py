"""Reintegrating a verified winner into a copy of the OpenCL sample: diff, in place, rollback, bad input."""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from conftest import SAMPLES, run_cli

from s2s.extract.mep_writer import make_mep
from s2s.mep.history import History
from s2s.optimize.loop import Options, optimize


def _snapshot(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and ".s2s-backup" not in p.parts}


def _checksums(text: str) -> dict[str, float]:
    return {m.group(1): float(m.group(2)) for m in re.finditer(r"checksum\s+(\S+)\s*=\s*(\S+)", text)}


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, float]]:
    base = tmp_path_factory.mktemp("reint")
    tree = base / "ocl_solver"
    shutil.copytree(SAMPLES / "ocl_solver", tree, ignore=shutil.ignore_patterns("build", "ocl_solver"))
    subprocess.run(["make", "-s"], cwd=tree, check=True, capture_output=True)
    before = subprocess.run(["make", "-s", "run"], cwd=tree, check=True, capture_output=True, text=True).stdout
    mep = base / "mep-matmul"
    make_mep(str(tree), "matmul", str(mep))
    out = optimize(mep, Options(max_evals=4, rounds=1, use_patterns=False))
    assert out.best_id is not None
    return tree, mep, _checksums(before)


@pytest.mark.slow
def test_diff_applies_with_git_and_patch(app: tuple[Path, Path, dict[str, float]], tmp_path: Path) -> None:
    tree, mep, _ = app
    res = run_cli("reintegrate", str(mep), "--diff", str(tmp_path / "w.diff"))
    assert res.returncode == 0, res.stderr
    diff = (tmp_path / "w.diff").read_text()
    assert "a/kernels/linalg.cl" in diff and "+" in diff
    copy = tmp_path / "copy"
    shutil.copytree(tree, copy)
    subprocess.run(["git", "init", "-q"], cwd=copy, check=True)
    assert subprocess.run(["git", "apply", "--check", str(tmp_path / "w.diff")], cwd=copy).returncode == 0
    assert subprocess.run(["patch", "-p1", "--dry-run", "-i", str(tmp_path / "w.diff")], cwd=copy, capture_output=True).returncode == 0


def test_in_place_rebuilds_and_gives_the_same_results(app: tuple[Path, Path, dict[str, float]], tmp_path: Path) -> None:
    tree, mep, before = app
    copy = tmp_path / "app"
    shutil.copytree(tree, copy)
    res = run_cli("reintegrate", str(mep), "--tree", str(copy), "--in-place", "--build-cmd", "make -s", "--test-cmd", "make -s run")
    assert res.returncode == 0, res.stderr
    assert (copy / "kernels" / "linalg.cl").read_bytes() != (tree / "kernels" / "linalg.cl").read_bytes()
    after = _checksums(subprocess.run(["make", "-s", "run"], cwd=copy, check=True, capture_output=True, text=True).stdout)
    assert set(after) == set(before)
    for name, value in before.items():
        assert abs(after[name] - value) <= 1e-3 * max(1.0, abs(value)), name


def test_failing_build_leaves_tree_byte_identical(app: tuple[Path, Path, dict[str, float]], tmp_path: Path) -> None:
    tree, mep, _ = app
    copy = tmp_path / "app"
    shutil.copytree(tree, copy)
    snap = _snapshot(copy)
    res = run_cli("reintegrate", str(mep), "--tree", str(copy), "--in-place", "--build-cmd", "false")
    assert res.returncode == 2 and "restored" in res.stderr
    assert _snapshot(copy) == snap


@pytest.mark.slow
def test_hanging_test_command_is_killed_and_rolled_back(app: tuple[Path, Path, dict[str, float]], tmp_path: Path) -> None:
    tree, mep, _ = app
    copy = tmp_path / "app"
    shutil.copytree(tree, copy)
    snap = _snapshot(copy)
    res = run_cli("reintegrate", str(mep), "--tree", str(copy), "--in-place", "--test-cmd", "sleep 60", "--cmd-timeout", "2")
    assert res.returncode == 2 and "timed out" in res.stderr
    assert _snapshot(copy) == snap


def test_changed_original_is_refused_unless_forced(app: tuple[Path, Path, dict[str, float]], tmp_path: Path) -> None:
    tree, mep, _ = app
    copy = tmp_path / "app"
    shutil.copytree(tree, copy)
    cl = copy / "kernels" / "linalg.cl"
    text = cl.read_text()
    idx = text.index("__kernel void matmul")
    body_end = text.index("}", text.index("{", idx))
    cl.write_text(text[:body_end] + "    /* edited by hand */\n" + text[body_end:])
    res = run_cli("reintegrate", str(mep), "--tree", str(copy))
    assert res.returncode == 2 and "changed since it was extracted" in res.stderr and "linalg.cl:" in res.stderr
    assert run_cli("reintegrate", str(mep), "--tree", str(copy), "--force").returncode == 0


@pytest.mark.slow
def test_moved_kernel_is_found_again(app: tuple[Path, Path, dict[str, float]], tmp_path: Path) -> None:
    tree, mep, _ = app
    copy = tmp_path / "app"
    shutil.copytree(tree, copy)
    cl = copy / "kernels" / "linalg.cl"
    cl.write_text("/* a new comment that moves every byte */\n" + cl.read_text())
    res = run_cli("reintegrate", str(mep), "--tree", str(copy))
    assert res.returncode == 0 and "moved" in res.stderr


def test_read_only_file_is_left_alone(app: tuple[Path, Path, dict[str, float]], tmp_path: Path) -> None:
    tree, mep, _ = app
    copy = tmp_path / "app"
    shutil.copytree(tree, copy)
    cl = copy / "kernels" / "linalg.cl"
    os.chmod(cl, stat.S_IRUSR | stat.S_IRGRP)
    snap = _snapshot(copy)
    res = run_cli("reintegrate", str(mep), "--tree", str(copy), "--in-place")
    assert res.returncode == 2 and "not writable" in res.stderr
    assert _snapshot(copy) == snap


def test_missing_mep_and_unverified_variant_refused(app: tuple[Path, Path, dict[str, float]], tmp_path: Path) -> None:
    _tree, mep, _ = app
    res = run_cli("reintegrate", str(tmp_path / "no-such-mep"))
    assert res.returncode == 2 and "no-such-mep" in res.stderr
    hist = History(mep / "history.sqlite")
    hist.add("vbroken0001", 9, "test:broken", None, "0" * 64, None)
    hist.finish("vbroken0001", "wrong-output", {"messages": ["planted"]})
    hist.close()
    res = run_cli("reintegrate", str(mep), "--variant", "vbroken0001")
    assert res.returncode == 2 and "failed verification" in res.stderr

