"""A captured launch that writes the values its buffers already hold (a benchmark repeating a kernel over the same
data; an in-place update at its fixed point) left every in-out buffer as it found it, and `optimize` refused the MEP:
"the reference writes nothing on captured input set ...; nothing could tell a variant from it". Where the kernel
overwrites such a buffer without reading it, the buffer is now checked as an output (poisoned before every run); the
harness confirms that the kernel does not read it, else mep.toml is put back and the refusal stands (auto then
captures another launch). Fixture: tests/fixtures/same_values (written for these tests); the GPU test runs it, the
PoCL test its OpenCL twin tests/fixtures/ocl_same_values."""
from __future__ import annotations

import json
import shutil
import struct
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import ROOT, needs_gpu, needs_nvcc, run_cli

from s2s.base.errors import UserError
from s2s.capture.collect import collect
from s2s.extract.mep_writer import make_mep
from s2s.mep.manifest import load, save
from s2s.mep.same_values import check_as_outputs, unchanged_inouts
from s2s.optimize.loop import _first_check

APP = ROOT / "tests" / "fixtures" / "same_values"
NOTHING = ("params: the reference writes nothing on captured input set (launch 2 of the application, main.cu:44) "
           "(outputs: T_x, T_y); nothing could tell a variant from it (check the roles, the scalars and the launch in "
           "mep.toml)")


def _captured(tmp: Path, y_changes: bool = False) -> Path:
    """recompute's launch 2, faked: T_x (and T_y unless `y_changes`) hold before the launch what it writes."""
    mep, m, _ex = make_mep(str(APP), "recompute", str(tmp / "mep"))
    n = 256
    d = tmp / "dump" / "launch2"
    d.mkdir(parents=True)
    (tmp / "dump" / "summary.txt").write_text("kernel recompute\nlaunches 3\n")
    x = struct.pack(f"<{n}i", *[(5 * i + 3) % 1009 for i in range(n)])
    y0 = struct.pack(f"<{n}i", *[0] * n) if y_changes else x
    for i, (b, a) in enumerate([(x, x), (y0, x)]):
        (d / f"arg{i}.before.bin").write_bytes(b)
        (d / f"arg{i}.after.bin").write_bytes(a)
    (d / "record.txt").write_text(
        "launch 2\nsite main.cu:44\nkernel recompute\nnargs 5\ngrid 1 1 1\nblock 256 1 1\nshared_mem 0\nstream 0\n"
        f"arg 0 pointer 4 {4 * n} 0 139800000000000 device cuMemGetAddressRange\n"
        f"arg 1 pointer 4 {4 * n} 0 139800100000000 device cuMemGetAddressRange\n"
        + "".join(f"arg {k} value 4 {struct.pack('<i', v).hex()}\n" for k, v in ((2, 7), (3, 1009), (4, n))) + "done\n")
    got = collect(tmp / "dump", mep, m, want="--launch 2", run_cmd="./same_values", build_cmd="make")
    save(got.manifest, mep)
    return mep


def test_unchanged_inout_buffers_are_checked_as_outputs(tmp_path: Path) -> None:
    mep = _captured(tmp_path)
    assert unchanged_inouts(load(mep), mep) == ["T_x", "T_y"]
    assert check_as_outputs(mep, "params.T_x.count = 4: the reference wrote 4 byte(s) past the end") is None
    before, note = check_as_outputs(mep, NOTHING) or (None, "")
    assert before is not None and [p.role for p in before.params][:2] == ["inout", "inout"]
    m = load(mep)
    assert [p.role for p in m.params][:2] == ["out", "out"] and note in m.notes and "params.T_x, params.T_y" in note


def test_a_buffer_the_launch_changed_stays_inout(tmp_path: Path) -> None:
    mep = _captured(tmp_path, y_changes=True)
    assert unchanged_inouts(load(mep), mep) == ["T_x"]


