"""bench/gpu_samples.py (the sample figures the honest way) and gpu_bench.py's rows for it: each sample MEP's capture
command builds the application with the MEP's own sizes and names the kernel by file; the summary counts every kernel
(refused, failed, not run, no win = 1.00x) with bench/geomean.py, CUDA and HIP apart; a capture refusal in the optimize
step is a row, not a lost result. The instrumented build of one capture runs with nvcc (no GPU: --dry)."""
from __future__ import annotations

import json
import math
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import tomllib
from conftest import ROOT, needs_nvcc

sys.path.insert(0, str(ROOT / "bench"))
import gpu_bench  # noqa: E402
import gpu_samples  # noqa: E402

MEPS = sorted(p for p in (ROOT / "bench" / "meps").iterdir() if (p / "mep.toml").is_file())


def test_every_sample_mep_has_a_capture_plan_with_its_own_sizes() -> None:
    assert len(MEPS) == 13
    for mep in MEPS:
        p = gpu_samples.plan(mep)
        m = tomllib.loads((mep / "mep.toml").read_text())
        short = m["kernel"].split("::")[-1]
        assert p["kernel"] == f"{m['origin']['file']}:{short}" and (ROOT / "samples" / p["sample"] / m["origin"]["file"]).is_file()
        words = p["build"].split()
        assert words[:3] == ["make", "-s", "-j4"]
        made = dict(w.split("=", 1) for w in words[3:])
        for flag in m["flags"]:  # the application is built with every size the MEP was extracted with
            name, value = flag[2:].split("=", 1)
            assert made[name] == value or (name == "NSTEPS" and short in gpu_samples.NO_STEPS and made[name] == "0"), (mep.name, flag)
        if p["sample"] == "hip_particles":
            assert (Path(made["HIP_SHIM"]) / "hip" / "hip_runtime.h").is_file()  # the copied tree has no ../../templates
        assert p["run"] == gpu_samples.APPS[p["sample"]]
    plans = {gpu_samples.plan(m)["mep"]: gpu_samples.plan(m) for m in MEPS}
    assert plans["07-heat3d_cuda.stencil7"]["launch"] == 3 and plans["01-heat3d_cuda.matmul_naive"]["launch"] == 1
    assert plans["12-hip_particles.integrate_bodies"]["skip"] and not plans["08-hip_particles.deposit_density"]["skip"]
    argv = gpu_samples.capture_argv(plans["07-heat3d_cuda.stencil7"], Path("/x/mep"), 80, dry=True)
    assert argv[argv.index("--run-cmd") + 1] == "true" and argv[argv.index("--into") + 1] == "/x/mep"
    assert argv[argv.index("--launch") + 1] == "3"


def _opt(name: str, status: str, speedup: float | None, captured: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"mep": name, "status": status, "speedup": speedup, "captured": captured, "evaluations": 12, "evals_to_best": 3,
            "winner": {"why": f"{name} why"}, "noise_band": {"high": 1.004}, "pipeline": "pass:x"}


def test_summary_counts_every_kernel_and_splits_cuda_and_hip() -> None:
    names = ["01-heat3d_cuda.a", "02-heat3d_cuda.b", "03-heat3d_cuda.c", "04-hip_particles.d", "05-hip_particles.e"]
    optimized = {"device": "H200", "max_evals": 30, "kernels": [
        _opt(names[0], "ok", 4.0, {"sets": [1], "from": "x", "refused_candidates": 2}),
        _opt(names[1], "refused: capture: the reference kernel does not reproduce the captured outputs", 9.0,
             {"sets": [3], "from": "x", "refused_candidates": 0}),
        _opt(names[2], "no-win", 1.0),
        _opt(names[3], "ok", 2.0),
    ]}  # names[4]: no row at all (not run)
    captures = {"captures": [{"mep": names[0], "status": "captured", "why": ""},
                             {"mep": names[3], "status": "failed", "why": "error: capture: HIP applications are not supported yet"}]}
    doc = gpu_samples.summarize(captures, optimized, names)
    rows = {r["mep"]: r for r in doc["kernels"]}
    assert [rows[n]["speedup_counted"] for n in names] == [4.0, 1.0, 1.0, 2.0, 1.0]
    assert doc["counts"] == {"cuda": 3, "hip": 2, "all": 5}
    assert doc["geomean"]["cuda"] == round(4.0 ** (1 / 3), 3) and doc["geomean"]["hip"] == round(math.sqrt(2.0), 3)
    assert doc["geomean"]["all"] == round(8.0 ** (1 / 5), 3)
    assert doc["summary"] == {"geomean": doc["geomean"]["all"], "kernels": 5, "label": "in-sample"}
    assert doc["held_to_captured_data"] == 2 and not rows[names[3]]["held_to_captured_data"]
    assert rows[names[4]]["status"].startswith("not-run")
    md = gpu_samples.markdown(doc)
    assert "**1.59x over the 3 CUDA kernels**" in md and "1.41x over the 2 HIP kernels" in md and "in-sample" in md
    line = next(ln for ln in md.splitlines() if ln.startswith(f"| {names[0]} |"))
    assert "4.00x" in line and "yes (launch 1; 2 candidate(s) refused on it)" in line
    line = next(ln for ln in md.splitlines() if ln.startswith(f"| {names[3]} |"))
    assert "no: failed: error: capture: HIP applications are not supported yet" in line and "2.00x" in line


