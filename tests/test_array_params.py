"""Kernel parameters spelled as arrays of arrays, `double u[][NY][NZ]` (a pointer to `double[NY][NZ]`), as
time-stepped stencil codes write them. The harness compared the size of the pointee (`double[NY][NZ]`, 256 bytes)
with the element's (`double`) and stopped with "params.u.elem = double differs in size from the kernel's element
type" (both kernels of a development application's time loop, tool-error); the capture runtimes recorded the same
pointee size as the element's, so a count read from them would have been 32 times too small."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from capture_util import first_record
from conftest import needs_nvcc

from s2s.extract.mep_writer import make_mep
from s2s.mep.backends import write_mep_files
from s2s.mep.manifest import save

NX, NY, NZ = 16, 4, 8
SOURCE = f"""#include <cuda_runtime.h>
#define NY {NY}
#define NZ {NZ}
__global__ void smooth(double out[][NY][NZ], const double in[][NY][NZ], int nx) {{
  int x = blockIdx.x, y = threadIdx.y, z = threadIdx.x;
  if (x < nx) out[x][y][z] = 0.5 * (in[x][y][z] + in[x][y][(z + 1) % NZ]);
}}
int main() {{
  int nx = {NX};
  double *a = 0, *b = 0;
  cudaMalloc(&a, nx * NY * NZ * sizeof(double));
  cudaMalloc(&b, nx * NY * NZ * sizeof(double));
  smooth<<<nx, dim3(NZ, NY)>>>((double(*)[NY][NZ])b, (const double(*)[NY][NZ])a, nx);
  cudaDeviceSynchronize();
  return 0;
}}
"""


@pytest.fixture
def app(tmp_path: Path) -> Path:
    root = tmp_path / "app"
    root.mkdir()
    (root / "k.cu").write_text(SOURCE)
    (root / "Makefile").write_text("app: k.cu\n\tnvcc -arch=sm_90 -o app k.cu\n")
    return root


@needs_nvcc
def test_the_harness_builds_for_array_of_array_parameters(app: Path, tmp_path: Path) -> None:
    from s2s.mep.evaluate import build

    mep, m, _ex = make_mep(str(app), "smooth", str(tmp_path / "mep"))
    assert [p.elem for p in m.params] == ["double", "double", "int"]
    m = replace(m, params=[replace(p, count=NX * NY * NZ) if p.role != "scalar" else replace(p, value=NX)
                           for p in m.params])
    save(m, mep)
    write_mep_files(mep, m)
    b = build(mep, None)
    assert b.ok, b.log[-2000:]


@pytest.mark.slow
@needs_nvcc
def test_the_capture_records_the_elements_size_not_the_rows(app: Path, tmp_path: Path) -> None:
    """The instrumented application built with nvcc and run here (no GPU: cudaMalloc fails, the pointers stay null and
    the record of the launch is still written, with each pointer's element size)."""
    _mep, _m, rec = first_record(app, "smooth", tmp_path)
    assert rec.args[0].kind == "null" and rec.args[1].kind == "null", rec.args
    assert rec.args[0].words == ["8"] and rec.args[1].words == ["8"], rec.args  # sizeof(double), not sizeof(double[NY][NZ])
