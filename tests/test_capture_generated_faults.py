"""A captured kernel whose reference faults on a generated input set (it indexes a table with row numbers its
application stores as floats, and generated floats make the row negative) while the application's own data replay: the
optimization goes on, checked on the captured sets only (`[check] input_sets = 0`), and mep.toml and the outcome say
why. Before, `optimize` stopped with "the reference kernel failed (input set 1 (seed ...)): cudaErrorIllegalAddress".
Fixture: tests/fixtures/varied_fault (written for these tests)."""
from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest
from conftest import ROOT, needs_gpu, needs_nvcc, run_cli

from s2s.capture.collect import collect
from s2s.extract.mep_writer import make_mep
from s2s.mep.backends.base import check_manifest
from s2s.mep.captured_only import check_captured_only, faulted_on_generated
from s2s.mep.manifest import load, save

APP = ROOT / "tests" / "fixtures" / "varied_fault"
FAULT = ("the reference kernel failed (input set 1 (seed 1866372021)): cudaErrorIllegalAddress (an illegal memory "
         "access was encountered); check the counts and the launch in mep.toml")


def _captured_mep(tmp: Path) -> Path:
    mep, m, _ex = make_mep(str(APP), "row_code", str(tmp / "mep"))
    n, rows, row = 4096, 10, 1024
    code = struct.pack(f"<{n}f", *[float((i * 7) % 10) for i in range(n)])
    table = struct.pack(f"<{rows * row}f", *[0.001 * (k % 977) for k in range(rows * row)])
    d = tmp / "dump" / "launch2"
    d.mkdir(parents=True)
    (tmp / "dump" / "summary.txt").write_text("kernel row_code\nlaunches 3\n")
    outs = struct.pack(f"<{n}f", *[0.0] * n), struct.pack(f"<{n}f", *[1.0] * n)
    for i, (b, a) in enumerate([outs, (table, table), (code, code)]):
        (d / f"arg{i}.before.bin").write_bytes(b)
        (d / f"arg{i}.after.bin").write_bytes(a)
    (d / "record.txt").write_text(
        "launch 2\nsite main.cu:33\nkernel row_code\nnargs 4\ngrid 16 1 1\nblock 256 1 1\nshared_mem 0\nstream 0\n"
        f"arg 0 pointer 4 {4 * n} 0 139800000000000 device cuMemGetAddressRange\n"
        f"arg 1 pointer 4 {4 * rows * row} 0 139800100000000 device cuMemGetAddressRange\n"
        f"arg 2 pointer 4 {4 * n} 0 139800200000000 device cuMemGetAddressRange\n"
        f"arg 3 value 4 {struct.pack('<i', n).hex()}\ndone\n")
    got = collect(tmp / "dump", mep, m, want="--launch 2", run_cmd="./row_code", build_cmd="make")
    save(got.manifest, mep)
    return mep


def test_only_a_fault_on_a_generated_set_is_recognized() -> None:
    assert faulted_on_generated(FAULT) == "input set 1 (seed 1866372021)"
    assert faulted_on_generated("the reference kernel failed (after timing, fresh input set (seed 9)): x") is not None
    # the application's own data, the bounds probe, a variant: not this case
    assert faulted_on_generated("the reference kernel failed (captured input set (launch 2 of the application, "
                                "main.cu:33)): cudaErrorIllegalAddress") is None
    assert faulted_on_generated("the reference kernel failed (bounds probe): cudaErrorIllegalAddress") is None
    assert faulted_on_generated("the variant kernel failed (input set 1 (seed 4)): cudaErrorIllegalAddress") is None


def test_a_captured_mep_falls_back_to_its_captured_sets(tmp_path: Path) -> None:
    mep = _captured_mep(tmp_path)
    assert next(q for q in load(mep).params if q.name == "code").fill == "uniform"  # floats: varied from the seed
    note = check_captured_only(mep, FAULT)
    assert note is not None and "input set 1 (seed 1866372021)" in note and "cudaErrorIllegalAddress" in note
    m = load(mep)
    assert m.input_sets == 0 and note in m.notes
    check_manifest(m, mep / "mep.toml")  # 0 generated sets is valid with captured data
    assert check_captured_only(mep, FAULT) is None  # once: nothing generated is left to drop
    # without captured data there is nothing else to check on: the fault stays an error
    plain, _m, _ex = make_mep(str(APP), "row_code", str(tmp_path / "plain"))
    assert check_captured_only(plain, FAULT) is None
    with pytest.raises(Exception, match="check.input_sets"):
        check_manifest(load(plain).__class__(**{**load(plain).__dict__, "input_sets": 0}), plain / "mep.toml")


@pytest.mark.slow
@needs_nvcc
def test_a_captured_only_mep_builds(tmp_path: Path) -> None:
    mep = _captured_mep(tmp_path)
    assert check_captured_only(mep, FAULT) is not None
    proc = run_cli("run", str(mep), "--no-time")
    blob = " ".join((proc.stdout + proc.stderr).split())
    assert "does not compile" not in blob and "must be an integer" not in blob, blob[-3000:]
    assert "checked on the application's captured data only" in blob, blob[-3000:]
    if shutil.which("nvidia-smi") is None:
        assert "the MEP builds here" in blob, blob[-3000:]


@pytest.mark.gpu
@needs_gpu
@needs_nvcc
def test_reference_faulting_on_generated_sets_is_optimized_on_captured_data(tmp_path: Path) -> None:
    app = tmp_path / "varied_fault"
    shutil.copytree(APP, app)
    out = tmp_path / "mep"
    proc = run_cli("capture", str(app), "--kernel", "row_code", "--build-cmd", "make", "--run-cmd", "./row_code",
                   "--launch", "2", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    opt = run_cli("optimize", str(out), "--max-evals", "2", "--no-patterns")
    assert opt.returncode in (0, 1), opt.stdout[-2000:] + opt.stderr[-2000:]  # before: 2, the reference failed
    m = load(out)
    assert m.input_sets == 0 and any("captured sets only" in n for n in m.notes), m.notes
    run = run_cli("run", str(out), "--no-time", "--json")
    res = json.loads(run.stdout)
    assert res["verdict"] == "ok" and any("captured data only" in msg for msg in res["messages"]), res


@pytest.mark.slow
def test_a_runner_killed_on_a_generated_set_falls_back_on_pocl(tmp_path: Path) -> None:
    """The same on the CPU (PoCL), where the reference's out-of-bounds read on a generated set kills the runner
    (a segmentation fault: a Measurement, no input error); tests/fixtures/ocl_pairs' row_code."""
    from s2s.optimize.loop import _first_check

    app = tmp_path / "app"
    shutil.copytree(ROOT / "tests" / "fixtures" / "ocl_pairs", app)
    out = tmp_path / "mep"
    proc = run_cli("capture", str(app), "--kernel", "row_code", "--build-cmd", "make", "--run-cmd", "./pairs", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    before = json.loads(run_cli("run", str(out), "--no-time", "--json").stdout)
    assert before["verdict"] == "runtime-failed" and faulted_on_generated(" ".join(before["messages"])), before
    notes = _first_check(out)  # before: optimize went on with a reference that dies on every evaluation
    assert len(notes) == 1 and "killed by signal" in notes[0] and load(out).input_sets == 0
    res = json.loads(run_cli("run", str(out), "--no-time", "--json").stdout)
    assert res["verdict"] == "ok" and any("captured data only" in m for m in res["messages"]), res
