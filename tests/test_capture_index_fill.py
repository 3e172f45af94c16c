"""A captured MEP whose index buffer has no bound in the source (NPB CG's colidx): the captured data bound
the index fill of the generated input sets, so the MEP is not refused (no GPU needed: a faked dump)."""
from __future__ import annotations

import struct
from pathlib import Path

from s2s.capture.collect import collect
from s2s.extract.mep_writer import make_mep
from s2s.mep.backends.base import check_manifest
from s2s.mep.manifest import load, save

KERNEL = """__global__ void spmv(const int* colidx, const double* x, double* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[colidx[i]];
}
"""


def _dump(dump: Path, n: int, idx: list[int]) -> None:
    d = dump / "launch2"
    d.mkdir(parents=True)
    (dump / "summary.txt").write_text("kernel spmv\nlaunches 4\n")
    cols = struct.pack(f"<{n}i", *idx)
    vec = struct.pack(f"<{n}d", *[0.5 * i for i in range(n)])
    for i, data in ((0, cols), (1, vec), (2, vec)):
        (d / f"arg{i}.before.bin").write_bytes(data)
        (d / f"arg{i}.after.bin").write_bytes(data)
    (d / "record.txt").write_text(
        "launch 2\nsite k.cu:9\nkernel spmv\nnargs 4\ngrid 1 1 1\nblock 64 1 1\nshared_mem 0\nstream 0\n"
        f"arg 0 pointer 4 {4 * n} 0 139800000000000 device cuMemGetAddressRange\n"
        f"arg 1 pointer 8 {8 * n} 0 139800100000000 device cuMemGetAddressRange\n"
        f"arg 2 pointer 8 {8 * n} 0 139800200000000 device cuMemGetAddressRange\n"
        f"arg 3 value 4 {struct.pack('<i', n).hex()}\ndone\n")


def test_captured_index_buffer_bounds_its_fill(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "k.cu").write_text(KERNEL)
    mep, m, _ex = make_mep(str(tmp_path / "app"), "spmv", str(tmp_path / "mep"))
    assert next(p for p in m.params if p.name == "colidx").fill == "index"
    n = 64
    _dump(tmp_path / "dump", n, [(7 * i) % 41 for i in range(n)])
    got = collect(tmp_path / "dump", mep, m, want="--launch 2", run_cmd="./app", build_cmd="make")
    save(got.manifest, mep)
    m2 = load(mep)
    col = next(p for p in m2.params if p.name == "colidx")
    assert (col.fill, col.low, col.high) == ("index", 0.0, 41.0)
    assert any("colidx" in n and "41" in n for n in got.notes)
    check_manifest(m2, mep / "mep.toml")  # before the fix: "an index fill draws from [0, high): high = 0.0 ..."