def test_first_check_keeps_the_outputs_where_the_harness_confirms_them(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The deciding logic around the harness (faked here; the GPU test below runs the real one): refused as writing
    nothing, then passing with the buffers as outputs."""
    mep = _captured(tmp_path)
    calls: list[list[str]] = []

    def harness(mep_dir: Path, variant: str | None = None, **_kw: object) -> SimpleNamespace:
        roles = [p.role for p in load(mep_dir).params]
        calls.append(roles)
        if roles[0] == "inout":
            raise UserError(NOTHING, file=str(mep_dir / "mep.toml"))
        return SimpleNamespace(ok=True, messages=())  # a Measurement's verdict and messages

    monkeypatch.setattr("s2s.mep.evaluate.evaluate", harness)
    notes = _first_check(mep)  # before: the UserError, and optimize stopped
    assert len(calls) == 2 and calls[1][:2] == ["out", "out"]
    assert len(notes) == 1 and "checked as output(s)" in notes[0]


def test_first_check_puts_the_mep_back_when_the_kernel_reads_the_buffers(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    mep = _captured(tmp_path)
    text = (mep / "mep.toml").read_text()

    def harness(mep_dir: Path, variant: str | None = None, **_kw: object) -> None:
        if load(mep_dir).params[0].role == "inout":
            raise UserError(NOTHING, file=str(mep_dir / "mep.toml"))
        raise UserError("params.T_x: role out, but on the captured input set ... the reference writes other values "
                        "when the buffer starts poisoned (...): the kernel reads its prior contents; its role is inout")

    monkeypatch.setattr("s2s.mep.evaluate.evaluate", harness)
    with pytest.raises(UserError, match="writes nothing on captured"):  # the refusal that auto answers with another launch
        _first_check(mep)
    assert (mep / "mep.toml").read_text() == text


@pytest.mark.gpu
@needs_gpu
@needs_nvcc
def test_launches_writing_the_values_they_find(tmp_path: Path) -> None:
    app = tmp_path / "same_values"
    shutil.copytree(APP, app)
    meps = {}
    for kernel in ("recompute", "settle"):
        meps[kernel] = out = tmp_path / f"mep-{kernel}"
        proc = run_cli("capture", str(app), "--kernel", kernel, "--build-cmd", "make", "--run-cmd", "./same_values",
                       "--launch", "2", "-o", str(out))
        assert proc.returncode == 0, proc.stderr
    # recompute overwrites T_x and T_y before it reads them: optimized with them checked as outputs
    opt = run_cli("optimize", str(meps["recompute"]), "--max-evals", "2", "--no-patterns")
    assert opt.returncode in (0, 1), opt.stdout[-2000:] + opt.stderr[-2000:]  # before: 2, "writes nothing"
    m = load(meps["recompute"])
    assert [p.role for p in m.params][:2] == ["out", "out"] and any("checked as output" in n for n in m.notes)
    run = run_cli("run", str(meps["recompute"]), "--no-time", "--json")
    assert json.loads(run.stdout)["verdict"] == "ok", run.stdout[-3000:]
    # settle reads the word it writes: the harness finds it out, the MEP stays inout and the refusal stands
    text = (meps["settle"] / "mep.toml").read_text()
    opt = run_cli("optimize", str(meps["settle"]), "--max-evals", "2", "--no-patterns")
    assert opt.returncode == 2 and "writes nothing on captured" in " ".join(opt.stderr.split()), opt.stderr[-2000:]
    assert (meps["settle"] / "mep.toml").read_text() == text
    # order_pairs(d_k, d_k): its first launch orders the keys in place (dst, the owner, is inout: before, the poisoned
    # output was what the kernel read, and the launch "wrote nothing"); its later launches find them ordered
    for launch, rc in (("1", (0, 1)), ("2", (2,))):
        out = tmp_path / f"mep-order-{launch}"
        proc = run_cli("capture", str(app), "--kernel", "order_pairs", "--build-cmd", "make", "--run-cmd", "./same_values",
                       "--launch", launch, "-o", str(out))
        assert proc.returncode == 0, proc.stderr
        assert next(p for p in load(out).params if p.name == "dst").role == "inout"
        opt = run_cli("optimize", str(out), "--max-evals", "2", "--no-patterns")
        assert opt.returncode in rc, (launch, opt.stdout[-2000:] + opt.stderr[-2000:])


OCL_APP = ROOT / "tests" / "fixtures" / "ocl_same_values"


@pytest.mark.slow
def test_launches_writing_the_values_they_find_on_pocl(tmp_path: Path) -> None:
    """The same two cases end to end with OpenCL on the CPU (PoCL): the real runner decides."""
    app = tmp_path / "app"
    shutil.copytree(OCL_APP, app)
    meps = {}
    for kernel in ("recompute", "settle"):
        meps[kernel] = out = tmp_path / f"mep-{kernel}"
        proc = run_cli("capture", str(app), "--kernel", kernel, "--build-cmd", "make", "--run-cmd", "./same_values",
                       "--launch", "2", "-o", str(out))
        assert proc.returncode == 0, proc.stderr
        assert unchanged_inouts(load(out), out), kernel  # both launches left their buffers as they found them
    notes = _first_check(meps["recompute"])  # before: UserError "writes nothing on captured input set"
    assert len(notes) == 1 and "params.tx, params.ty" in notes[0]
    run = run_cli("run", str(meps["recompute"]), "--no-time", "--json")
    res = json.loads(run.stdout)
    assert res["verdict"] == "ok", run.stdout[-3000:]
    text = (meps["settle"] / "mep.toml").read_text()
    with pytest.raises(UserError, match="writes nothing on captured"):
        _first_check(meps["settle"])
    assert (meps["settle"] / "mep.toml").read_text() == text


READS = ("params.T_x: role out, but on the captured input set (launch 2 of the application, main.cu:44) the reference "
         "writes other values when the buffer starts poisoned (256 value(s) differ beyond tolerance): the kernel reads "
         "its prior contents; its role is inout")


def test_an_output_found_reading_its_prior_contents_is_replayed_as_inout(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The harness's finding that an output reads what the buffer held (an element written through a helper's
    reference, a `+=` the analysis did not see) is the remedy, not the end: the buffer becomes in-out (replayed from
    its captured contents), said in mep.toml; a second finding for the same buffer stands."""
    from s2s.mep.same_values import check_as_inout

    mep = _captured(tmp_path, y_changes=True)
    m = load(mep)
    save(replace(m, params=[replace(p, role="out") if p.name == "T_x" else p for p in m.params]), mep)
    assert check_as_inout(mep, NOTHING) is None
    calls: list[str] = []

    def harness(mep_dir: Path, variant: str | None = None, **_kw: object) -> SimpleNamespace:
        role = load(mep_dir).params[0].role
        calls.append(role)
        if role == "out":
            raise UserError(READS, file=str(mep_dir / "mep.toml"))
        return SimpleNamespace(ok=True, messages=())

    monkeypatch.setattr("s2s.mep.evaluate.evaluate", harness)
    notes = _first_check(mep)
    assert calls == ["out", "inout"] and len(notes) == 1 and "role out -> inout" in notes[0]
    m = load(mep)
    assert m.params[0].role == "inout" and notes[0] in m.notes


@pytest.mark.slow
def test_an_output_that_reads_its_prior_contents_on_pocl(tmp_path: Path) -> None:
    """settle's first launch sets a bit of each word in place: with its buffer labelled an output (as an analysis that
    missed the read would), the real runner finds the read and the MEP is checked with the buffer in-out."""
    app = tmp_path / "app"
    shutil.copytree(OCL_APP, app)
    mep = tmp_path / "mep-settle"
    proc = run_cli("capture", str(app), "--kernel", "settle", "--build-cmd", "make", "--run-cmd", "./same_values",
                   "--launch", "1", "-o", str(mep))
    assert proc.returncode == 0, proc.stderr
    m = load(mep)
    assert next(p for p in m.params if p.name == "v").role == "inout"
    save(replace(m, params=[replace(p, role="out") if p.name == "v" else p for p in m.params]), mep)
    notes = _first_check(mep)  # before: UserError "role out, but ... reads its prior contents"
    assert len(notes) == 1 and "params.v: role out -> inout" in notes[0], notes
    assert next(p for p in load(mep).params if p.name == "v").role == "inout"
    run = run_cli("run", str(mep), "--no-time", "--json")
    assert json.loads(run.stdout)["verdict"] == "ok", run.stdout[-3000:]