def test_a_refusal_in_the_optimize_step_is_a_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import s2s.optimize.loop as loop
    from s2s.base.errors import UserError

    def refuse(mep: Path, opts: Any) -> None:
        assert opts.jobs == 2 and opts.time_budget_s is not None and opts.time_budget_s < 600 - 50
        raise UserError("capture: the reference kernel on the captured input set does not reproduce the captured outputs",
                        file=str(mep / "mep.toml"))

    monkeypatch.setattr(loop, "optimize", refuse)
    src = MEPS[6]
    row = gpu_bench.one(str(src), str(tmp_path), 30, 4, None, time.time() + 600, None, 2, 60.0)
    assert row["mep"] == src.name and row["speedup"] == 1.0
    assert row["status"].startswith("refused: ") and "does not reproduce" in row["status"]
    assert (tmp_path / src.name / "mep.toml").is_file()


@pytest.mark.parametrize("replay_rc", [0, 2])
def test_a_capture_that_does_not_replay_leaves_the_committed_mep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 replay_rc: int) -> None:
    """After `s2s capture --into` the copy is replayed (`s2s run --no-time --json`); a replay that fails puts the copy
    back as committed (optimized on generated inputs) and says why; one that works keeps the data and its messages."""
    src = ROOT / "bench" / "meps" / "03-heat3d_cuda.reduce_energy"
    mep = tmp_path / src.name
    gpu_samples.fresh_copy(src, mep)
    calls: list[list[str]] = []
    msg = "capture: the reference kernel on the captured input set reproduces the application's outputs" if replay_rc == 0 \
        else "energy: captured input set: 1 value(s) differ beyond tolerance"

    def fake_run(argv: list[str], timeout: float) -> tuple[int, str]:
        calls.append(argv)
        assert timeout > 0
        if argv[3] == "capture":  # what a capture leaves: the data and a rewritten mep.toml
            (mep / "capture").mkdir()
            (mep / "mep.toml").write_text((mep / "mep.toml").read_text() + '\n[capture]\nindex = "capture/index.json"\n')
            return 0, "attached to MEP ..."
        return replay_rc, "warning: something {not json}\n" + json.dumps({"verdict": "ok", "messages": [msg]}) + "\n"

    monkeypatch.setattr(gpu_samples, "_run", fake_run)
    row = gpu_samples.capture_one(gpu_samples.plan(src), src, mep, 80, False, time.time() + 100)
    assert [c[3] for c in calls] == ["capture", "run"] and calls[1][4:] == [str(mep), "--no-time", "--json"]
    assert row["replay_messages"] == [msg]
    if replay_rc == 0:
        assert row["status"] == "captured" and (mep / "capture").is_dir()
    else:
        assert row["status"] == "failed" and "captured, but the replay failed (s2s run exit 2): energy" in row["why"]
        assert not (mep / "capture").exists() and (mep / "mep.toml").read_bytes() == (src / "mep.toml").read_bytes()


@pytest.mark.slow
@needs_nvcc
def test_one_capture_builds_the_instrumented_application(tmp_path: Path) -> None:
    """The whole capture of stencil7 up to running the application (no GPU here): extraction with the build's flags,
    the same-kernel check against the committed MEP, instrumentation and the nvcc build all pass."""
    src = ROOT / "bench" / "meps" / "07-heat3d_cuda.stencil7"
    mep = tmp_path / src.name
    shutil.copytree(src, mep)
    before = (mep / "mep.toml").read_bytes()
    row = gpu_samples.capture_one(gpu_samples.plan(src), src, mep, 240, True, time.time() + 400)
    assert row["status"] == "built", row.get("output")
    assert (mep / "mep.toml").read_bytes() == before and not (mep / "capture").exists()  # nothing attached
    assert json.dumps(row)  # the row goes into captures.json


def test_gpu_bench_counts_candidates_refused_on_the_captured_data(tmp_path: Path) -> None:
    """Every evaluation on a captured MEP says the reference reproduced the application's outputs; only a failing
    output that names the captured input set counts as a refusal there."""
    from types import SimpleNamespace

    mep = tmp_path / "m"
    gpu_samples.fresh_copy(ROOT / "bench" / "meps" / "03-heat3d_cuda.reduce_energy", mep)
    assert gpu_bench._on_captured_data(mep, []) is None  # not captured
    (mep / "capture").mkdir()
    (mep / "capture" / "index.json").write_text("{}")
    (mep / "mep.toml").write_text((mep / "mep.toml").read_text()
                                  + '\n[capture]\nindex = "capture/index.json"\nfrom = "capture: launch 1"\nsets = [1]\n')
    reproduced = "the reference reproduces the application's outputs on the captured input set (launch 1 of the application)"
    rows = [SimpleNamespace(id="a", status="ok", result={"messages": [reproduced], "outputs": [{"ok": True, "message": ""}]}),
            SimpleNamespace(id="b", status="wrong-output", result={"messages": [reproduced], "outputs": [
                {"ok": False, "message": "captured input set (launch 1 of the application, src/main.cu:226): 1 value(s) differ"}]}),
            SimpleNamespace(id="c", status="wrong-output", result={"messages": [reproduced], "outputs": [
                {"ok": False, "message": "seed 1235: 12 value(s) differ beyond tolerance"}]}),
            SimpleNamespace(id="d", status="compile-failed", result={"messages": ["nvcc: error"]})]
    got = gpu_bench._on_captured_data(mep, rows)
    assert got == {"sets": [1], "from": "capture: launch 1", "refused_candidates": 1}
