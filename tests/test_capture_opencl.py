"""`s2s capture` on OpenCL applications, for real on the CPU (PoCL): record a launch of a kernel from a
run of the application, replay it in the MEP, and check that the reference reproduces the outputs."""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

from s2s.mep.manifest import load

pytest.importorskip("pyopencl")
np = pytest.importorskip("numpy")

GATHER = ROOT / "tests" / "fixtures" / "capture_gather"
needs_cc = pytest.mark.skipif(shutil.which("make") is None or shutil.which("cc") is None and shutil.which("gcc") is None,
                              reason="make and a C compiler are needed")
pytestmark = needs_cc


def tree_hash(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            h.update(p.relative_to(root).as_posix().encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


@pytest.fixture(scope="module")
def gather(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("app") / "gather"
    shutil.copytree(GATHER, dest, ignore=shutil.ignore_patterns("gather_app"))
    return dest


def run_json(mep: Path, *extra: str) -> tuple[int, dict, str]:  # type: ignore[type-arg]
    proc = run_cli("run", str(mep), "--no-time", "--json", *extra)
    return proc.returncode, (json.loads(proc.stdout) if proc.stdout.strip() else {}), proc.stderr


@pytest.fixture(scope="module")
def matvec_mep(solver: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    before = tree_hash(solver)
    out = tmp_path_factory.mktemp("meps") / "matvec"
    proc = run_cli("capture", str(solver), "--kernel", "matvec", "--build-cmd", "make", "--run-cmd", "./ocl_solver -k kernels",
                   "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert tree_hash(solver) == before, "the capture changed the original tree"
    assert not (solver / "ocl_solver").exists() and not (solver / "build").exists()
    return out


@pytest.mark.slow
def test_capture_writes_data_and_manifest(matvec_mep: Path) -> None:
    from s2s.mep.manifest import load

    m = load(matvec_mep)
    assert m.capture["sets"] == [1] and m.capture["from"].startswith("capture: launch 1 of 1 at src/main.c:")
    assert m.launch.grid == (256, 1, 1) and m.launch.block == (0, 0, 0) and m.launch.source.startswith("capture")
    counts = {p.name: p.count for p in m.params if p.role != "scalar"}
    assert counts == {"A": 65536, "x": 256, "y": 256}
    assert next(p for p in m.params if p.name == "n").value == 256
    index = json.loads((matvec_mep / "capture" / "index.json").read_text())
    info = index["sets"][0]["params"]["A"]
    a = np.load(matvec_mep / info["before"])
    assert a.dtype == np.float32 and a.shape == (65536,)
    x = np.load(matvec_mep / index["sets"][0]["params"]["x"]["before"])
    y = np.load(matvec_mep / index["sets"][0]["params"]["y"]["after"])
    np.testing.assert_allclose(y, a.reshape(256, 256).astype(np.float64) @ x, rtol=1e-4, atol=1e-4)  # the real run's y = A x
    assert "sized_by" in info and info["sized_by"] == "clGetMemObjectInfo"


@pytest.mark.slow
def test_replay_reproduces_the_real_run(matvec_mep: Path) -> None:
    rc, res, err = run_json(matvec_mep)
    assert rc == 0, err
    assert res["verdict"] == "ok" and res["input_sets"] == 5  # the captured set, three random ones, one at a smaller size
    assert any("reproduces the application's outputs" in msg for msg in res["messages"])


@pytest.mark.slow
def test_a_mep_that_does_not_reproduce_the_run_stops(matvec_mep: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    shutil.copytree(matvec_mep, bad)
    k = bad / "kernel.cl"
    k.write_text(k.read_text().replace("y[i] = sum;", "y[i] = 1.5f * sum;"))
    rc, _res, err = run_json(bad)
    assert rc == 2
    assert "does not reproduce the outputs the application produced" in err and "params.y" in err
    assert len(err.strip().splitlines()) == 1
    proc = run_cli("optimize", str(bad), "--rounds", "1", "--max-evals", "1")
    assert proc.returncode == 2 and "does not reproduce" in proc.stderr
    assert not (bad / "variants").exists()  # stopped before anything was proposed


@pytest.mark.slow
def test_nth_launch_of_a_kernel_in_a_loop(solver: Path, tmp_path: Path) -> None:
    out = tmp_path / "jacobi"
    proc = run_cli("capture", str(solver), "--kernel", "jacobi2d", "--build-cmd", "make", "--run-cmd", "make run",
                   "--launch", "3", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    index = json.loads((out / "capture" / "index.json").read_text())
    assert index["launches_seen"] == 200 and index["sets"][0]["launch"] == 3
    u0 = np.load(out / index["sets"][0]["params"]["u"]["before"]).reshape(256, 256)
    assert u0[0].max() == 1.0 and 0 < np.count_nonzero(u0[1:]) < u0[1:].size  # two sweeps in: heat entered from the top
    rc, res, err = run_json(out)
    assert rc == 0 and res["verdict"] == "ok", err


# -- a variant right on random data, wrong on the real data -----------------------------------------
WRONG_ON_PADDING = "out[i] = src[j < 0 ? 0 : j];"


@pytest.mark.slow
def test_variant_wrong_only_on_captured_data(gather: Path, tmp_path: Path) -> None:
    cap, rnd = tmp_path / "captured", tmp_path / "random"
    proc = run_cli("capture", str(gather), "--kernel", "gather", "--build-cmd", "make", "--run-cmd", "./gather_app", "-o", str(cap))
    assert proc.returncode == 0, proc.stderr
    assert run_cli("extract", str(gather), "--kernel", "gather", "-o", str(rnd)).returncode == 0
    for mep in (cap, rnd):
        vdir = mep / "variants" / "clamp"
        vdir.mkdir(parents=True)
        src = (mep / "kernel.cl").read_text()
        assert "out[i] = j < 0 ? 0.0f : src[j];" in src
        (vdir / "kernel.cl").write_text(src.replace("out[i] = j < 0 ? 0.0f : src[j];", WRONG_ON_PADDING))
    rc, res, err = run_json(rnd, "--variant", "clamp")
    assert rc == 0 and res["verdict"] == "ok", err  # random indices are never negative
    rc, res, err = run_json(cap, "--variant", "clamp")
    assert rc == 1 and res["verdict"] == "wrong-output", err
    out = next(o for o in res["outputs"] if o["name"] == "out")
    assert not out["ok"] and out["message"].startswith("captured input set (launch 1")
    idx = np.load(cap / "capture" / "launch1" / "idx.before.npy")
    assert (idx < 0).sum() == 147  # the padding the real run has


@pytest.mark.slow
def test_first_n_launches_are_all_replayed(gather: Path, tmp_path: Path) -> None:
    out = tmp_path / "first"
    proc = run_cli("capture", str(gather), "--kernel", "gather", "--build-cmd", "make", "--run-cmd", "./gather_app -r 3",
                   "--first", "2", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "launch(es) 1, 2 (of 3 launches" in " ".join(proc.stdout.split())
    rc, res, err = run_json(out)
    assert rc == 0 and res["input_sets"] == 6, err  # the two captured sets, three random ones, one at a smaller size


# -- failures: one line, exit 2, the original tree untouched, no MEP written --------------------------
@pytest.mark.parametrize("args, message", [
    (["--build-cmd", "make no-such-target", "--run-cmd", "./gather_app"], "the build command 'make no-such-target' failed"),
    (["--build-cmd", "make", "--run-cmd", "./gather_app --fail"], "the run command './gather_app --fail' failed with exit code 3"),
    (["--build-cmd", "make", "--run-cmd", "./gather_app --skip"], "gather was never launched by the run command"),
    (["--build-cmd", "make", "--run-cmd", "./gather_app", "--launch", "7"], "launched gather 2 time(s); --launch 7"),
])
@pytest.mark.slow
def test_failures(gather: Path, tmp_path: Path, args: list[str], message: str) -> None:
    before = tree_hash(gather)
    out = tmp_path / "mep"
    proc = run_cli("capture", str(gather), "--kernel", "gather", *args, "-o", str(out))
    assert proc.returncode == 2, proc.stderr
    err = proc.stderr.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error:") and message in err, err
    assert tree_hash(gather) == before and not (gather / "gather_app").exists()
    assert not out.exists()


@pytest.mark.slow
def test_over_the_limit_keeps_sizes_and_scalars(gather: Path, tmp_path: Path) -> None:
    """A launch over --max-bytes: the MEP gets its sizes, scalars and launch configuration, generated input sets and a
    note saying so (it was a failure: nothing for `auto` to optimize when a hot launch touches more than the limit)."""
    before = tree_hash(gather)
    out = tmp_path / "mep"
    proc = run_cli("capture", str(gather), "--kernel", "gather", "--build-cmd", "make", "--run-cmd", "./gather_app",
                   "--max-bytes", "4K", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    said = " ".join(proc.stdout.split())
    assert "over the limit of 4096 bytes" in said and "generated input sets" in said, said
    m = load(out)
    assert not m.capture and not m.unfilled() and not (out / "capture").exists()
    assert all("captured size" in p.count_expr for p in m.params if p.role != "scalar" and p.count)
    assert tree_hash(gather) == before
    rc, res, err = run_json(out)
    assert rc == 0 and res["verdict"] == "ok", err


@pytest.mark.slow
def test_timed_on_the_captured_data(matvec_mep: Path) -> None:
    # run time can depend on the data (a sparse pattern, a histogram's values): the timing uses the real run's inputs
    proc = run_cli("run", str(matvec_mep), "--json")
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    assert res["verdict"] == "ok" and res["reference"]["median_us"] > 0
    assert "timed on the captured input set (launch 1 of the application" in " ".join(res["messages"])


@pytest.mark.slow
def test_a_time_only_run_times_on_the_captured_data(matvec_mep: Path) -> None:
    # no checks loaded the captured sets: the timing reads the first one itself
    from s2s.mep.evaluate import evaluate
    m = evaluate(matvec_mep, None, check=False)
    assert m.verdict == "ok", m.messages
    assert "timed on the captured input set (launch 1 of the application" in " ".join(m.messages)
    assert "outputs were not checked (--time-only)" in m.messages


@pytest.mark.slow
def test_a_kernel_that_writes_nothing_on_random_inputs_is_judged_on_its_captured_data(tmp_path: Path) -> None:
    """tests/fixtures/ocl_select writes only where a key carries a marker the application set (a neighbour or cell
    search writes only where its data say so): on the generated input sets it writes nothing. That stopped the MEP
    ("the reference writes nothing on input set 1") although the captured set, where it writes, can tell a variant
    from it; the generated sets are now said, the captured one decides. Without captured data it still stops."""
    app = tmp_path / "app"
    shutil.copytree(ROOT / "tests" / "fixtures" / "ocl_select", app)
    out = tmp_path / "mep"
    proc = run_cli("capture", str(app), "--kernel", "pick", "--build-cmd", "make", "--run-cmd", "./select", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    rc, res, err = run_json(out)
    assert rc == 0 and res["verdict"] == "ok", err
    assert any("reproduces the application's outputs" in msg for msg in res["messages"])
    from dataclasses import replace

    from s2s.mep.manifest import load, save

    # the generated sets reorder the application's keys (fill = "shuffle", markers included): they write too; keys
    # drawn from a range, as before captured integers were reordered, carry no marker and write nothing
    assert next(p for p in load(out).params if p.name == "key").fill == "shuffle"
    assert not any("writes nothing on these generated inputs" in msg for msg in res["messages"])
    save(replace(load(out), params=[replace(p, fill="uniform", low=0.0, high=16.0) if p.name == "key" else p
                                    for p in load(out).params]), out)
    rc, res, err = run_json(out)
    assert rc == 0 and res["verdict"] == "ok", err
    assert any("writes nothing on these generated inputs" in msg for msg in res["messages"])
    save(replace(load(out), capture={}), out)  # the same MEP without the application's data
    shutil.rmtree(out / "capture")
    rc, _res, err = run_json(out)
    assert rc != 0 and "the reference writes nothing on input set 1" in err + json.dumps(_res)


@pytest.mark.slow
def test_the_bounds_probe_runs_on_the_captured_data(tmp_path: Path) -> None:
    """tests/fixtures/ocl_cells sums each cell's particles through its [start, end) range (empty cells hold a sentinel):
    on random starts and ends the kernel reads past its 8 particles, on the application's data it never does. The
    probe ran on random inputs and stopped the MEP ("params.x.count = 8: the reference reads past the end"); it now
    runs on the first captured set."""
    app = tmp_path / "app"
    shutil.copytree(ROOT / "tests" / "fixtures" / "ocl_cells", app)
    out = tmp_path / "mep"
    proc = run_cli("capture", str(app), "--kernel", "cell_sums", "--build-cmd", "make", "--run-cmd", "./cells", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    rc, res, err = run_json(out)
    assert rc == 0 and res["verdict"] == "ok", err
    assert any(m.startswith("bounds probe: the reference reads and writes within every buffer") for m in res["messages"])


def test_captured_counts_are_watched_as_far_as_the_largest_buffer() -> None:
    """A 1-D kernel of captured 64 KiB vectors with a scalar n = 16384 had 256 MiB watched after each buffer (the n*n
    rule, for a matrix sized by one scalar whose count a person or the static extraction gave): on PoCL that was most
    of the reference's check. A captured count is the buffer's allocation in the application."""
    from s2s.mep.backends.opencl_types import PROBE_TAIL_MAX, probe_tail

    n = {"name": "n", "role": "scalar", "elem": "int", "value": 16384}
    x = {"name": "x", "role": "in", "elem": "float", "count": 16384}
    assert probe_tail([{**x, "count_expr": "n"}, n], 65536) == PROBE_TAIL_MAX  # n*n*8 bytes
    captured = [{**x, "count_expr": "65536 bytes (captured)"}, n]
    assert probe_tail(captured, 65536) == 1 << 20 and probe_tail(captured, 4 << 20) == 4 << 20
    assert probe_tail([*captured, {**x, "name": "y", "role": "out", "count_expr": "n"}], 65536) == PROBE_TAIL_MAX
    local = {"name": "tile", "role": "in", "space": "local", "elem": "float", "count": 256, "count_expr": "256"}
    assert probe_tail([*captured, local], 65536) == 1 << 20  # host-sized __local memory is no buffer the probe watches
