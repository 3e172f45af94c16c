"""`s2s capture --into` an MEP that was already optimized on generated data, `s2s verify` its variants on the
application's own data, and reintegration that takes only variants that passed there; for real on PoCL.

The MEP of ocl_solver's matvec is extracted at the default size (n = 256); the application is then run with
`-n 250`. A variant unrolled by four without a remainder loop is right for every n that four divides, so it
passes on the generated data and fails on the captured data.
"""
from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
from conftest import run_cli

from s2s.mep.history import History
from s2s.mep.manifest import load

pytest.importorskip("pyopencl")
pytestmark = pytest.mark.skipif(shutil.which("make") is None or shutil.which("cc") is None and shutil.which("gcc") is None,
                                reason="make and a C compiler are needed")

RUN = "./ocl_solver -k kernels -n 250 -i 2"
LOOP = """    for (int k = 0; k < n; ++k) {
        sum += A[IDX(i, k, n)] * x[k];
    }"""
NO_REMAINDER = """    for (int k = 0; k + 3 < n; k += 4) {
        sum += A[IDX(i, k, n)] * x[k] + A[IDX(i, k + 1, n)] * x[k + 1]
             + A[IDX(i, k + 2, n)] * x[k + 2] + A[IDX(i, k + 3, n)] * x[k + 3];
    }"""
WITH_REMAINDER = """    int k = 0;
    for (; k + 1 < n; k += 2) {
        sum += A[IDX(i, k, n)] * x[k] + A[IDX(i, k + 1, n)] * x[k + 1];
    }
    if (k < n) sum += A[IDX(i, k, n)] * x[k];"""
PLANTED = {"vunroll4": (NO_REMAINDER, 2.0), "vunroll2": (WITH_REMAINDER, 1.5), "vsame": (LOOP, 1.2)}


