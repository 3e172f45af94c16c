"""Sequences in `s2s auto` (issue 28 item 5): the launch-bound loop of the profile captured (the sequence runtime
faked by a stand-in run command, as in test_sequence), its replay's result faked, and the decision and the staged copy
checked: a body graph that wins with its instantiation is written into the copy, which builds with nvcc; every
failure is the loop's status. The whole of auto on the GPU: test_auto_graphs_the_wave_loop_on_the_gpu."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, needs_nvcc
from test_sequence import APP, _profile_lines

from s2s.base.errors import UserError
from s2s.capture.profile import read_launches
from s2s.capture.sequences import sequences
from s2s.scan.tree import scan_tree
from s2s.sequence.in_auto import candidates, run_sequences


def _result(body_ms: float, body_setup: float = 0.4, verdict: str = "ok") -> dict[str, Any]:
    """What the harness prints, its numbers chosen: the original at 60 ms (55 ms at its fastest)."""
    return {"verdict": verdict, "launches": 40,
            "modes": {"original": {"median_ms": 60.0, "min_ms": 55.0, "setup_ms": 0.0},
                      "graph_window": {"median_ms": 20.0, "setup_ms": 90.0},
                      "graph_body": {"median_ms": body_ms, "setup_ms": body_setup}},
            "speedup": {"graph_window": 3.0, "graph_body": 60.0 / body_ms},
            "checks": {"replay_vs_capture": {"ok": True}, "graph_window": {"ok": True}, "graph_body": {"ok": True}}}


def _setup(tmp: Path) -> tuple[Path, Path, Any, Any, str]:
    root, staged = tmp / "app", tmp / "staged"
    shutil.copytree(APP, root)
    shutil.copytree(APP, staged)
    (tmp / "profile.txt").write_text(_profile_lines(20))
    stand_in = tmp / "run.py"
    stand_in.write_text(f"import os, sys\nfrom pathlib import Path\nsys.path.insert(0, {str(Path(__file__).parent)!r})\n"
                        "from test_sequence import fake_window\n"
                        "fake_window(Path(os.environ['S2S_SEQ_DIR']), int(os.environ['S2S_SEQ_WINDOW']) // 2)\n")
    return root, staged, scan_tree(root), read_launches(tmp / "profile.txt"), f"{sys.executable} {stand_in}"


def _run(tmp: Path, replay: Any, change: tuple[str, str] | None = None, **kw: Any) -> tuple[list[dict[str, Any]], Path]:
    """run_sequences on the heat app's loop; `change`: (old, new) text replaced in the staged copy first."""
    root, staged, index, launches, run_cmd = _setup(tmp)
    if change is not None:
        src = staged / "heat1d_steps.cu"
        src.write_text(src.read_text().replace(*change))
    found = sequences(launches, list(index.launches))
    total = sum(la.ms for la in launches)
    rows = run_sequences(root, staged, index, launches, found, total, "true", run_cmd, tmp / "work", replay=replay,
                         log=lambda _m: None, **kw)
    return rows, staged


def test_only_launch_bound_loops_with_a_large_share_of_the_gpu_time_are_candidates(tmp_path: Path) -> None:
    _root, _staged, index, launches, _cmd = _setup(tmp_path)
    found = sequences(launches, list(index.launches))
    total = sum(la.ms for la in launches)
    assert candidates(found, total) == found and found[0].launch_bound
    assert candidates(found, total * 20) == []  # 5% of the time: not worth a capture


