"""`s2s auto TREE --build-cmd B --run-cmd R` is capture-first: a timed run ranks the kernels (s2s.capture.profile),
each top kernel is captured at a steady-state launch, optimized on that data and reintegrated, and the application
is rebuilt and rerun before and after (s2s.capture.appcheck). End to end for real on PoCL (samples/ocl_solver);
the CUDA profile instrumentation is built with nvcc. Also `s2s capture --compare-static` and static auto's
FILL-IN line."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, SAMPLES, needs_nvcc, run_cli

from s2s.base.errors import UserError
from s2s.capture.appcheck import Run, compare_apps, same_output
from s2s.capture.profile import KernelTimes, instrument_all, read_profile

needs_cc = pytest.mark.skipif(shutil.which("make") is None or shutil.which("gcc") is None, reason="make and gcc needed")


def tree_hash(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            h.update(p.relative_to(root).as_posix().encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


# -- the profile ------------------------------------------------------------------------------------------------
def test_steady_launch_is_the_median_after_the_first_few() -> None:
    kt = KernelTimes("k", times=[(1, 9.0), (2, 5.0), (3, 1.0), (4, 3.0), (5, 2.0), (6, 7.0)])
    assert kt.steady_launch() == 5  # launches 3..6 by time: 1.0 (3), 2.0 (5), 3.0 (4), 7.0 (6) -> the lower median
    assert KernelTimes("one", times=[(1, 4.0)]).steady_launch() == 1
    assert KernelTimes("two", times=[(1, 4.0), (2, 1.0)]).steady_launch() == 2
    assert kt.total_ms == pytest.approx(27.0) and kt.as_dict()["median_ms"] == pytest.approx(4.0)


def test_read_profile_groups_by_kernel(tmp_path: Path) -> None:
    f = tmp_path / "p.txt"
    f.write_text("launch a src/x.cu:3 1 0.5\nlaunch b src/x.cu:9 1 2.0\nlaunch a src/y.cu:4 2 0.25\ngarbage\n"
                 "launch a src/x.cu:3 3 -1.000000\n")
    got = read_profile(f)
    assert got["a"].times == [(1, 0.5), (2, 0.25), (3, -1.0)] and got["a"].sites == ["src/x.cu:3", "src/y.cu:4"]
    assert got["a"].total_ms == pytest.approx(0.75)  # an untimed launch (-1) counts as a launch, not as time


@pytest.mark.slow
@needs_nvcc
def test_cuda_profile_instrumentation_builds(tmp_path: Path) -> None:
    from s2s.scan.tree import scan_tree

    app = SAMPLES / "heat3d_cuda"
    before = tree_hash(app)
    root, sites, notes, backend = instrument_all(app, tmp_path / "work", list(scan_tree(app).launches))
    assert backend == "cuda" and "src/main.cu:211" in sites and len(sites) >= 5
    main = (root / "src" / "main.cu").read_text()
    assert 's2s_prof::begin("stencil7", "src/main.cu:211", (cudaStream_t)(0));' in main
    proc = subprocess.run(["make", "-j2"], cwd=root, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert tree_hash(app) == before


UNBRACED_APP = """#include <cstdio>
#include <cuda_runtime.h>
__global__ void scale(float *x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2.0f; }
__global__ void shift(float *x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += 1.0f; }
int main(int argc, char **argv) {
  int n = 1 << 12, reps = argc > 1 ? 3 : 2;
  float *x;
  cudaMalloc(&x, n * sizeof(float));
  for (int r = 0; r < reps; r++)
    scale
      <<<n / 256, 256>>>(x, n);
  if (reps > 2)
    shift<<<n / 256, 256>>>(x, n);
  else
    scale<<<n / 256, 256>>>(x, n);
  while (reps-- > 0) shift<<<n / 256, 256>>>(x, n);
  cudaDeviceSynchronize();
  cudaFree(x);
  return 0;
}
"""


@pytest.mark.slow
@needs_nvcc
def test_cuda_profile_times_launches_that_are_unbraced_loop_and_branch_bodies(tmp_path: Path) -> None:
    """`for (...) k<<<g, b>>>(...);` (the launch the whole body of a for, an if, an else or a while) is timed inside
    braces of its own; it used to be left untimed, so an application launching only that way had no profile."""
    from s2s.scan.tree import scan_tree

    app = tmp_path / "app"
    app.mkdir()
    (app / "main.cu").write_text(UNBRACED_APP)
    (app / "Makefile").write_text("main: main.cu\n\tnvcc -arch=sm_90 -o main main.cu\n")
    root, sites, notes, backend = instrument_all(app, tmp_path / "work", list(scan_tree(app).launches))
    assert backend == "cuda" and sorted(sites) == ["main.cu:10", "main.cu:13", "main.cu:15", "main.cu:16"], notes
    assert not [n for n in notes if "not timed" in n]
    text = (root / "main.cu").read_text()
    assert text.count("s2s_prof::begin(") == 4 and text.count("{ s2s_prof::begin(") == 4
    proc = subprocess.run(["make"], cwd=root, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]


@pytest.mark.slow
@needs_nvcc
def test_cuda_profile_of_struct_sample_builds(tmp_path: Path) -> None:
    from s2s.scan.tree import scan_tree

    app = SAMPLES / "particles_struct_cuda"
    root, sites, _notes, _b = instrument_all(app, tmp_path / "work", list(scan_tree(app).launches))
    assert sites == ["src/particles.cu:73"]
    proc = subprocess.run(["make"], cwd=root, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_sequences_group_the_loops_launches_in_order(tmp_path: Path) -> None:
    """Launches from one loop nest of a host function form a sequence (kernels, launches, iterations, GPU time, the
    host's gaps, launch-bound when a launch holds under 20 us of GPU work); a launch outside any loop is in none, and
    the function's other loop is a sequence of its own."""
    from s2s.capture.profile import read_launches
    from s2s.capture.sequences import sequences
    from s2s.scan.tree import scan_tree

    app = tmp_path / "app"
    app.mkdir()
    (app / "main.cu").write_text(UNBRACED_APP)
    sites = list(scan_tree(app).launches)
    assert {s.line for s in sites if s.in_loop} == {10, 16}  # the for and the while; the if/else launches are not
    prof = tmp_path / "p.txt"
    lines = ["launch scale main.cu:10 1 0.004 100.0 110.0", "launch scale main.cu:10 2 0.006 130.0 140.0",
             "launch shift main.cu:15 1 0.5 150.0 700.0",  # the if's branch: in no loop
             "launch shift main.cu:16 1 0.003 710.0 716.0", "launch shift main.cu:16 2 0.003 726.0 731.0",
             "launch scale main.cu:10 3 0.004"]  # an older profile's line: no times, still a launch
    prof.write_text("\n".join(lines) + "\ngarbage line\n")
    got = read_launches(prof)
    assert [g.kernel for g in got] == ["scale", "scale", "shift", "shift", "shift", "scale"] and got[-1].begin_us is None
    scale, shift = sequences(got, sites)  # one per loop nest, the most GPU time first
    d = scale.as_dict()
    assert d["function"] == "main" and d["kernels"] == ["scale"] and d["launches"] == 3 and d["iterations"] == 3
    assert d["gpu_ms"] == pytest.approx(0.014) and d["launch_bound"] is True
    assert d["mean_gap_us"] == pytest.approx(20.0)  # 110->130; none to the last (no times)
    d = shift.as_dict()
    assert d["function"] == "main" and d["kernels"] == ["shift"] and d["launches"] == 2
    assert d["launches_per_kernel"] == {"shift": 2} and d["iterations"] == 2
    assert d["gpu_ms"] == pytest.approx(0.006) and d["mean_launch_us"] == pytest.approx(3.0) and d["launch_bound"] is True
    assert d["mean_gap_us"] == pytest.approx(10.0)  # 716->726: the if's launch between the loops is in neither
    assert scale.loop_line != shift.loop_line and scale.loop_id.startswith("main.cu:main@")


# -- before and after ---------------------------------------------------------------------------------------------
def _r(text: str, rc: int = 0) -> Run:
    return Run(rc, 0.1, text.encode())


def test_output_numbers_compared_and_timings_left_out() -> None:
    before = [_r("checksum 1.234567e+02\ntime 0.51 s\n"), _r("checksum 1.234567e+02\ntime 0.48 s\n")]
    same, why, n, ignored = same_output(before, [_r("checksum 1.2345671e+02\ntime 0.20 s\n")], 1e-5)
    assert same and n == 1 and ignored == 1 and "left out" in why  # the time varies between the original's runs
    same, why, *_ = same_output(before, [_r("checksum 1.3e+02\ntime 0.2 s\n")], 1e-5)
    assert not same and "number 1 of the output differs" in why
    same, why, *_ = same_output(before, [_r("checksum 1.234567e+02\ntime 0.2 s\n", rc=3)], 1e-5)
    assert not same and "exited with 3" in why
    same, why, *_ = same_output(before, [_r("checksum 1.234567e+02\n")], 1e-5)
    assert not same and "prints" in why


def test_output_check_matches_lines_and_leaves_out_what_varies_in_the_original() -> None:
    """Applications print a varying count of numbers (an iteration count, a timing line only some runs print) and
    one more line than before (a warning, a PASS): lines are matched by their text, what the original itself varies
    on is left out; a new line that reports a failure fails the check."""
    before = [_r("iterations 12\nresidual 1.5e-06 after 12 steps\ntime 0.5\nVerification PASS\n"),
              _r("iterations 12\nresidual 1.5e-06 after 12 steps\nwarm cache\ntime 0.4 0.1\nVerification PASS\n")]
    same, why, n, ignored = same_output(before, [_r("iterations 12\nresidual 1.5e-06 after 12 steps\ntime 0.2\n"
                                                    "note: fast path\nVerification PASS\n")], 1e-5)
    assert same, why
    assert n == 3 and ignored == 0  # iterations, residual, steps; "time" prints 1 or 2 numbers: only its presence counts
    same, why, *_ = same_output(before, [_r("iterations 12\nresidual 2.5e-06 after 12 steps\ntime 0.2\nVerification PASS\n")], 1e-5)
    assert not same and "number 2 of the output differs" in why and "residual" in why
    same, why, *_ = same_output(before, [_r("iterations 12\nresidual 1.5e-06 after 12 steps\ntime 0.2\nVerification FAIL\n")], 1e-5)
    assert not same and "Verification PASS" in why  # the PASS line is gone
    same, why, *_ = same_output(before, [_r("iterations 12\nresidual 1.5e-06 after 12 steps\ntime 0.2\nVerification PASS\n"
                                            "error: 3 mismatches\n")], 1e-5)
    assert not same and "mismatches" in why


def test_a_time_or_a_rate_the_application_prints_is_not_its_output() -> None:
    """Two held-out applications' winners were thrown away as "output changed" for their own timing lines, printed
    coarsely enough to be equal in the original's two runs ('Time in seconds = 0.02', 'Average kernel execution time
    (n_diff = 4): 0.001741 (s)'): such a line's numbers are left out (its presence still checked); a simulation's time
    step, an error count and a result stay compared."""
    from s2s.capture.appcheck import timing_line

    before = [_r("Time in seconds = 0.02\nAverage kernel execution time (n_diff = 4): 0.001741 (s)\nresult 3.5\n"
                 "Bandwidth 812.5 GB/s\ntime step 100: energy 1.25\n")] * 2
    same, why, n, ignored = same_output(before, [_r("Time in seconds = 0.11\nAverage kernel execution time (n_diff = 4): "
                                                    "0.001214 (s)\nresult 3.5\nBandwidth 901.0 GB/s\n"
                                                    "time step 100: energy 1.25\n")], 1e-5)
    assert same and n == 3 and ignored == 4, why
    same, why, *_ = same_output(before, [_r("Time in seconds = 0.02\nAverage kernel execution time (n_diff = 4): "
                                            "0.001741 (s)\nresult 3.5\nBandwidth 812.5 GB/s\ntime step 100: energy 1.5\n")], 1e-5)
    assert not same and "energy" in why
    assert timing_line(b"kernel took # ms") and timing_line(b"# GFLOPS") and timing_line(b"elapsed: #")
    assert not timing_line(b"timestep # of #") and not timing_line(b"checksum #") and not timing_line(b"# errors")


def _script_app(where: Path, value: str) -> Path:
    where.mkdir(parents=True)
    (where / "run.sh").write_text(f"echo result {value}\necho elapsed $(date +%N)\ntest -f built\n")
    return where


@pytest.mark.slow
def test_compare_apps_builds_runs_alternately_and_checks(tmp_path: Path) -> None:
    a, b = _script_app(tmp_path / "a", "1.5"), _script_app(tmp_path / "b", "1.5")
    got = compare_apps(a, b, "touch built", "sh run.sh", runs=2, log=lambda s: None)
    assert got.unchanged and len(got.before) == 2 and len(got.after) == 2 and got.ignored == 1
    c = _script_app(tmp_path / "c", "1.7")
    assert not compare_apps(a, c, "touch built", "sh run.sh", runs=2, log=lambda s: None).unchanged
    chk = compare_apps(a, c, "touch built", "sh run.sh", runs=1, check_cmd='test -d "$S2S_BEFORE_DIR" && '
                       'grep -q "result 1.7" "$S2S_AFTER_STDOUT"', log=lambda s: None)
    assert chk.unchanged and "exited 0" in chk.how
    bad = compare_apps(a, c, "touch built", "sh run.sh", runs=1, check_cmd='echo "number 1 differs: 1.5 before, 1.7 after"; exit 1',
                       log=lambda s: None)
    assert not bad.unchanged and bad.how.endswith("exited 1: number 1 differs: 1.5 before, 1.7 after")  # what the check said
    with pytest.raises(UserError, match="the build command 'false' failed"):
        compare_apps(a, c, "false", "sh run.sh", log=lambda s: None)
    # the compiler's own line, not make's last one (it said only "make: Leaving directory ...")
    failing = "echo 'ptxas fatal   : Unresolved extern function f' >&2; echo \"make: Leaving directory '$PWD'\"; exit 2"
    with pytest.raises(UserError, match="ptxas fatal   : Unresolved extern function f"):
        compare_apps(a, c, failing, "sh run.sh", log=lambda s: None)


# -- end to end on PoCL -----------------------------------------------------------------------------------------
@pytest.mark.slow
@needs_cc
def test_auto_capture_first_end_to_end_on_pocl(solver: Path, tmp_path: Path) -> None:
    pytest.importorskip("pyopencl")
    before = tree_hash(solver)
    work, diff = tmp_path / "work", tmp_path / "auto.diff"
    proc = run_cli("auto", str(solver), "--build-cmd", "make", "--run-cmd", "./ocl_solver -k kernels", "--kernels", "matmul",
                   "--max-evals", "3", "--rounds", "1", "--runs", "2", "--work", str(work), "--diff", str(diff))
    assert "Traceback" not in proc.stderr, proc.stderr
    assert tree_hash(solver) == before, "auto changed the user's tree"
    report = json.loads((work / "auto-report.json").read_text())
    prof = {k["kernel"]: k for k in report["profile"]}
    assert set(prof) == {"matvec", "matmul", "jacobi2d", "residual_norm"}
    assert prof["jacobi2d"]["launches"] == 200 and prof["jacobi2d"]["steady_launch"] > 2
    loops = {tuple(q["kernels"]): q for q in report["sequences"]}  # the solver's time loop: 200 jacobi2d launches
    assert loops[("jacobi2d",)]["launches"] == 200 and loops[("jacobi2d",)]["mean_gap_us"] is not None
    # an OpenCL loop is reported in sequence_results when it is launch-bound and holds a large share, never graphed
    assert all(r["status"].startswith("reported, not transformed") for r in report["sequence_results"]), report["sequence_results"]
    assert all(k["total_ms"] > 0 for k in report["profile"])
    (row,) = report["kernels"]
    assert row["kernel"] == "matmul" and row["launch"] == 1
    mep = Path(row["mep"])
    from s2s.mep.manifest import load

    m = load(mep)
    assert m.capture["sets"] == [1] and (mep / "capture" / "index.json").is_file()  # optimized on the captured data
    if row["status"] == "reintegrated":
        assert proc.returncode == (0 if report["app"]["output_unchanged"] else 1)
        assert "kernels/linalg.cl" in diff.read_text()
        app = report["app"]
        assert len(app["wall_before_s"]) == 2 and len(app["wall_after_s"]) == 2 and app["output_unchanged"] is True
        assert "printed numbers equal" in app["how"]
        assert "output unchanged: yes" in proc.stdout
        gpu = report["gpu"]  # the application's GPU time from a second instrumented run of the reintegrated copy
        assert gpu["ms_after"] is not None and 0 < gpu["ms_after"] and "before and after" in gpu["how"]
        purposes = [r["purpose"] for r in report["app_runs"]]
        assert purposes.count("profile") == 2 and purposes.count("profile_after") == 2 and purposes.count("capture") == 1
        for side in ("before", "after"):  # its build, its untimed warm-up run, the two timed runs
            assert [r["what"] for r in report["app_runs"] if r["purpose"] == side] == ["build", "warm-up run (not timed)",
                                                                                     "run", "run"]
        assert {"scan", "profile", "capture", "optimize", "compare", "profile_after", "total"} <= set(report["stages"])
    else:  # no winner above the noise on a busy machine: nothing reintegrated, nothing rerun
        assert proc.returncode == 1 and diff.read_text() == "" and report["app"]["remeasured"] is False
        assert "not re-measured: nothing was reintegrated" in report["app"]["why"] and "not re-measured" in proc.stdout
        assert report["gpu"]["ms_after"] == report["gpu"]["ms_before"]
    _long_kernel_summary_reads(work / "auto-report.json", proc.returncode, tmp_path / "summary")
    # a second auto on the same --work runs again (it ended in a FileExistsError traceback); --max-bytes reaches the
    # capture (auto's default is 8 GiB or a quarter of the free space: real hot launches touch 2-8 GiB)
    again = run_cli("auto", str(solver), "--build-cmd", "make", "--run-cmd", "./ocl_solver -k kernels", "--kernels", "matmul",
                    "--max-evals", "1", "--rounds", "1", "--runs", "2", "--work", str(work), "--diff", str(diff),
                    "--max-bytes", "1K")
    assert "Traceback" not in again.stderr and again.returncode in (0, 1), again.stderr[-2000:]
    second = json.loads((work / "auto-report.json").read_text())
    (row,) = second["kernels"]
    # over --max-bytes: optimized on generated data at the captured sizes, and said (it stopped the kernel before)
    assert row["replays_capture"] is False and "over the limit of 1024 bytes" in " ".join(row["notes"]), row
    assert tree_hash(solver) == before
    # the same tree and commands: the first run's profile ranked them, so no profile build or run this time
    assert not [r for r in second["app_runs"] if r["purpose"] == "profile"], second["app_runs"]
    assert any(n.startswith("profile: reused the one taken at") for n in second["notes"]) and "profile: reused" in again.stdout
    assert second["profile"] == report["profile"]
    from s2s.capture.profile import _reused, tree_stamp

    cmds = ("make", "./ocl_solver -k kernels")
    assert _reused(work / "profile", tree_stamp(solver, *cmds)) is not None
    assert _reused(work / "profile", tree_stamp(solver, "make -j2", cmds[1])) is None  # other commands: profiled again
    src = next(p for p in sorted(solver.rglob("*.cl")))
    os.utime(src, ns=(src.stat().st_atime_ns, src.stat().st_mtime_ns + 10**9))  # an edited tree: profiled again
    assert _reused(work / "profile", tree_stamp(solver, *cmds)) is None


def _long_kernel_summary_reads(report_path: Path, rc: int, out: Path) -> None:
    """bench/long_kernel_report.py (bench/gpu_long_kernel.sh's summary, issue 26's 10-minute run) on the report of the
    real run above: the tool's wall time per stage, every application run by purpose, each profiled kernel's time per
    launch and outcome (its other verdicts: tests/test_long_kernel_report.py)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("long_kernel_report", ROOT / "bench" / "long_kernel_report.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    report = json.loads(report_path.read_text())
    assert mod.main(["--report", str(report_path), "--wall-s", f"{report['stages']['total'] + 1:.3f}", "--rc", str(rc),
                     "--deadline", "500", "--commit", "c0ffee", "--command", "s2s auto ocl_solver ...", "--out", str(out)]) == 0
    s = json.loads((out / "long_kernel.json").read_text())
    assert s["finished_within_limit"] == "yes" and s["auto_rc"] == rc and s["gpu"] == "unknown"
    assert s["auto_wall_s"] >= report["stages"]["total"] > 0
    assert {"scan", "profile", "capture", "optimize", "total"} <= set(s["stages_s"])
    by = s["app_runs_by_purpose"]
    assert by["profile"]["count"] == 2 and by["capture"]["count"] == 1
    assert sum(r["count"] for r in by.values()) == len(report["app_runs"])
    assert by["profile"]["total_s"] == pytest.approx(sum(r["seconds"] for r in report["app_runs"] if r["purpose"] == "profile"), abs=0.01)
    assert "instrumented build" in by["capture"]["what"][0] and "matmul" in by["capture"]["what"][0]
    if report["reintegrated"]:
        assert s["unlisted_compare_s"] is not None and s["unlisted_compare_s"] >= 0
        assert by["before"]["count"] == 4 and by["after"]["count"] == 4 and by["profile_after"]["count"] == 2
    rows = {k["kernel"]: k for k in s["kernels"]}
    assert set(rows) == {"matvec", "matmul", "jacobi2d", "residual_norm"}
    assert rows["jacobi2d"]["launches"] == 200
    assert rows["jacobi2d"]["ms_per_launch"] == pytest.approx(rows["jacobi2d"]["total_ms"] / 200, abs=0.002)
    assert rows["matmul"]["status"] and rows["matmul"]["captured_launch"] >= 1 and isinstance(rows["matmul"]["evaluations"], int)
    assert all(rows[k]["status"] == "not among the top kernels" for k in set(rows) - {"matmul"})
    md = (out / "long_kernel.md").read_text()
    assert "Finished within 600 s: yes" in md and "| jacobi2d | 200 |" in md and "| capture | 1 |" in md


@pytest.mark.slow
@needs_cc
def test_auto_capture_first_bad_input_is_one_line(solver: Path, tmp_path: Path) -> None:
    proc = run_cli("auto", str(solver), "--build-cmd", "make", "--run-cmd", "true", "--work", str(tmp_path / "w"),
                   "--diff", str(tmp_path / "d.diff"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "launched none of the 4 timed launch sites" in proc.stderr
    inside = run_cli("auto", str(solver), "--build-cmd", "make", "--run-cmd", "true", "--work", str(solver / "w"))
    assert inside.returncode == 2 and "--work is inside the application's tree" in inside.stderr
    assert not (solver / "w").exists()
    limit = run_cli("auto", str(solver), "--build-cmd", "make", "--run-cmd", "true", "--max-bytes", "lots",
                    "--work", str(tmp_path / "w3"))
    assert limit.returncode == 2 and "--max-bytes 'lots'" in limit.stderr and "Traceback" not in limit.stderr
    lone = run_cli("auto", str(solver), "--check-cmd", "true", "--work", str(tmp_path / "w2"))  # it was silently ignored
    assert lone.returncode == 2 and "--check-cmd judges the application's output" in lone.stderr and not (tmp_path / "w2").exists()


@pytest.mark.slow
def test_static_auto_names_fill_in_and_the_capture_flags(tmp_path: Path) -> None:
    from s2s.auto import run_auto
    from s2s.optimize.loop import Options

    got = run_auto(str(SAMPLES / "particles_struct_cuda"), top=3, profile=None, work=tmp_path / "w",
                   diff_path=tmp_path / "d.diff", options=Options(max_evals=1), log=lambda s: None)
    (row,) = got.rows
    assert row[5] == "FILL-IN params.p.value: --build-cmd/--run-cmd would capture them from a run"
    assert not got.any_win and (tmp_path / "d.diff").read_text() == ""


# -- capture --compare-static -------------------------------------------------------------------------------------
@pytest.mark.slow
@needs_cc
def test_compare_static_on_pocl(solver: Path, tmp_path: Path) -> None:
    pytest.importorskip("pyopencl")
    out = tmp_path / "mep"
    proc = run_cli("capture", str(solver), "--kernel", "jacobi2d", "--build-cmd", "make", "--run-cmd",
                   "./ocl_solver -k kernels", "--launch", "7", "-o", str(out), "--compare-static")
    assert proc.returncode == 0, proc.stderr
    rep = json.loads((out / "capture" / "fidelity.json").read_text())
    values = {r["value"]: r for r in rep["values"]}
    assert {"launch.grid", "launch.block"} <= set(values) and any(k.endswith(".count") for k in values)
    assert rep["summary"]["equal"] + rep["summary"]["FILL-IN"] + rep["summary"]["wrong"] + rep["summary"]["unknown"] \
        == len(rep["values"])
    assert all(r["verdict"] in {"equal", "FILL-IN", "wrong", "unknown"} for r in rep["values"])
    assert values["launch.grid"]["captured"] == [256, 256, 1]  # PROB_N x PROB_N work items, from the real run
    assert "static inference against the capture:" in proc.stdout


@pytest.mark.slow
def test_compare_static_verdicts(tmp_path: Path) -> None:
    from dataclasses import replace

    from s2s.capture.fidelity import compare, summary_lines
    from s2s.extract.mep_writer import make_mep
    from s2s.mep.manifest import LaunchSpec

    _mep, static, _ex = make_mep(str(SAMPLES / "particles_struct_cuda"), "advance", str(tmp_path / "mep"))
    truth = replace(static, params=[replace(static.params[0], value={"n": 100000, "dt": 0.01})],
                    launch=LaunchSpec(grid=(782, 1, 1), block=(64, 1, 1), shared_mem=0),
                    capture={"from": "capture: launch 5 of 20 at src/particles.cu:73, run './particles'"})
    rep = compare(static, truth, SAMPLES / "particles_struct_cuda")
    verdicts = {r["value"]: r["verdict"] for r in rep["values"]}
    assert verdicts == {"params.p.value": "FILL-IN", "launch.grid": "equal", "launch.block": "wrong",
                        "launch.shared_mem": "equal"}
    assert rep["summary"] == {"equal": 2, "FILL-IN": 1, "wrong": 1, "unknown": 0}
    lines = summary_lines(rep)
    assert lines[0].startswith("static inference against the capture: 2 equal, 1 FILL-IN, 1 wrong")
    assert any("wrong   launch.block: static [128, 1, 1], captured [64, 1, 1]" in ln for ln in lines)


# -- instrumenting real code patterns -----------------------------------------------------------------------------
NAMESAKE = Path(__file__).resolve().parent / "fixtures" / "capture_namesake"


@pytest.mark.slow
@needs_nvcc
def test_kernel_with_a_host_namesake_instruments_and_compiles(tmp_path: Path) -> None:
    from s2s.capture.instrument import instrument
    from s2s.extract.mep_writer import make_mep
    from s2s.scan.tree import scan_tree

    _o, m, ex = make_mep(str(NAMESAKE), "app.cu:scale", str(tmp_path / "mep"))
    ins = instrument(NAMESAKE, tmp_path / "cap", m, list(ex.launches))
    text = (ins.root / "app.cu").read_text()
    assert "s2s_capture::before(static_cast<void (*)(float*, int, float)>(&scale), " in text
    assert text.index("s2s_capture_rt.h") < text.index("#include <cstdio>")  # before params.h: its T is no template's T
    root, sites, _notes, _b = instrument_all(NAMESAKE, tmp_path / "prof", list(scan_tree(NAMESAKE).launches))
    assert sites == ["app.cu:18"]
    for tree in (ins.root, root):
        proc = subprocess.run(["nvcc", "-std=c++17", "-arch=sm_90", "-c", "app.cu", "-o", "app.o"], cwd=tree,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.slow
@needs_cc
def test_auto_recaptures_the_first_launch_when_the_steady_one_writes_nothing_new(tmp_path: Path) -> None:
    """A benchmark launches the same kernel on the same data again and again: at the steady-state launch its outputs
    already hold what it writes (`y = 2x`, y read too, so inout), and the reference "writes nothing" on that captured
    set. auto then captures the kernel's first launch, which does write, instead of giving up (issue 26 item 3)."""
    pytest.importorskip("pyopencl")
    app = tmp_path / "app"
    shutil.copytree(Path(__file__).parent / "fixtures" / "ocl_repeat", app)
    before = tree_hash(app)
    work = tmp_path / "work"
    proc = run_cli("auto", str(app), "--build-cmd", "make", "--run-cmd", "./refresh", "--top", "1", "--max-evals", "2",
                   "--rounds", "1", "--runs", "2", "--work", str(work), "--diff", str(tmp_path / "auto.diff"))
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert tree_hash(app) == before
    report = json.loads((work / "auto-report.json").read_text())
    (row,) = report["kernels"]
    assert row["launches"] == 6 and row["launch"] == 1, row
    assert any(re.fullmatch(r"launch\(es\) [3-6] wrote nothing new on their captured data; launch 1 captured", n)
               for n in row["notes"])
    assert not row["status"].startswith("optimize failed"), row["status"]
    assert row["evaluations"] >= 1 and [r["purpose"] for r in report["app_runs"]].count("capture") == 2


def test_profile_runs_load_cuda_modules_eagerly(tmp_path: Path) -> None:
    """Lazy module loading (CUDA 12's default) can land between the events around a kernel's first launch; the
    profile's run loads modules up front, unless the user chose."""
    from s2s.capture.profile import profile_env

    env = profile_env({"PATH": "/bin"}, tmp_path / "p.txt")
    assert env["CUDA_MODULE_LOADING"] == "EAGER" and env["S2S_PROFILE_FILE"] == str(tmp_path / "p.txt")
    assert profile_env({"CUDA_MODULE_LOADING": "LAZY"}, tmp_path / "p.txt")["CUDA_MODULE_LOADING"] == "LAZY"


def test_after_the_first_launch_the_longest_is_captured_when_a_launch_writes_nothing_new() -> None:
    """A merge step over data a previous step left sorted writes nothing at its steady launch nor at its first: the
    longest launch (the most work) is tried next; each launch once, never the one captured first."""
    from types import SimpleNamespace

    from s2s.auto import _rewrite_launches

    k = SimpleNamespace(times=[(1, 0.2), (2, 0.9), (3, 0.4), (4, 0.9)])
    assert _rewrite_launches(k, 3) == [1, 2, None]
    assert _rewrite_launches(k, 1) == [2, None]
    assert _rewrite_launches(k, 2) == [1, None]
    assert _rewrite_launches(SimpleNamespace(times=[(1, 0.5)]), 1) == [None]