def _files(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def plant(mep: Path) -> None:
    """Variants and history rows as `s2s optimize` leaves them: verified on the generated data, with speedups."""
    src = (mep / "kernel.cl").read_text()
    assert LOOP in src
    hist = History(mep / "history.sqlite")
    for vid, (body, speedup) in PLANTED.items():
        vdir = mep / "variants" / vid
        vdir.mkdir(parents=True)
        (vdir / "kernel.cl").write_text(src.replace(LOOP, body))
        hist.add(vid, 1, f"test:{vid}", None, hashlib.sha256(body.encode()).hexdigest(), None)
        hist.finish(vid, "ok", {"speedup": speedup, "reference": {"median_us": 12.0}, "variant": {"median_us": 12.0 / speedup}})
    hist.close()


@pytest.fixture(scope="module")
def optimized(solver: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from s2s.extract.mep_writer import make_mep

    mep = tmp_path_factory.mktemp("meps") / "matvec"
    make_mep(str(solver), "matvec", str(mep))
    plant(mep)
    for vid in PLANTED:  # right on the generated data (n = 256)
        proc = run_cli("run", str(mep), "--variant", vid, "--no-time")
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return mep


@pytest.fixture(scope="module")
def attached(optimized: Path, solver: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    mep = tmp_path_factory.mktemp("into") / "matvec"
    shutil.copytree(optimized, mep)
    kept = {k: v for k, v in _files(mep).items() if k.startswith("variants/") or k == "kernel.cl"}
    tree = _files(solver)
    proc = run_cli("capture", str(solver), "--kernel", "matvec", "--build-cmd", "make", "--run-cmd", RUN, "--into", str(mep))
    assert proc.returncode == 0, proc.stderr
    assert "attached to MEP" in proc.stdout and "s2s verify" in proc.stdout
    assert _files(solver) == tree, "the capture changed the original tree"
    return mep, kept


@pytest.fixture(scope="module")
def verified(attached: tuple[Path, dict[str, str]], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    mep = tmp_path_factory.mktemp("verified") / "matvec"
    shutil.copytree(attached[0], mep)
    proc = run_cli("verify", str(mep))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return mep, " ".join(proc.stdout.split())


@pytest.mark.slow
def test_into_keeps_history_and_variants_and_takes_the_captured_sizes(attached: tuple[Path, dict[str, str]]) -> None:
    mep, kept = attached
    assert {k: v for k, v in _files(mep).items() if k.startswith("variants/") or k == "kernel.cl"} == kept
    hist = History(mep / "history.sqlite")
    rows = {r.id: r for r in hist.rows()}
    hist.close()
    assert set(rows) == set(PLANTED) and all(r.status == "ok" and r.captured is None for r in rows.values())
    m = load(mep)
    assert m.capture["sets"] == [1] and RUN in m.capture["from"] and len(m.capture["digest"]) == 16
    assert {p.name: p.count for p in m.params if p.role != "scalar"} == {"A": 62500, "x": 250, "y": 250}
    assert next(p for p in m.params if p.name == "n").value == 250 and m.launch.grid == (250, 1, 1)
    assert (mep / "capture" / "index.json").is_file() and (mep / "capture.log").is_file()
    assert not [p for p in mep.iterdir() if p.name.startswith(".capture-")]  # no staging left behind


def test_reintegrate_waits_for_verify(attached: tuple[Path, dict[str, str]]) -> None:
    proc = run_cli("reintegrate", str(attached[0]))
    err = proc.stderr.strip()
    assert proc.returncode == 2 and len(err.splitlines()) == 1, err
    assert "vunroll4 has not been checked on the application's data" in err and "s2s verify" in err


@pytest.mark.slow
def test_verify_fails_the_variant_wrong_on_captured_data(verified: tuple[Path, str]) -> None:
    mep, out = verified
    assert "vunroll4 2.00x test:vunroll4: FAILED (wrong-output): y: captured input set (launch 1" in out
    assert "vunroll2 1.50x test:vunroll2: ok" in out and "vsame 1.20x test:vsame: ok" in out
    assert "2 passed, 1 failed" in out and "best: vunroll2 1.50x" in out
    hist = History(mep / "history.sqlite")
    rows = {r.id: r for r in hist.rows()}
    best = hist.best()
    hist.close()
    assert rows["vunroll4"].status == "ok" and rows["vunroll4"].captured == "wrong-output"  # ok on generated data
    assert rows["vunroll4"].failed_on_capture and "captured input set" in rows["vunroll4"].captured_result["message"]  # type: ignore[index]
    assert rows["vunroll2"].captured == "ok" and rows["vunroll2"].captured_key == load(mep).capture["digest"]
    assert best is not None and best.id == "vunroll2"
    assert (mep / "variants" / "BEST").read_text().strip() == "vunroll2"


def test_reintegrate_refuses_the_failed_variant_and_takes_the_next(verified: tuple[Path, str]) -> None:
    mep, _ = verified
    proc = run_cli("reintegrate", str(mep), "--variant", "vunroll4")
    err = proc.stderr.strip()
    assert proc.returncode == 2 and len(err.splitlines()) == 1, err
    assert "variant vunroll4 failed on the application's captured data (wrong-output" in err
    proc = run_cli("reintegrate", str(mep))
    assert proc.returncode == 0, proc.stderr
    assert "variant vunroll2" in proc.stderr and "+    if (k < n) sum += A[IDX(i, k, n)] * x[k];" in proc.stdout


@pytest.mark.slow
def test_report_shows_the_checks_on_captured_data(verified: tuple[Path, str]) -> None:
    mep, _ = verified
    proc = run_cli("report", str(mep))
    assert proc.returncode == 0, proc.stderr
    md = (mep / "report.md").read_text()
    assert "**Winner:** `vunroll2`" in md and "and on the application's captured data" in md
    assert "3 variant(s), 2 passed, 1 failed" in md and "- `vunroll4` (2.00x on generated data) failed there" in md
    assert "| captured data |" in md and "| vunroll4 | `test:vunroll4` | ok | 2.00x |" in md
    assert "| 0 | FAILED (wrong-output) |" in md and "| 0 | ok |" in md
    assert "FAILED (wrong-output)" in (mep / "report.html").read_text()


@pytest.mark.slow
def test_verify_top_stops_early_and_a_second_run_resumes(attached: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    mep = tmp_path / "matvec"
    shutil.copytree(attached[0], mep)
    proc = run_cli("verify", str(mep), "--top", "1")
    out = " ".join(proc.stdout.split())
    assert proc.returncode == 0 and "1 passed, 1 failed" in out and "vsame" not in out, out
    proc = run_cli("verify", str(mep))
    out = " ".join(proc.stdout.split())
    assert proc.returncode == 0, out
    assert "vunroll4 2.00x test:vunroll4: FAILED (wrong-output)" in out and "(checked earlier)" in out
    assert "vunroll2 1.50x test:vunroll2: ok (checked earlier)" in out and "vsame 1.20x test:vsame: ok" in out
    assert "vsame 1.20x test:vsame: ok (checked earlier)" not in out


@pytest.mark.slow
def test_optimize_on_the_attached_mep_records_its_check(attached: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    from s2s.optimize.loop import Options, optimize

    mep = tmp_path / "matvec"
    shutil.copytree(attached[0], mep)
    optimize(mep, Options(max_evals=len(PLANTED) + 1, rounds=1, use_patterns=False, jobs=1))
    hist = History(mep / "history.sqlite")
    fresh = [r for r in hist.rows() if r.id not in PLANTED]
    hist.close()
    assert len(fresh) == 1 and fresh[0].status == "ok", fresh
    assert fresh[0].captured == "ok" and fresh[0].captured_key == load(mep).capture["digest"]


def test_verify_needs_a_capture(optimized: Path) -> None:
    proc = run_cli("verify", str(optimized))
    err = proc.stderr.strip()
    assert proc.returncode == 2 and len(err.splitlines()) == 1 and "holds no captured data" in err and "--into" in err


# -- refused: one line, exit 2, the MEP untouched ----------------------------------------------------
def test_into_the_mep_of_another_kernel_is_refused(optimized: Path, solver: Path) -> None:
    before = _files(optimized)
    proc = run_cli("capture", str(solver), "--kernel", "matmul", "--build-cmd", "make", "--run-cmd", RUN,
                   "--into", str(optimized))
    err = proc.stderr.strip()
    assert proc.returncode == 2 and len(err.splitlines()) == 1, err
    assert "that MEP holds matvec from kernels/linalg.cl, not matmul" in err
    assert _files(optimized) == before


def test_into_an_mep_whose_kernel_changed_in_the_tree_is_refused(optimized: Path, solver: Path, tmp_path: Path) -> None:
    changed = tmp_path / "ocl_solver"
    shutil.copytree(solver, changed)
    cl = changed / "kernels" / "linalg.cl"
    cl.write_text(cl.read_text().replace("    REAL sum = 0;\n", "    REAL sum = 0.0f;\n"))
    before = _files(optimized)
    proc = run_cli("capture", str(changed), "--kernel", "matvec", "--build-cmd", "make", "--run-cmd", RUN,
                   "--into", str(optimized))
    err = proc.stderr.strip()
    assert proc.returncode == 2 and len(err.splitlines()) == 1, err
    assert "matvec in kernels/linalg.cl changed since the MEP was extracted (sha256 differs)" in err
    assert _files(optimized) == before and not (changed / "ocl_solver").exists()
