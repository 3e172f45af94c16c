"""`s2s auto` end to end on the OpenCL sample with the built-in passes on PoCL: the README's main job."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from conftest import SAMPLES, run_cli


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
    from s2s.kernel_facts import kernel_facts
    from s2s.patterns import Library, features

    src = (SAMPLES / "ocl_solver" / "kernels" / "linalg.cl").read_bytes()
    mm = features(kernel_facts(src, "opencl", "matmul"))  # type: ignore[arg-type]
    mv = features(kernel_facts(src, "opencl", "matvec"))  # type: ignore[arg-type]
    lib = Library(tmp_path / "p.json")
    lib.record(mm, "smem-tiling{tile=16}", 2.4, "cpu", "matmul", "opencl")
    lib.record(mv, "loop-unroll{factor=4}", 1.01, "cpu", "matvec", "opencl")  # below the bar: not stored
    again = Library(tmp_path / "p.json")
    assert [p.pipeline for p in again.suggest(mm, "opencl")] == ["smem-tiling{tile=16}"]
    assert again.suggest(mm, "cuda")[0].pipeline == "smem-tiling{tile=16}"  # carried across backends
