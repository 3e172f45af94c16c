"""A launch's data counted once where the launch leaves it unchanged: the capture runtime wrote every region before and
after the launch and refused a launch whose regions, counted twice, exceeded --max-bytes (logprob's steady-state
launch: 1.6 GB of logits, read only, "needs 3294756864 bytes of buffer data, over the limit" of 3 GiB). Every launch of
that kernel has the same sizes, so capturing another launch would not help; storing an unchanged region once does. The
runtime now writes STEM.after.same for a region that holds after the launch what it held before, and counts only what
it writes against the limit; collect reads the region's bytes before for it (no GPU needed: a faked dump)."""
from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest
from conftest import ROOT, needs_gpu, needs_nvcc, run_cli

from s2s.capture.collect import collect
from s2s.extract.mep_writer import make_mep
from s2s.mep.captured_only import check_captured_only, faulted_on_generated
from s2s.mep.manifest import load

APP = ROOT / "tests" / "fixtures" / "varied_fault"


def test_a_region_marked_unchanged_is_its_bytes_before(tmp_path: Path) -> None:
    mep, m, _ex = make_mep(str(APP), "row_code", str(tmp_path / "mep"))
    n, rows, row = 256, 10, 1024
    code = struct.pack(f"<{n}f", *[float(i % 10) for i in range(n)])
    table = struct.pack(f"<{rows * row}f", *[0.5 * (k % 7) for k in range(rows * row)])
    out_b, out_a = struct.pack(f"<{n}f", *[0.0] * n), struct.pack(f"<{n}f", *[1.0] * n)
    d = tmp_path / "dump" / "launch2"
    d.mkdir(parents=True)
    (tmp_path / "dump" / "summary.txt").write_text("kernel row_code\nlaunches 3\n")
    (d / "arg0.before.bin").write_bytes(out_b)
    (d / "arg0.after.bin").write_bytes(out_a)
    for i, data in ((1, table), (2, code)):  # read only: stored once
        (d / f"arg{i}.before.bin").write_bytes(data)
        (d / f"arg{i}.after.same").write_bytes(b"")
    (d / "record.txt").write_text(
        "launch 2\nsite main.cu:33\nkernel row_code\nnargs 4\ngrid 1 1 1\nblock 256 1 1\nshared_mem 0\nstream 0\n"
        f"arg 0 pointer 4 {4 * n} 0 139800000000000 device cuMemGetAddressRange\n"
        f"arg 1 pointer 4 {4 * rows * row} 0 139800100000000 device cuMemGetAddressRange\n"
        f"arg 2 pointer 4 {4 * n} 0 139800200000000 device cuMemGetAddressRange\n"
        f"arg 3 value 4 {struct.pack('<i', n).hex()}\ndone\n")
    got = collect(tmp_path / "dump", mep, m, want="--launch 2", run_cmd="./row_code", build_cmd="make")  # before: no
    # such file arg1.after.bin
    roles = {p.name: p.role for p in got.manifest.params}
    assert roles["table"] == "in" and roles["code"] == "in"  # unchanged: not taken for an in-out buffer
    entry = got.index["sets"][0]["params"]
    for name, data in (("table", table), ("code", code)):
        after = (mep / entry[name]["after"]).read_bytes()
        assert after.endswith(data)  # the .npy of the bytes before
        assert entry[name]["after"] == entry[name]["before"]  # one file in the MEP too, not a second copy
    assert entry["out"]["after"] != entry["out"]["before"] and (mep / entry["out"]["after"]).read_bytes().endswith(out_a)
    assert sorted(p.name for p in (mep / "capture" / "launch2").iterdir()) == [
        "code.before.npy", "out.after.npy", "out.before.npy", "table.before.npy"]
    # the data's digest names the bytes: another value in an unchanged input, another digest
    (d / "arg2.before.bin").write_bytes(code[:-4] + struct.pack("<f", 99.0))
    again = collect(tmp_path / "dump", mep, m, want="--launch 2", run_cmd="./row_code", build_cmd="make")
    assert again.manifest.capture["digest"] != got.manifest.capture["digest"]


