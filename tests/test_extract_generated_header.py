"""A header only the build writes (a generator run by the Makefile before the compile, as NPB's setparams writes
npbparams.hpp): `s2s extract --build-cmd` runs the build in a scratch copy until the header exists, stops it, and
extracts with the real values (the launch and the sizes exact, no FILL-IN, the kernel file compiling alone); the
tree is never written, and a missing header that no build file names runs no build. Fixture written here."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import needs_nvcc

from s2s.extract.mep_writer import make_mep

MAIN = """#include <cuda_runtime.h>
#include "params.h"
__global__ void scale(float* a, float s) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < CELLS) a[i] *= s;
}
int main() {
  float* d;
  cudaMalloc((void**)&d, CELLS * sizeof(float));
  scale<<<CELLS / BLOCK, BLOCK>>>(d, 0.5f);
  cudaDeviceSynchronize();
  return 0;
}
"""
GEN = 'echo "#define CELLS 8192"\necho "#define BLOCK 256"\n'


def _app(root: Path, ran: Path) -> Path:
    root.mkdir()
    (root / "main.cu").write_text(MAIN)
    (root / "gen.sh").write_text(f"touch {ran}\n" + GEN)
    (root / "Makefile").write_text("app: main.o\n\tnvcc -arch=sm_90 -o app main.o\n"
                                   "main.o: main.cu params.h\n\tnvcc -arch=sm_90 -c main.cu -o main.o\n"
                                   "params.h: gen.sh\n\tsh gen.sh > params.h\n")
    return root


@needs_nvcc
@pytest.mark.slow
def test_a_header_the_build_writes_is_read_from_the_build(tmp_path: Path) -> None:
    ran = tmp_path / "generator-ran"
    app = _app(tmp_path / "app", ran)
    before = sorted(p.name for p in app.iterdir())
    out, m, _ex = make_mep(str(app), "scale", str(tmp_path / "mep"), build_cmd="make")
    assert ran.exists()  # the build ran (in a scratch copy)
    assert sorted(p.name for p in app.iterdir()) == before  # the tree is not written: no params.h, no main.o
    assert m.launch.grid == (32, 1, 1) and m.launch.block == (256, 1, 1), m.launch
    assert (next(p for p in m.params if p.name == "a").count == 8192) and not m.unfilled(), m.unfilled()
    assert str(tmp_path / "app") in (out / "mep.toml").read_text() and "s2s-built-headers" not in (out / "mep.toml").read_text()
    assert any("the build command writes, params.h" in n for n in m.notes), m.notes
    p = subprocess.run(["nvcc", "-arch=sm_90", *m.flags, "-c", str(out / m.kernel_file), "-o", str(tmp_path / "k.o")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def test_a_missing_header_no_build_file_names_runs_no_build(tmp_path: Path) -> None:
    ran = tmp_path / "generator-ran"
    app = _app(tmp_path / "app", ran)
    (app / "Makefile").write_text("app: main.cu\n\tsh gen.sh > cfg.h; nvcc -arch=sm_90 -o app main.cu\n")
    _out, m, _ex = make_mep(str(app), "scale", str(tmp_path / "mep"), build_cmd="make")
    assert not ran.exists() and m.unfilled()  # not guessed: FILL-IN
