"""A launch whose buffers are over --max-bytes (a 6 GB working set captured with the default limit) stopped the
capture, and with it `auto` for that kernel ("capture failed: ... over the limit"). The record still holds the
buffers' sizes, the scalars and the launch configuration: the MEP now gets them, with generated input sets and a note
that says so; a later launch under the limit is kept where an earlier one is over it. No GPU: faked dumps, as the
runtime writes them. Written here from scratch."""
from __future__ import annotations

import struct
from pathlib import Path

import pytest

from s2s.base.errors import UserError
from s2s.capture.collect import collect
from s2s.extract.mep_writer import make_mep
from s2s.mep.backends.base import check_manifest
from s2s.mep.backends.cuda import render_harness
from s2s.mep.manifest import load, save

KERNEL = """__global__ void sweep(unsigned *mem, const float *coef, int n, float scale) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) mem[i] = mem[i] * 3u + (unsigned)(coef[i % 64] * scale);
}
"""
N = 1 << 20


def _record(d: Path, ordinal: int, n: int, over: bool) -> None:
    d.mkdir(parents=True)
    lines = [f"launch {ordinal}", "site k.cu:9", "kernel sweep", "nargs 4", f"grid {n // 256} 1 1", "block 256 1 1",
             "shared_mem 0", "stream 0", f"arg 0 pointer 4 {4 * n} 0 139800000000000 device cuMemGetAddressRange",
             "arg 1 pointer 4 256 0 139800100000000 device cuMemGetAddressRange",
             f"arg 2 value 4 {struct.pack('<i', n).hex()}", f"arg 3 value 4 {struct.pack('<f', 0.5).hex()}"]
    if over:  # the runtime stops before writing any data
        lines.append(f"exceeded {4 * n + 256} 65536")
    else:
        for i, nbytes in ((0, 4 * n), (1, 256)):
            (d / f"arg{i}.before.bin").write_bytes(bytes(nbytes))
            (d / f"arg{i}.after.bin").write_bytes(bytes(nbytes) if i else b"\1" * nbytes)
        lines.append("done")
    (d / "record.txt").write_text("\n".join(lines) + "\n")


def _mep(tmp_path: Path):  # type: ignore[no-untyped-def]
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "k.cu").write_text(KERNEL)
    return make_mep(str(tmp_path / "app"), "sweep", str(tmp_path / "mep"))


def test_a_launch_over_the_limit_gives_sizes_scalars_and_generated_sets(tmp_path: Path) -> None:
    mep, m, _ex = _mep(tmp_path)
    dump = tmp_path / "dump"
    _record(dump / "launch3", 3, N, over=True)
    (dump / "summary.txt").write_text("kernel sweep\nlaunches 5\n")
    got = collect(dump, mep, m, want="--launch 3", run_cmd="./app", build_cmd="make")
    save(got.manifest, mep)
    m2 = load(mep)
    check_manifest(m2, mep / "mep.toml")
    p = {q.name: q for q in m2.params}
    assert (p["mem"].count, p["coef"].count, p["n"].value, p["scale"].value) == (N, 64, N, 0.5)
    assert tuple(m2.launch.grid) == (N // 256, 1, 1) and not m2.capture and not m2.unfilled()
    assert not (mep / "capture").exists()
    assert any("over the limit" in n and "generated input sets" in n for n in got.notes), got.notes
    assert "sweep" in render_harness(mep, m2)  # a harness of generated sets, as for an extracted MEP


def test_a_later_launch_under_the_limit_is_kept(tmp_path: Path) -> None:
    mep, m, _ex = _mep(tmp_path)
    dump = tmp_path / "dump"
    _record(dump / "launch2", 2, N, over=True)
    _record(dump / "launch4", 4, 1024, over=False)
    (dump / "summary.txt").write_text("kernel sweep\nlaunches 5\n")
    got = collect(dump, mep, m, want="--first 4", run_cmd="./app", build_cmd="make")
    assert got.manifest.capture["sets"] == [4]
    assert {q.name: q.count for q in got.manifest.params if q.role != "scalar"} == {"mem": 1024, "coef": 64}
    assert any(n.startswith("launch 2: its buffers hold") for n in got.notes), got.notes


def test_a_struct_of_device_pointers_over_the_limit_is_still_refused(tmp_path: Path) -> None:
    mep, m, _ex = _mep(tmp_path)
    dump = tmp_path / "dump"
    _record(dump / "launch3", 3, N, over=True)
    rec = dump / "launch3" / "record.txt"
    rec.write_text(rec.read_text().replace("exceeded", "sptr 3 0 4096 0 139800200000000 device\nexceeded"))
    (dump / "summary.txt").write_text("kernel sweep\nlaunches 5\n")
    with pytest.raises(UserError, match="over the limit"):
        collect(dump, mep, m, want="--launch 3", run_cmd="./app", build_cmd="make")
