"""bench/gpu_preamble.sh: the setup the GPU scripts share, run here with a stand-in nvidia-smi (no GPU needed)."""
from __future__ import annotations

import os
import subprocess
import tarfile
from pathlib import Path

from conftest import ROOT

PREAMBLE = ROOT / "bench" / "gpu_preamble.sh"


def _bash(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    fake = cwd / "bin"
    fake.mkdir(exist_ok=True)
    smi = fake / "nvidia-smi"
    smi.write_text('#!/bin/sh\necho "asked: $*"\n')
    smi.chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"}
    env.pop("CUDA_MODULE_LOADING", None)
    return subprocess.run(["bash", "-c", f"set -u\nOUT=out/run\n. {PREAMBLE}\n{script}"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


def test_setup_and_helpers(tmp_path: Path) -> None:
    res = _bash('echo "loading=$CUDA_MODULE_LOADING"\ngpu_info\ncat $OUT/gpu.txt\nstage 5 ok echo hello\ncat $OUT/ok.log\nstage 1 slow sleep 5\n'
                "echo table > $OUT/gpu_zoo_a.md; echo log > $OUT/x.log\npack zoo.tgz 'gpu_zoo_*.md'\nls $OUT", tmp_path)
    assert res.returncode == 0, res.stderr
    out = tmp_path / "out" / "run"
    assert "loading=EAGER" in res.stdout
    assert "asked: --query-gpu=name,driver_version,memory.total --format=csv\n" in res.stdout
    assert "ok rc=0 0s\nhello\n" in res.stdout
    assert "slow rc=124 1s" in res.stdout  # killed by its timeout
    assert sorted(p.name for p in out.iterdir()) == ["gpu_zoo_a.md", "zoo.tgz"]  # only the tables stay beside the archive
    with tarfile.open(out / "zoo.tgz") as tar:
        names = {Path(n).name for n in tar.getnames()}
    assert {"gpu.txt", "ok.log", "x.log", "gpu_zoo_a.md"} <= names and "zoo.tgz" not in names


def test_pack_without_patterns_keeps_everything_and_gpu_info_takes_fields(tmp_path: Path) -> None:
    res = _bash("gpu_info index,name\necho a > $OUT/a.log\npack all.tgz\npack all.tgz\nls $OUT", tmp_path)
    assert res.returncode == 0, res.stderr
    out = tmp_path / "out" / "run"
    assert sorted(p.name for p in out.iterdir()) == ["a.log", "all.tgz", "gpu.txt"]
    assert "--query-gpu=index,name" in (out / "gpu.txt").read_text()
    with tarfile.open(out / "all.tgz") as tar:  # a second pack does not hold the first
        assert "all.tgz" not in {Path(n).name for n in tar.getnames()}


def test_every_gpu_script_sources_the_preamble_and_repeats_none_of_it() -> None:
    scripts = sorted((ROOT / "bench").glob("gpu_*.sh"))
    assert len(scripts) > 5
    for script in scripts:
        if script == PREAMBLE:
            continue
        text = script.read_text()
        assert '. "$(dirname "$0")/gpu_preamble.sh"' in text, script.name
        assert "pip install" not in text and "--query-gpu" not in text and "stage() {" not in text, script.name


def test_gpu_watch_samples_utilization_and_load_until_unwatched(tmp_path: Path) -> None:
    res = _bash("gpu_watch\nsleep 2.5\ngpu_unwatch\nsleep 0.3\nps -o pid= -p $GPU_WATCH $LOAD_WATCH | wc -l", tmp_path)
    assert res.returncode == 0, res.stderr
    out = tmp_path / "out" / "run"
    assert "--query-gpu=timestamp,index,utilization.gpu,utilization.memory" in (out / "smi.csv").read_text()
    load = (out / "load.txt").read_text().split()
    assert len(load) >= 6 and load[0].isdigit() and float(load[1]) >= 0.0  # epoch, then the three load averages
    assert res.stdout.split()[-1] == "0"  # both samplers stopped