@pytest.mark.slow
@needs_nvcc
def test_a_body_graph_that_wins_is_written_into_the_staged_copy_which_builds(tmp_path: Path) -> None:
    calls: list[Path] = []

    def replay(mep: Path, reps: int) -> dict[str, Any]:
        calls.append(mep)
        assert (mep / "sequence.json").is_file() and reps > 0
        return _result(24.0)

    rows, staged = _run(tmp_path, replay)
    assert len(calls) == 1 and len(rows) == 1
    row = rows[0]
    assert row["status"].startswith("reintegrated (graph_body;"), row
    assert row["form"] == "graph_body" and row["speedup"] == pytest.approx(55.0 / 24.4, rel=1e-3)
    assert row["loop"] == "heat1d_steps.cu:main@68 (heat_step, heat_source)" and row["replay_speedups"]["graph_body"] == 2.5
    text = (staged / "heat1d_steps.cu").read_text()
    assert "s2s_body::Graph s2s_body_graph(4, \"heat1d_steps.cu:68\");" in text and "heat_step<<<" not in text
    assert (tmp_path / "app" / "heat1d_steps.cu").read_bytes() == (APP / "heat1d_steps.cu").read_bytes()  # only read
    proc = subprocess.run(["make"], cwd=staged, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize(("replay_result", "status"), [
    (_result(54.0, 6.0), "not reintegrated: no form beat the original by 1.05x with its instantiation (graph_body: "
                         "54.000 ms + 6.000 ms to instantiate, 0.92x"),
    (_result(10.0, verdict="FAILED"), "not reintegrated: a check of the sequence MEP failed"),
    (None, "failed: "),
])
def test_a_loop_that_does_not_win_or_fails_is_a_status_and_the_copy_is_left_alone(
        tmp_path: Path, replay_result: dict[str, Any] | None, status: str) -> None:
    def replay(mep: Path, reps: int) -> dict[str, Any]:
        if replay_result is None:
            raise UserError("the sequence harness printed no result (exit 2): no CUDA-capable device", file=str(mep))
        return replay_result

    rows, staged = _run(tmp_path, replay)
    assert rows[0]["status"].startswith(status), rows[0]["status"]
    assert rows[0]["form"] == "" and (staged / "heat1d_steps.cu").read_bytes() == (APP / "heat1d_steps.cu").read_bytes()


def test_a_capture_that_fails_and_a_launch_changed_in_the_copy_are_statuses(tmp_path: Path) -> None:
    root, staged, index, launches, _cmd = _setup(tmp_path)
    found = sequences(launches, list(index.launches))
    rows = run_sequences(root, staged, index, launches, found, 1.0, "true", "false", tmp_path / "w1",
                         replay=lambda m, r: _result(24.0), log=lambda _m: None)
    assert rows[0]["status"].startswith("failed: ") and "run" in rows[0]["status"], rows[0]
    # a kernel's reintegration changed the stencil's launch configuration in the copy: the graph takes it as written
    change = ("heat_step<<<grid, block>>>", "heat_step<<<grid, 2 * block>>>")
    rows, staged = _run(tmp_path / "again", lambda m, r: _result(24.0), change)
    assert rows[0]["status"].startswith("reintegrated"), rows[0]
    assert "s2s_body::launch(s2s_body_graph, heat_step, grid, 2 * block, 0, d_u, d_v, N, R);" in (staged / "heat1d_steps.cu").read_text()
    # a copy that launches the stencil twice from main: not the loop that was measured
    change = ("heat_step<<<grid, block>>>(d_u, d_v, N, R);", "heat_step<<<grid, block>>>(d_u, d_v, N, R);\n"
              "        heat_step<<<grid, block>>>(d_v, d_u, N, R);")
    rows, staged = _run(tmp_path / "twice", lambda m, r: _result(24.0), change)
    assert rows[0]["status"] == ("not reintegrated: the staged copy launches heat_step from main 2 time(s), the measured "
                                 "tree 1: the loop is not the one measured")
    assert "s2s_body" not in (staged / "heat1d_steps.cu").read_text()
    # lines moved above the loop (a kernel rewritten in the same file) leave the launches where they are found
    rows, staged = _run(tmp_path / "moved", lambda m, r: _result(24.0), ("#define N (1 << 16)", "#define N (1 << 16)\n\n\n"))
    assert rows[0]["status"].startswith("reintegrated"), rows[0]
    assert "s2s_body::launch(s2s_body_graph, heat_step, grid, block, 0, d_u, d_v, N, R);" in (staged / "heat1d_steps.cu").read_text()


def test_an_opencl_loop_is_reported_not_transformed(tmp_path: Path) -> None:
    from s2s.capture.profile import Launch

    twin = ROOT / "bench" / "seqzoo" / "heat1d_steps_ocl"
    index = scan_tree(twin)
    sites = sorted(index.launches, key=lambda s: s.start_byte)
    launches = [Launch(s.kernel, f"{s.file}:{s.line}", t + 1, 0.002, 10.0 * (2 * t + i), 10.0 * (2 * t + i) + 2)
                for t in range(30) for i, s in enumerate(sites)]
    found = sequences(launches, list(index.launches))
    assert found, "the twin's loop is a sequence"
    rows = run_sequences(twin, tmp_path / "staged", index, launches, found, 0.12, "true", "true", tmp_path / "w",
                         replay=lambda m, r: _result(24.0), log=lambda _m: None)
    assert rows[0]["status"].startswith("reported, not transformed: only CUDA <<<>>> loops become graphs"), rows[0]
    assert not (tmp_path / "w").exists()


_GPU = shutil.which("nvidia-smi") is not None


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.skipif(not _GPU, reason="needs an NVIDIA GPU")
def test_auto_graphs_the_wave_loop_on_the_gpu(tmp_path: Path) -> None:
    """`s2s auto` on bench/seqzoo/wave2d_steps (two kernels a step, 10,000 launches of about 4 us): the loop is
    launch-bound and holds the GPU time, so it is captured and replayed; its body graph (6 launches, instantiated
    once) beat it on the replay in the first GPU run (15.1 ms + 0.4 ms against 34.3 ms at the original's fastest),
    so the staged copy makes the loop that graph, the application is rebuilt and rerun before and after with its
    output unchanged, and the combined diff holds the graph."""
    import json

    from conftest import run_cli

    app = tmp_path / "wave2d_steps"
    shutil.copytree(ROOT / "bench" / "seqzoo" / "wave2d_steps", app)
    work, diff = tmp_path / "work", tmp_path / "auto.diff"
    proc = run_cli("auto", str(app), "--build-cmd", "make", "--run-cmd", "./wave2d_steps", "--top", "1", "--max-evals",
                   "1", "--rounds", "1", "--runs", "3", "--work", str(work), "--diff", str(diff))
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    report = json.loads((work / "auto-report.json").read_text())
    (loop,) = report["sequence_results"]
    print(json.dumps({"sequence_results": report["sequence_results"], "app": report["app"], "gpu": report["gpu"],
                      "stages": report["stages"]}))
    assert loop["loop"] == "wave2d_steps.cu:main@86 (wave_step, wave_edges)" and loop["gpu_share"] > 0.5
    assert loop["status"].startswith("reintegrated (graph_body;"), loop
    assert loop["checks"]["graph_body"] is True and loop["speedup"] >= 1.05
    assert report["app"]["output_unchanged"] is True and proc.returncode == 0, proc.stdout[-3000:]
    text = diff.read_text()
    assert 's2s_body::Graph s2s_body_graph(6, "wave2d_steps.cu:86");' in text
    assert "s2s_body::launch(s2s_body_graph, wave_step, grid, block, 0," in text
    (timed,) = report["gpu"]["graphed_loops"]  # the loop's time around it in the runs after, events on the GPU
    assert timed["kernel_ms_before"] == loop["gpu_ms"] and len(timed["loop_ms_after"]) >= 3
    assert report["gpu"]["ms_after"] is not None


def test_a_graphed_loop_is_counted_after_by_its_time_measured_around_it() -> None:
    """The after-run's kernel times miss a graphed loop's launches; its time around the whole loop in the application's
    runs after stands in (the median), and a loop with no time line leaves ms_after out rather than guess."""
    import tempfile

    from s2s.auto import AppAutoResult, _count_graphed_loops
    from s2s.sequence.in_auto import read_loop_times

    with tempfile.TemporaryDirectory() as tmp:
        times = Path(tmp) / "t.txt"
        times.write_text("graph_loop w.cu:86 20.5 10000\ngraph_loop w.cu:86 19.0 10000\ngraph_loop w.cu:86 30.0 10000\n"
                         "garbage\ngraph_loop w.cu:86 x 1\n")
        assert read_loop_times(times) == {"w.cu:86": [20.5, 19.0, 30.0]}
        row = {"loop": "w.cu:main (a, b)", "gpu_ms": 37.5, "label": "w.cu:86", "status": "reintegrated (graph_body; ...)"}
        result = AppAutoResult(gpu={"ms_before": 40.0, "ms_after": 2.0, "how": "sum"})
        _count_graphed_loops(result, [row], 2.0, times)
        assert result.gpu["ms_after"] == 22.5 and result.gpu["graphed_loops"][0]["loop_ms_after"] == [20.5, 19.0, 30.0]
        result = AppAutoResult(gpu={"ms_before": 40.0, "ms_after": 2.0, "how": "sum"})
        _count_graphed_loops(result, [dict(row, label="w.cu:99")], 2.0, times)
        assert result.gpu["ms_after"] is None and "not measured" in result.notes[0]
        # the loop's time before measured the same way (one run of the same build launching as the original, three
        # runs of the loop in that process, summed): it replaces the loop's kernel times (gaps excluded) before
        direct = Path(tmp) / "d.txt"
        direct.write_text("graph_loop w.cu:86 15.0 3334 77\ngraph_loop w.cu:86 15.5 3333 77\ngraph_loop w.cu:86 15.5 3333 77\n")
        result = AppAutoResult(gpu={"ms_before": 40.0, "ms_after": 2.0, "how": "sum"})
        _count_graphed_loops(result, [row], 2.0, times, direct)
        assert result.gpu["graphed_loops"][0]["loop_ms_before"] == [46.0]
        assert result.gpu["ms_before"] == 40.0 - 37.5 + 46.0 and result.gpu["ms_after"] == 22.5
        assert "S2S_GRAPH_DIRECT" in result.gpu["how"]


def test_what_ran_slower_in_the_application_is_taken_back_and_the_rest_staged_again(tmp_path: Path) -> None:
    """A kernel whose launch shape won on its captured launch but whose every launch in the application took longer
    (a development application: 14.7 ms before, 314 ms after, kept as a 1.40x win), and a graphed loop slower around
    each of its runs than the same build launching as the original (another: 1,090 ms before, 1,559 ms after), are
    found; a change within SLOWER is not. _restage then writes a fresh copy with only what is still reintegrated: the
    loop that won, graphed again in its form and body."""
    from s2s.auto import AppAutoResult, _restage, _slowed

    rows, _staged = _run(tmp_path, lambda _mep, _reps: _result(20.0))
    (row,) = rows
    assert row["status"].startswith("reintegrated") and row["body"] == 4 and row["form"] == "graph_body"
    slow_kernel = {"kernel": "k", "gpu_ms": 14.7, "gpu_ms_after": 314.2, "launches": 1402, "status": "reintegrated", "mep": ""}
    fine_kernel = {"kernel": "j", "gpu_ms": 10.0, "gpu_ms_after": 10.8, "launches": 50, "status": "reintegrated", "mep": ""}
    # launched once: its one time holds one-time costs (PoCL's JIT made a 7.5x winner's one launch 3.5x slower)
    once = {"kernel": "m", "gpu_ms": 0.252, "gpu_ms_after": 0.880, "launches": 1, "status": "reintegrated", "mep": ""}
    result = AppAutoResult(kernels=[slow_kernel, fine_kernel, once], sequence_results=[dict(row)],
                           gpu={"graphed_loops": [{"loop": row["loop"], "kernel_ms_before": 37.5, "loop_ms_before": [1090.0],
                                                   "loop_ms_after": [1698.0, 1559.0, 1652.0]}]})
    found = _slowed(result)
    assert [(what, why) for _r, what, why in found] == [("k", "14.700 ms before, 314.200 ms after"),
                                                        (row["loop"], "1090.000 ms before, 1652.000 ms after")]
    result.gpu["graphed_loops"][0]["loop_ms_after"] = [700.0, 720.0]  # faster around its runs: kept
    assert [what for _r, what, _why in _slowed(result)] == ["k"]
    # ... unless every run of the application took longer after (a graph's host cost: 1.40 -> 2.60 s of wall time)
    result.app = {"wall_before_s": [1.37, 1.42], "wall_after_s": [2.52, 2.68]}
    assert [why for _r, _w, why in _slowed(result)][1] == "the application's wall time 1.40 s before, 2.60 s after"
    result.app = {"wall_before_s": [1.37, 1.62], "wall_after_s": [1.52, 1.78]}  # overlapping within SLOWER: noise
    assert [what for _r, what, _why in _slowed(result)] == ["k"]
    # the fresh copy: the loop graphed again, nothing of an earlier copy left
    root, staged, index, launches, _cmd = _setup(tmp_path / "again")
    (staged / "stale.txt").write_text("from an earlier staging")
    result = AppAutoResult(sequence_results=[dict(row)])
    _restage(root, staged, result, index, sequences(launches, list(index.launches)))
    text = (staged / "heat1d_steps.cu").read_text()
    assert "s2s_body::Graph s2s_body_graph(4," in text and not (staged / "stale.txt").exists() and result.any_win
    gone = AppAutoResult(sequence_results=[dict(row, loop="other.cu:main (x)")])
    _restage(root, staged, gone, index, sequences(launches, list(index.launches)))
    assert gone.sequence_results[0]["status"].startswith("not kept: the loop is not among") and not gone.any_win