def test_a_dump_file_shorter_than_its_record_is_an_error_and_a_copy_streams(tmp_path: Path) -> None:
    import hashlib

    import numpy as np

    from s2s.capture.npy import copy_to_npy, read_npy, same_bytes

    src = tmp_path / "a.bin"
    data = np.arange(3_000_000, dtype="<f4").tobytes()  # more than one chunk
    src.write_bytes(data + b"tail")
    h = hashlib.sha256()
    copy_to_npy(src, len(data), tmp_path / "a.npy", "<f4", 3_000_000, h)
    raw, descr, count = read_npy(tmp_path / "a.npy")
    assert raw == data and descr == "<f4" and count == 3_000_000 and h.digest() == hashlib.sha256(data).digest()
    assert np.load(tmp_path / "a.npy")[-1] == 2_999_999.0
    with pytest.raises(OSError, match="holds 12000004 bytes, 12000008 expected"):
        copy_to_npy(src, len(data) + 8, tmp_path / "b.npy", "<f4", 3_000_002)
    (tmp_path / "c.bin").write_bytes(data + b"tail")
    (tmp_path / "d.bin").write_bytes(data + b"tall")
    assert same_bytes(src, tmp_path / "c.bin") and not same_bytes(src, tmp_path / "d.bin")
    assert not same_bytes(src, tmp_path / "a.npy")


@pytest.mark.gpu
@needs_gpu
@needs_nvcc
def test_unchanged_regions_count_once_against_the_limit(tmp_path: Path) -> None:
    """varied_fault's launch 2 of row_code: 72 KiB before the launch, none of it changed (launch 1 wrote the same
    outputs); counted twice (144 KiB) it was over --max-bytes 100K."""
    app = tmp_path / "varied_fault"
    shutil.copytree(APP, app)
    out = tmp_path / "mep"
    proc = run_cli("capture", str(app), "--kernel", "row_code", "--build-cmd", "make", "--run-cmd", "./row_code",
                   "--launch", "2", "--max-bytes", "100K", "-o", str(out))
    assert proc.returncode == 0, proc.stderr  # before: "needs 147456 bytes of buffer data ... over the limit"
    assert load(out).capture
    run = run_cli("run", str(out), "--no-time", "--json")
    # its generated sets fault (test_capture_generated_faults): `s2s run` says which, in one line, and the MEP checked
    # on its captured sets only (as optimize's first check makes it) reproduces the application
    said = " ".join(run.stderr.split())
    assert run.returncode == 2 and faulted_on_generated(said), run.stderr[-3000:]
    assert check_captured_only(out, said)
    run = run_cli("run", str(out), "--no-time", "--json")
    assert "reproduces the application's outputs" in run.stdout, run.stdout[-3000:] + run.stderr[-2000:]


@pytest.mark.slow
def test_unchanged_buffers_count_once_on_pocl(tmp_path: Path) -> None:
    """The OpenCL capture runtime does the same (run here on PoCL): tests/fixtures/ocl_pairs' pair_gap reads a 40 KiB
    table and two 16 KiB index buffers and writes a 16 KiB output: 88 KiB before the launch and 16 KiB changed by it
    fit in 120K; counted twice (176 KiB) they did not."""
    app = tmp_path / "app"
    shutil.copytree(ROOT / "tests" / "fixtures" / "ocl_pairs", app)
    out = tmp_path / "mep"
    proc = run_cli("capture", str(app), "--kernel", "pair_gap", "--build-cmd", "make", "--run-cmd", "./pairs",
                   "--max-bytes", "120K", "-o", str(out))
    assert proc.returncode == 0, proc.stderr  # before: "needs 180224 bytes of buffer data ... over the limit"
    run = run_cli("run", str(out), "--no-time", "--json")
    assert "reproduces the application's outputs" in run.stdout and '"verdict": "ok"' in run.stdout, run.stdout[-3000:]
    small = run_cli("capture", str(app), "--kernel", "pair_gap", "--build-cmd", "make", "--run-cmd", "./pairs",
                    "--max-bytes", "96K", "-o", str(tmp_path / "mep2"))  # 88 KiB fit, the 16 KiB written after do not
    # over the limit: the MEP keeps the launch's sizes and scalars with generated input sets, and says so
    assert small.returncode == 0 and "over the limit of 98304 bytes" in " ".join(small.stdout.split()), small.stderr
    assert not load(tmp_path / "mep2").capture
