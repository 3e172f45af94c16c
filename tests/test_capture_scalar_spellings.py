"""A kernel's scalar parameters spelled as C and CUDA allow, `long int`, `std::size_t`, `ptrdiff_t`, `unsigned long long
int`, `short int`, `__half`, `nv_bfloat16`: the capture decodes each from its bytes. Before, only the spellings of one
table decoded; the others kept the value inferred from the source (a FILL-IN in capture-first `auto`: "params.n: the
value of 'n' at the launch", and the optimization stopped) or were taken for a struct passed by value. No GPU: a faked
dump, as the runtime writes it. Written here from scratch."""
from __future__ import annotations

import struct
from pathlib import Path

from s2s.capture.collect import collect
from s2s.extract.mep_writer import make_mep
from s2s.mep.backends.base import check_manifest
from s2s.mep.manifest import load, save

KERNEL = """#include <cstddef>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
__global__ void spelled(float *out, long int n, std::size_t stride, ptrdiff_t shift, unsigned long long int seed,
                        short int tag, __half scale, nv_bfloat16 bias) {
  long int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i * stride] = (float)(shift + (long int)(seed % 7) + tag) * __half2float(scale) + __bfloat162float(bias);
}
"""
VALUES = {"n": ("q", 96), "stride": ("Q", 1), "shift": ("q", -3), "seed": ("Q", 2**40 + 5), "tag": ("h", -2),
          "scale": ("e", 0.5)}
BIAS_BITS = struct.pack("<f", 1.5)[2:]  # bfloat16: a float's high half


def test_scalar_spellings_decode_from_their_captured_bytes(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "k.cu").write_text(KERNEL)
    mep, m, _ex = make_mep(str(tmp_path / "app"), "spelled", str(tmp_path / "mep"))
    n = VALUES["n"][1]
    d = tmp_path / "dump" / "launch2"
    d.mkdir(parents=True)
    (tmp_path / "dump" / "summary.txt").write_text("kernel spelled\nlaunches 3\n")
    (d / "arg0.before.bin").write_bytes(struct.pack(f"<{n}f", *[0.0] * n))
    (d / "arg0.after.bin").write_bytes(struct.pack(f"<{n}f", *[1.0] * n))
    values = [struct.pack("<" + fmt, v) for fmt, v in VALUES.values()] + [BIAS_BITS]
    args = "".join(f"arg {i + 1} value {len(b)} {b.hex()}\n" for i, b in enumerate(values))
    (d / "record.txt").write_text(
        "launch 2\nsite k.cu:9\nkernel spelled\nnargs 8\ngrid 1 1 1\nblock 96 1 1\nshared_mem 0\nstream 0\n"
        f"arg 0 pointer 4 {4 * n} 0 139800000000000 device cuMemGetAddressRange\n{args}done\n")
    got = collect(tmp_path / "dump", mep, m, want="--launch 2", run_cmd="./app", build_cmd="make")
    save(got.manifest, mep)
    m2 = load(mep)
    check_manifest(m2, mep / "mep.toml")
    p = {q.name: q for q in m2.params}
    assert {k: p[k].value for k in VALUES} == {k: v for k, (_f, v) in VALUES.items()}
    assert p["bias"].value == 1.5
    assert not any("could not be decoded" in note for note in got.notes), got.notes
