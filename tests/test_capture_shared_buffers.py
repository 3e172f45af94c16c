"""Kernels that update one buffer in place through two parameters (`block_scan<<<g, b>>>(d_key, d_key, n)`, NPB IS's
rank kernels, bitonic merges): the capture sees both pointers in one allocation and the MEP passes one buffer twice
(`shares`), as the application did; with two buffers the replayed reference read an input the launch never changed and
did not reproduce the application's outputs. Fixture: tests/fixtures/inplace (written for these tests)."""
from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import ROOT, needs_gpu, needs_nvcc, run_cli

from s2s.capture.collect import read_record, shared_buffers
from s2s.extract.mep_writer import make_mep
from s2s.mep.manifest import LaunchSpec, load, save

APP = ROOT / "tests" / "fixtures" / "inplace"


def _record(root: Path, ordinal: int, lines: list[str]) -> Path:
    d = root / f"launch{ordinal}"
    d.mkdir(parents=True)
    (d / "record.txt").write_text("\n".join([f"launch {ordinal}", "site scan.cu:45", *lines, "done"]) + "\n")
    return d / "record.txt"


def test_pointers_into_one_allocation_share_the_first_ones_buffer(tmp_path: Path) -> None:
    out, m, _ex = make_mep(str(APP), "lagged_add", str(tmp_path / "mep"))
    # the runtime's lines: arg I pointer ELEM_SIZE BYTES OFFSET BASE KIND HOW
    recs = [read_record(_record(tmp_path / "dump", k, [
        "arg 0 pointer 4 16384 0 139800000000000 device cuMemGetAddressRange",
        "arg 1 pointer 4 16368 16 139800000000000 device cuMemGetAddressRange",
        "arg 2 value 4 fc0f0000"])) for k in (3, 5)]
    assert shared_buffers(recs, list(m.params)) == {"out": ("in", 16)}
    other = read_record(_record(tmp_path / "dump", 7, [  # in another launch they are apart: not shared
        "arg 0 pointer 4 16384 0 139800000000000 device cuMemGetAddressRange",
        "arg 1 pointer 4 16384 0 139800000065536 device cuMemGetAddressRange",
        "arg 2 value 4 fc0f0000"]))
    assert shared_buffers([*recs, other], list(m.params)) == {}


@pytest.mark.slow
@needs_nvcc
def test_a_shared_buffer_builds_and_is_kept_in_mep_toml(tmp_path: Path) -> None:
    out, m, _ex = make_mep(str(APP), "block_scan", str(tmp_path / "mep"))
    params = [replace(p, count=4096) if p.role != "scalar" else replace(p, value=4096) for p in m.params]
    params[1] = replace(params[1], shares="src", shares_offset=0, role="inout")
    m = replace(m, params=params, launch=LaunchSpec(grid=(16, 1, 1), block=(256, 1, 1), shared_mem=0))
    save(m, out)
    again = load(out)
    assert [(p.name, p.shares, p.shares_offset) for p in again.params] == [("src", "", 0), ("dst", "src", 0), ("n", "", 0)]
    assert not again.unfilled()
    text = (out / "mep.toml").read_text()
    assert text.count("shares =") == 1  # written where set only
    proc = run_cli("run", str(out), "--no-time")
    blob = proc.stdout + proc.stderr
    assert "does not compile" not in blob and "static assert" not in blob, blob[-3000:]
    if shutil.which("nvidia-smi") is None:
        assert "the MEP builds here" in " ".join(blob.split()), blob[-3000:]
    harness = (out / "harness.cu").read_text()
    assert "(unsigned char*)p[0] + 0ULL" in harness and harness.count("spec.bufs.push_back") == 1
    bad = replace(again, params=[again.params[0], replace(again.params[1], shares="n"), again.params[2]])
    assert any("params.dst.shares" in e for e in bad.unfilled())
    # the owner declared after the parameter that shares it (`k(a + off, a)`: the lowest address owns the allocation):
    # it was refused as "the name of an earlier buffer parameter" and two held-out kernels stayed FILL-IN
    later = replace(again, params=[replace(again.params[0], shares="dst", shares_offset=0, role="inout"),
                                   replace(again.params[1], shares="", shares_offset=0), again.params[2]])
    assert not later.unfilled()
    save(later, out)
    proc = run_cli("run", str(out), "--no-time")
    blob = proc.stdout + proc.stderr
    assert "does not compile" not in blob and "static assert" not in blob and "fill in" not in blob, blob[-3000:]
    assert "(unsigned char*)p[0] + 0ULL" in (out / "harness.cu").read_text()


@pytest.mark.gpu
@needs_gpu
@needs_nvcc
def test_in_place_kernels_captured_reproduce_the_application(tmp_path: Path) -> None:
    app = tmp_path / "inplace"
    shutil.copytree(APP, app)
    for kernel, launch in (("block_scan", "3"), ("lagged_add", "2")):
        out = tmp_path / f"mep-{kernel}"
        proc = run_cli("capture", str(app), "--kernel", kernel, "--build-cmd", "make", "--run-cmd", "./scan",
                       "--launch", launch, "-o", str(out))
        assert proc.returncode == 0, proc.stderr
        assert any(p.shares for p in load(out).params)
        run = run_cli("run", str(out), "--no-time", "--json")
        assert run.returncode == 0, run.stderr
        res = json.loads(run.stdout)
        assert res["verdict"] == "ok" and any("reproduces the application's outputs" in m for m in res["messages"])
