"""`s2s auto` end to end on the OpenCL sample with the built-in passes on PoCL: the README's main job."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import SAMPLES, run_cli

from s2s.mep.manifest import load


@pytest.mark.slow
def test_auto_on_opencl_sample_gives_an_applicable_diff(tmp_path: Path) -> None:
    tree = tmp_path / "ocl_solver"
    shutil.copytree(SAMPLES / "ocl_solver", tree, ignore=shutil.ignore_patterns("build", "ocl_solver"))
    before = {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()}
    res = run_cli("auto", str(tree), "--kernels", "matmul", "--max-evals", "6", "--work", str(tmp_path / "work"),
                  "--patterns", str(tmp_path / "patterns.json"), "--diff", str(tmp_path / "auto.diff"))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "matmul" in res.stdout and "reintegrated" in res.stdout
    assert {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()} == before  # the user's tree is untouched
    diff = (tmp_path / "auto.diff").read_text()
    assert "+++ b/kernels/linalg.cl" in diff
    subprocess.run(["git", "init", "-q"], cwd=tree, check=True)
    assert subprocess.run(["git", "apply", str(tmp_path / "auto.diff")], cwd=tree).returncode == 0
    subprocess.run(["make", "-s"], cwd=tree, check=True, capture_output=True)
    out = subprocess.run(["make", "-s", "run"], cwd=tree, check=True, capture_output=True, text=True).stdout
    assert "checksum matmul" in out


def test_patterns_library_suggests_similar_kernels(tmp_path: Path) -> None:
    from s2s.lang.kernel_facts import kernel_facts
    from s2s.optimize.patterns import Library, features

    src = (SAMPLES / "ocl_solver" / "kernels" / "linalg.cl").read_bytes()
    mm = features(kernel_facts(src, "opencl", "matmul"))  # type: ignore[arg-type]
    mv = features(kernel_facts(src, "opencl", "matvec"))  # type: ignore[arg-type]
    lib = Library(tmp_path / "p.json")
    lib.record(mm, "smem-tiling{tile=16}", 2.4, "cpu", "matmul", "opencl")
    lib.record(mv, "loop-unroll{factor=4}", 1.01, "cpu", "matvec", "opencl")  # below the bar: not stored
    again = Library(tmp_path / "p.json")
    assert [p.pipeline for p in again.suggest(mm, "opencl")] == ["smem-tiling{tile=16}"]
    assert again.suggest(mm, "cuda")[0].pipeline == "smem-tiling{tile=16}"  # carried across backends


@pytest.mark.slow
def test_auto_holds_winners_to_the_applications_data(tmp_path: Path) -> None:
    """With --build-cmd/--run-cmd auto is capture-first: the kernel is captured from a real run (here n = 250, which
    the MEP's generated sizes do not have) and optimized on that data, so a winner is verified on the application's
    own data before it goes into the diff; the user's tree stays untouched."""
    tree = tmp_path / "ocl_solver"
    shutil.copytree(SAMPLES / "ocl_solver", tree, ignore=shutil.ignore_patterns("build", "ocl_solver"))
    before = {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()}
    res = run_cli("auto", str(tree), "--kernels", "matvec", "--max-evals", "5", "--work", str(tmp_path / "work"),
                  "--patterns", str(tmp_path / "patterns.json"), "--diff", str(tmp_path / "auto.diff"), "--runs", "1",
                  "--build-cmd", "make", "--run-cmd", "./ocl_solver -k kernels -n 250 -i 2")
    assert res.returncode in (0, 1) and "Traceback" not in res.stderr, res.stdout + res.stderr
    assert {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()} == before
    mep = tmp_path / "work" / "mep-matvec"
    assert (mep / "capture").is_dir() and "[capture]" in (mep / "mep.toml").read_text()
    assert next(p for p in load(mep).params if p.name == "n").value == 250  # the application's own size
    report = json.loads((tmp_path / "work" / "auto-report.json").read_text())
    assert report["kernels"][0]["kernel"] == "matvec" and report["kernels"][0]["speedup"] is not None
    if report["reintegrated"]:
        assert "+++ b/kernels/linalg.cl" in (tmp_path / "auto.diff").read_text()
        assert res.returncode == (0 if report["app"]["output_unchanged"] else 1)
    lone = run_cli("auto", str(tree), "--kernels", "matvec", "--run-cmd", "./ocl_solver", "--work", str(tmp_path / "w2"))
    assert lone.returncode == 2 and "--build-cmd and --run-cmd go together" in lone.stderr
