"""The passes on kernels of Parboil's cuda_base shapes (our own text): every pipeline verified and timed against the original.

    python bench/gpu_parboil_shapes.py --dry --work /tmp/gps --out DIR     # here: write the MEPs, apply, nvcc-build all
    python bench/gpu_parboil_shapes.py --work /tmp/gps --out DIR           # GPU (about 2-4 minutes on an H200)

gemm_nt_unguarded: sgemm's naive NT product at 1024^3 (no guard: the launch covers the outputs exactly, operands
loaded into locals, leading dimensions as parameters), 16x16 blocks; contraction-tiling and register-blocking keep
the launch. lattice_potential: cp's cenergy shape at 512 x 512 points and 4000 charges in __constant__ memory
(16x8 blocks), thread-coarsen's jam form along x and y, alone and with fast-math. Writes
DIR/gpu_parboil_shapes.{json,md} through bench/gpu_model_passes.py's runner (build in parallel, then verify on
several input sets and time alternately with the original, one variant at a time).
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpu_model_passes as gmp  # noqa: E402
from gpu_model_passes import Case, _buf, _flt, _int  # noqa: E402
from provenance import write_result  # noqa: E402

from s2s.mep.manifest import LaunchSpec, Manifest, SymbolSpec, save  # noqa: E402

N, W, ATOMS = 1024, 512, 4000

GEMM_NT = """\
__global__ void gemm_nt_unguarded(const float *x, int ldx, const float *y, int ldy, float *z, int ldz, int depth,
                                  float alpha, float beta)
{
    float sum = 0.0f;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    for (int p = 0; p < depth; ++p) {
        float u = x[col + p * ldx];
        float v = y[row + p * ldy];
        sum += u * v;
    }
    z[col + row * ldz] = z[col + row * ldz] * beta + alpha * sum;
}
"""
LATTICE = f"""\
__constant__ float4 charges[{ATOMS}];

__global__ void lattice_potential(int ncharges, float h, float *phi)
{{
    unsigned int ix = __umul24(blockIdx.x, blockDim.x) + threadIdx.x;
    unsigned int iy = __umul24(blockIdx.y, blockDim.y) + threadIdx.y;
    unsigned int cell = __umul24(gridDim.x, blockDim.x) * iy + ix;
    float px = h * ix, py = h * iy;
    float v = 0.0f;
    for (int q = 0; q < ncharges; ++q) {{
        float dx = px - charges[q].x;
        float dy = py - charges[q].y;
        float r = 1.0f / sqrtf(dx * dx + dy * dy + charges[q].z);
        v += charges[q].w * r;
    }}
    phi[cell] += v;
}}
"""
CASES = (
    Case("gemm_nt_unguarded", GEMM_NT,
         [_buf("x", "in", N * N), _int("ldx", N), _buf("y", "in", N * N), _int("ldy", N), _buf("z", "inout", N * N), _int("ldz", N),
          _int("depth", N), _flt("alpha", 1.0), _flt("beta", 0.0)], (N // 16, N // 16, 1), (16, 16, 1),
         ("contraction-tiling{tile=32 rows=4}", "contraction-tiling{tile=16 rows=1}", "register-blocking{tile=64 rx=4 ry=4}",
          "restrict-const,register-blocking{tile=64 rx=4 ry=4}", "launch-config{block=32x8},register-blocking{tile=64 rx=4 ry=4}",
          "launch-config{block=32x16},register-blocking{tile=128 rx=8 ry=4}"),
         2.0 * N ** 3, 4.0 * 3 * N * N),
    Case("lattice_potential", LATTICE, [_int("ncharges", ATOMS), _flt("h", 0.1), _buf("phi", "inout", W * W)], (W // 16, W // 8, 1),
         (16, 8, 1),
         ("fast-math", "thread-coarsen{axis=x factor=4 jam=1}", "thread-coarsen{axis=x factor=8 jam=1}",
          "thread-coarsen{axis=y factor=4 jam=1}", "thread-coarsen{axis=x factor=8 jam=1},fast-math",
          "thread-coarsen{axis=x factor=4 jam=1},fast-math"),
         9.0 * W * W * ATOMS, 4.0 * 2 * W * W),
)


def make(case: Case, work: Path) -> Path:
    mep = work / case.name
    mep.mkdir(parents=True, exist_ok=True)
    (mep / "kernel.cu").write_text(case.source)
    symbols = [SymbolSpec("charges", "float4", ATOMS)] if "charges" in case.source else []
    save(Manifest(kernel=case.name, backend="cuda", kernel_file="kernel.cu", origin={"file": "bench/gpu_parboil_shapes.py"},
                  params=case.params, symbols=symbols, launch=LaunchSpec(grid=case.grid, block=case.block), repetitions=20, warmup=3,
                  timeout_s=120.0), mep)
    return mep


def _write(out: Path, name: str, doc: dict[str, object], md: str) -> None:
    write_result(out, name.replace("gpu_model_passes", "gpu_parboil_shapes"), doc,
                 md.replace("# Model-derived passes on", "# Parboil-shaped kernels on"))


if __name__ == "__main__":
    gmp.CASES, gmp.make, gmp.write_result = CASES, make, _write  # type: ignore[assignment]
    raise SystemExit(gmp.main())
