"""One instrumented build and run captures several kernels (`s2s.capture.capture_kernels`, `s2s auto` with
--build-cmd/--run-cmd): for real on the CPU (PoCL), with tests/fixtures/ocl_three, a time loop of three kernels each
launched once a step on data that changes every step (launch N of each uses a = N)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import ROOT, needs_gpu, needs_nvcc, run_cli

from s2s.base.errors import UserError

pytest.importorskip("pyopencl")
np = pytest.importorskip("numpy")
pytestmark = pytest.mark.skipif(shutil.which("make") is None or shutil.which("gcc") is None, reason="make and gcc needed")

THREE = ROOT / "tests" / "fixtures" / "ocl_three"


def _app(tmp_path: Path) -> tuple[Path, str, str]:
    """A copy of the fixture and build and run commands that count themselves in tmp_path/builds, tmp_path/runs (the
    build through a script: extraction's dry run of a build command that names make would count too)."""
    app = tmp_path / "three"
    shutil.copytree(THREE, app)
    (tmp_path / "build.sh").write_text(f"make && echo b >> {tmp_path / 'builds'}\n")
    return app, f"sh {tmp_path / 'build.sh'}", f"./three && echo r >> {tmp_path / 'runs'}"


def _count(path: Path) -> int:
    return len(path.read_text().split()) if path.is_file() else 0


def _data(mep: Path, name: str, when: str) -> np.ndarray:  # type: ignore[name-defined]
    index = json.loads((mep / "capture" / "index.json").read_text())
    return np.load(mep / index["sets"][0]["params"][name][when])


def _replays(mep: Path) -> None:
    proc = run_cli("run", str(mep), "--no-time", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    res = json.loads(proc.stdout)
    assert res["verdict"] == "ok" and any("reproduces the application's outputs" in m for m in res["messages"]), res


@pytest.mark.slow
def test_one_build_and_one_run_capture_every_kernel_at_its_own_launch(tmp_path: Path) -> None:
    from s2s.capture import Captured, KernelCapture, capture_kernels
    from s2s.mep.manifest import load

    app, build, run = _app(tmp_path)
    jobs = [KernelCapture("scale", launch=3, output=str(tmp_path / "mep-scale")),
            KernelCapture("axpy", launch=2, output=str(tmp_path / "mep-axpy")),
            KernelCapture("smooth", launch=4, output=str(tmp_path / "mep-smooth"))]
    got = capture_kernels(app, jobs, build, run)
    assert _count(tmp_path / "builds") == 1 and _count(tmp_path / "runs") == 1  # one build, one run for all three
    assert got.build_s > 0 and got.run_s > 0
    assert all(isinstance(r, Captured) for r in got.results), got.results
    scale, axpy, smooth = (r for r in got.results if isinstance(r, Captured))
    for r, launch in ((scale, 3), (axpy, 2), (smooth, 4)):
        m = load(r.mep)
        assert m.capture["sets"] == [launch] and r.launches_seen == 4, (r.mep, m.capture)
        assert len(r.sites) == 1 and r.sites[0].startswith("main.c:")
    assert {p.name: p.value for p in load(scale.mep).params if p.role == "scalar"} == {"a": 3.0, "n": 1 << 14}
    x = _data(scale.mep, "x", "before")
    np.testing.assert_allclose(_data(scale.mep, "y", "after"), 3.0 * x, rtol=1e-6)  # launch 3: a = 3
    np.testing.assert_allclose(_data(axpy.mep, "y", "before"), 2.0 * x, rtol=1e-6)  # launch 2: y from scale's launch 2
    np.testing.assert_allclose(_data(axpy.mep, "z", "after"), 4.0 * x, rtol=1e-6)
    z = _data(smooth.mep, "in", "before")
    np.testing.assert_allclose(z, 8.0 * x, rtol=1e-6)  # launch 4: z = 4x + 4x
    out = _data(smooth.mep, "out", "after")
    np.testing.assert_allclose(out[1:-1], (z[:-2] + z[1:-1] + z[2:]) / 3.0, rtol=1e-5)
    for r in (scale, axpy, smooth):
        _replays(r.mep)


@pytest.mark.slow
def test_a_kernel_that_fails_does_not_fail_the_others(tmp_path: Path) -> None:
    from s2s.capture import Captured, KernelCapture, capture, capture_kernels

    app, build, run = _app(tmp_path)
    jobs = [KernelCapture("smooth", launch=9, output=str(tmp_path / "mep-smooth")),  # launched 4 times: nothing to collect
            KernelCapture("unused", output=str(tmp_path / "mep-unused")),  # never launched: no site to instrument
            KernelCapture("nosuch", output=str(tmp_path / "mep-nosuch")),  # not in the tree: extraction fails
            KernelCapture("scale", launch=2, output=str(tmp_path / "mep-scale"))]
    got = capture_kernels(app, jobs, build, run)
    assert _count(tmp_path / "builds") == 1 and _count(tmp_path / "runs") == 1
    smooth, unused, nosuch, scale = got.results
    assert isinstance(smooth, UserError) and "launched smooth 4 time(s); --launch 9 asks for a later launch" in smooth.message
    assert isinstance(unused, UserError) and "no launch site of unused" in unused.message
    assert isinstance(nosuch, UserError)
    assert not (tmp_path / "mep-smooth").exists() and not (tmp_path / "mep-unused").exists()
    assert isinstance(scale, Captured)
    np.testing.assert_allclose(_data(scale.mep, "y", "after"), 2.0 * _data(scale.mep, "x", "before"), rtol=1e-6)
    _replays(scale.mep)
    # the one-kernel capture is the same path and still raises its kernel's error
    with pytest.raises(UserError, match="asks for a later launch"):
        capture(app, "smooth", build, run, launch=9, output=str(tmp_path / "mep-smooth"))


@pytest.mark.slow
def test_auto_captures_all_top_kernels_in_one_instrumented_run(tmp_path: Path) -> None:
    app, build, run = _app(tmp_path)
    work = tmp_path / "work"
    proc = run_cli("auto", str(app), "--build-cmd", build, "--run-cmd", run, "--top", "3", "--max-evals", "1",
                   "--rounds", "1", "--runs", "2", "--no-sequences", "--work", str(work), "--diff", str(tmp_path / "auto.diff"))
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    report = json.loads((work / "auto-report.json").read_text())
    rows = {r["kernel"]: r for r in report["kernels"]}
    assert set(rows) == {"scale", "axpy", "smooth"}
    captures = [r for r in report["app_runs"] if r["purpose"] == "capture"]
    assert len(captures) == 1 and sorted(captures[0]["kernels"]) == ["axpy", "scale", "smooth"], report["app_runs"]
    assert all(f"{k}, launch {rows[k]['launch']}" in captures[0]["what"] for k in rows)
    assert captures[0]["build_s"] > 0 and captures[0]["run_s"] > 0
    from s2s.mep.manifest import load

    for name, row in rows.items():
        assert not row["status"].startswith("capture failed"), row
        assert load(Path(row["mep"])).capture["sets"] == [row["launch"]], name
    # every build and run of the application is in app_runs: the profile's, the capture's (one entry for both); when a
    # winner was kept, the compare's builds, warm-up and timed runs and the reintegrated copy's instrumented ones (after
    # "slower in the application", a second compare's too)
    purposes = [r["purpose"] for r in report["app_runs"]]
    whats = [r["what"] for r in report["app_runs"]]
    assert _count(tmp_path / "builds") == sum("build" in w for w in whats), report["app_runs"]
    assert _count(tmp_path / "runs") == sum("run" in w for w in whats), report["app_runs"]
    assert purposes.count("before") == purposes.count("after") and purposes.count("before") % 4 == 0, purposes


# -- CUDA: the shared instrumented copy builds with nvcc here; the capture itself runs on a GPU only (-m gpu) -------
HEAT = ROOT / "samples" / "heat3d_cuda"


@pytest.mark.slow
@needs_nvcc
def test_cuda_kernels_share_one_instrumented_copy_that_builds(tmp_path: Path) -> None:
    import subprocess

    from s2s.capture.instrument import instrument_kernels
    from s2s.extract.mep_writer import make_mep

    made = [make_mep(str(HEAT), k, str(tmp_path / f"mep-{k}")) for k in ("matvec_rows", "stencil7", "reduce_energy")]
    ins = instrument_kernels(HEAT, tmp_path / "work", [(m, list(ex.launches)) for _out, m, ex in made])
    assert not ins.errors and ins.sites_of == {0: ["src/main.cu:89"], 1: ["src/main.cu:211"], 2: ["src/main.cu:226"]}
    main = (ins.root / "src/main.cu").read_text()
    assert main.count("s2s_capture_rt.h") == 1  # one header for the three kernels
    assert "s2s_capture::before(&linalg::matvec_rows, \"src/main.cu:89\"" in main  # slot 0: the runtime's default
    assert "s2s_capture::before<1>(&stencil7, \"src/main.cu:211\"" in main and "s2s_capture::after<1>(\"src/main.cu:211\");" in main
    assert "s2s_capture::before<2>(&reduce_energy," in main and "s2s_capture::after<2>(" in main
    assert "s2s_reg_1_0 = s2s_capture::register_symbol<1>(\"coeffs\"" in (ins.root / "src/kernels_stencil.cu").read_text()
    header = ins.header.read_text()
    assert 'template <> struct Kernel<2> {\n    static const char* name() { return "reduce_energy"; }' in header
    proc = subprocess.run(["make", "-j2"], cwd=ins.root, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (ins.root / "heat3d").is_file()


@pytest.mark.slow
@pytest.mark.gpu
@needs_gpu
@needs_nvcc
def test_cuda_capture_of_three_kernels_in_one_run_replays_on_gpu(tmp_path: Path) -> None:
    from s2s.capture import Captured, KernelCapture, capture_kernels
    from s2s.mep.manifest import load

    app = tmp_path / "heat3d"
    shutil.copytree(HEAT, app, ignore=shutil.ignore_patterns("build", "heat3d"))
    (tmp_path / "build.sh").write_text(f"make -j8 && echo b >> {tmp_path / 'builds'}\n")
    jobs = [KernelCapture("stencil7", launch=3, output=str(tmp_path / "mep-stencil7")),
            KernelCapture("matvec_rows", output=str(tmp_path / "mep-matvec")),
            KernelCapture("reduce_energy", launch=50, output=str(tmp_path / "mep-energy"))]  # launched once: fails alone
    got = capture_kernels(app, jobs, f"sh {tmp_path / 'build.sh'}", f"./heat3d && echo r >> {tmp_path / 'runs'}")
    assert _count(tmp_path / "builds") == 1 and _count(tmp_path / "runs") == 1
    stencil, matvec, energy = got.results
    assert isinstance(energy, UserError) and "asks for a later launch" in energy.message
    for r, launch in ((stencil, 3), (matvec, 1)):
        assert isinstance(r, Captured), r
        assert load(r.mep).capture["sets"] == [launch]
        _replays(r.mep)


@pytest.mark.slow
def test_one_opencl_site_that_launches_several_kernels_records_each_of_them(tmp_path: Path) -> None:
    """Launches through a helper (`enqueue(queue, k)`): one clEnqueueNDRangeKernel site, instrumented once, serves
    every kernel; the runtime tells them apart by the kernel object's name and counts each on its own."""
    from s2s.capture import Captured, KernelCapture, capture_kernels

    app, build, run = _app(tmp_path)
    main = (app / "main.c").read_text()
    helper = ("static cl_int enqueue(cl_command_queue q, cl_kernel k, const size_t *global) {\n"
              "    cl_int e = clEnqueueNDRangeKernel(q, k, 1, NULL, global, NULL, 0, NULL, NULL);\n    return e;\n}\n\n"
              "int main(void) {")
    main = main.replace("int main(void) {", helper, 1)
    for k in ("kscale", "kaxpy", "ksmooth"):
        main = main.replace(f"clEnqueueNDRangeKernel(queue, {k}, 1, NULL, &global, NULL, 0, NULL, NULL)", f"enqueue(queue, {k}, &global)")
    assert main.count("clEnqueueNDRangeKernel") == 1
    (app / "main.c").write_text(main)
    got = capture_kernels(app, [KernelCapture("smooth", launch=3, output=str(tmp_path / "mep-smooth")),
                                KernelCapture("scale", launch=2, output=str(tmp_path / "mep-scale"))], build, run)
    assert _count(tmp_path / "builds") == 1 and _count(tmp_path / "runs") == 1
    smooth, scale = got.results
    assert isinstance(smooth, Captured) and isinstance(scale, Captured), got.results
    assert smooth.sites == scale.sites and len(smooth.sites) == 1  # the helper's one site
    assert smooth.launches_seen == 4 and scale.launches_seen == 4
    x = _data(scale.mep, "x", "before")
    np.testing.assert_allclose(_data(scale.mep, "y", "after"), 2.0 * x, rtol=1e-6)
    np.testing.assert_allclose(_data(smooth.mep, "in", "before"), 6.0 * x, rtol=1e-6)  # launch 3: z = 3x + 3x
