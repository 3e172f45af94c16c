"""An in-place update whose output parameter comes first (`merge<<<g, b>>>(d_key, d_key, n)` with
`merge(unsigned* dst, const unsigned* src, unsigned n)`, as bitonic merge steps are written): the capture sees both
pointers in one allocation and the MEP passes one buffer twice, owned by `dst`. The kernel reads that memory through
`src`, so the owner must hold the captured contents before the launch (inout), not the poison an output gets: with the
owner left `out`, the replayed reference read poison, wrote it back, and was refused as "writes nothing on captured
input set" (no GPU needed: a faked dump)."""
from __future__ import annotations

import struct
from pathlib import Path

from s2s.capture.collect import collect
from s2s.extract.mep_writer import make_mep

KERNEL = """__global__ void merge_step(unsigned *dst, const unsigned *src, unsigned n, unsigned stride) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i + stride >= n || (i & stride)) return;
  unsigned a = src[i], b = src[i + stride];
  dst[i] = a < b ? a : b;
  dst[i + stride] = a < b ? b : a;
}
"""


def _dump(dump: Path, before: list[int], after: list[int], stride: int) -> None:
    d = dump / "launch3"
    d.mkdir(parents=True)
    (dump / "summary.txt").write_text("kernel merge_step\nlaunches 6\n")
    n = len(before)
    b, a = struct.pack(f"<{n}I", *before), struct.pack(f"<{n}I", *after)
    for i in (0, 1):
        (d / f"arg{i}.before.bin").write_bytes(b)
        (d / f"arg{i}.after.bin").write_bytes(a)
    (d / "record.txt").write_text(
        "launch 3\nsite k.cu:9\nkernel merge_step\nnargs 4\ngrid 1 1 1\nblock 64 1 1\nshared_mem 0\nstream 0\n"
        f"arg 0 pointer 4 {4 * n} 0 139800000000000 device cuMemGetAddressRange\n"
        f"arg 1 pointer 4 {4 * n} 0 139800000000000 device cuMemGetAddressRange\n"
        f"arg 2 value 4 {struct.pack('<I', n).hex()}\narg 3 value 4 {struct.pack('<I', stride).hex()}\ndone\n")


def test_the_owner_of_memory_the_kernel_reads_through_another_parameter_is_inout(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "k.cu").write_text(KERNEL)
    mep, m, _ex = make_mep(str(tmp_path / "app"), "merge_step", str(tmp_path / "mep"))
    assert next(p for p in m.params if p.name == "dst").role == "out"
    n, stride = 64, 32
    before = [(37 * i) % 64 for i in range(n)]
    after = list(before)
    for i in range(n):
        if i + stride < n and not i & stride:
            after[i], after[i + stride] = min(before[i], before[i + stride]), max(before[i], before[i + stride])
    _dump(tmp_path / "dump", before, after, stride)
    got = collect(tmp_path / "dump", mep, m, want="--launch 3", run_cmd="./app", build_cmd="make")
    roles = {p.name: (p.role, p.shares) for p in got.manifest.params if p.role != "scalar"}
    assert roles["src"][1] == "dst"  # one buffer, passed twice
    assert roles["dst"] == ("inout", "")  # before the fix: out (poisoned before the reference, which then read poison)
    assert any("params.dst: role out -> inout" in note for note in got.notes)
