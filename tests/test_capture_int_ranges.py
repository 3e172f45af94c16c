"""Integers a captured kernel reads can index memory or bound loops in ways the source does not show: an id used as
`W + id * dim` after a local copy (a LoRA adapter's index), `m = maturities[n] - 1` into a local array, a per-row
length that bounds a loop, a sentinel that marks an empty cell. The generated input sets of a captured MEP drew such
buffers from a default [0, 16], and the reference faulted on them (cudaErrorIllegalAddress on "input set 1"), stopping
the optimization of kernels whose captured data replayed. They now reorder the captured values (`fill = "shuffle"`:
every element is one the application passed), with the captured range as [low, high] (no GPU needed: a faked dump;
tests/test_capture_opencl.py's cell-list test runs the reordering on PoCL)."""
from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

from s2s.capture.collect import collect
from s2s.extract.mep_writer import make_mep
from s2s.mep.backends.base import check_manifest
from s2s.mep.backends.cuda import render_harness
from s2s.mep.manifest import load, save

KERNEL = """__global__ void pick_rows(float *out, const float *W, const int *ids, const unsigned short *lens, int n, int dim) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int id = ids[i];
  const float *row = W + id * dim;
  float acc = 0.0f;
  for (int j = 0; j < lens[i]; ++j) acc += row[j];
  out[i] = acc;
}
"""


def _dump(dump: Path, n: int, dim: int, rows: int, ids: list[int], lens: list[int]) -> None:
    d = dump / "launch5"
    d.mkdir(parents=True)
    (dump / "summary.txt").write_text("kernel pick_rows\nlaunches 9\n")
    w = struct.pack(f"<{rows * dim}f", *[0.25 * k for k in range(rows * dim)])
    out_b, out_a = struct.pack(f"<{n}f", *[0.0] * n), struct.pack(f"<{n}f", *[1.0] * n)
    datas = [(out_b, out_a), (w, w), (struct.pack(f"<{n}i", *ids),) * 2, (struct.pack(f"<{n}H", *lens),) * 2]
    for i, (b, a) in enumerate(datas):
        (d / f"arg{i}.before.bin").write_bytes(b)
        (d / f"arg{i}.after.bin").write_bytes(a)
    (d / "record.txt").write_text(
        "launch 5\nsite k.cu:9\nkernel pick_rows\nnargs 6\ngrid 1 1 1\nblock 64 1 1\nshared_mem 0\nstream 0\n"
        f"arg 0 pointer 4 {4 * n} 0 139800000000000 device cuMemGetAddressRange\n"
        f"arg 1 pointer 4 {4 * rows * dim} 0 139800100000000 device cuMemGetAddressRange\n"
        f"arg 2 pointer 4 {4 * n} 0 139800200000000 device cuMemGetAddressRange\n"
        f"arg 3 pointer 2 {2 * n} 0 139800300000000 device cuMemGetAddressRange\n"
        f"arg 4 value 4 {struct.pack('<i', n).hex()}\narg 5 value 4 {struct.pack('<i', dim).hex()}\ndone\n")


def test_generated_sets_draw_captured_integers_from_their_captured_range(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "k.cu").write_text(KERNEL)
    mep, m, _ex = make_mep(str(tmp_path / "app"), "pick_rows", str(tmp_path / "mep"))
    n, dim, rows = 64, 8, 6
    ids = [2 + (5 * i) % 4 for i in range(n)]  # rows 2..5 of 6
    lens = [1 + (3 * i) % dim for i in range(n)]  # 1..8 of 8
    _dump(tmp_path / "dump", n, dim, rows, ids, lens)
    got = collect(tmp_path / "dump", mep, m, want="--launch 5", run_cmd="./app", build_cmd="make")
    save(got.manifest, mep)
    m2 = load(mep)
    check_manifest(m2, mep / "mep.toml")
    p = {q.name: q for q in m2.params}
    # before the fix: both drawn from [0, 16] (rows up to 15 of 6, loops up to 16 of 8 elements)
    assert (p["ids"].fill, p["ids"].low, p["ids"].high) == ("shuffle", 2.0, 5.0)
    assert (p["lens"].fill, p["lens"].low, p["lens"].high) == ("shuffle", 1.0, 8.0)
    assert p["W"].fill == "uniform"
    assert (p["W"].low, p["W"].high) == (m.params[1].low, m.params[1].high)  # floats keep their varied range
    assert any("params.ids" in note and "reorder" in note and "[2, 5]" in note for note in got.notes)
    text = render_harness(mep, m2)  # the CUDA harness's FILL_SHUFFLE (4), the range as its fallback
    assert '{"ids", "in", (size_t)64ULL, sizeof(s2s_T2), 4, 2.0, 5.0,' in text
    assert '{"lens", "in", (size_t)64ULL, sizeof(s2s_T3), 4, 1.0, 8.0,' in text


@pytest.mark.slow
def test_integers_valid_together_stay_together_on_pocl(tmp_path: Path) -> None:
    """tests/fixtures/ocl_pairs reads the row hi[i] - lo[i] of a table: each buffer alone spans [0, 9], the pairs are
    valid only together. Drawn independently (as from [0, 16] before), the row went negative and the runner died of
    a segmentation fault on input set 1; reordered alike, every generated pair is one the application passed."""
    app = tmp_path / "app"
    shutil.copytree(ROOT / "tests" / "fixtures" / "ocl_pairs", app)
    out = tmp_path / "mep"
    proc = run_cli("capture", str(app), "--kernel", "pair_gap", "--build-cmd", "make", "--run-cmd", "./pairs", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert [p.fill for p in load(out).params if p.name in ("lo", "hi")] == ["shuffle", "shuffle"]
    run = run_cli("run", str(out), "--no-time", "--json")
    res = json.loads(run.stdout)
    assert res["verdict"] == "ok" and res["input_sets"] >= 4, run.stdout[-3000:]  # the captured set and 3 generated ones
