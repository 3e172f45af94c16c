"""Issue 29, class 4: headers the build finds outside the application's directory are found, and the build's -I paths
are written to mep.toml's flags, so that the kernel file compiles alone where the tree is.

The suite below is laid out like the development catalogue: each application in its own directory, shared headers
in sibling directories (`../utilities/` reached by a relative include, `../include/` by the Makefile's -I). The
application directory alone is extracted. Written here from scratch.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import tomllib
from conftest import needs_nvcc

from s2s.extract.mep_writer import make_mep

SUITE = {
    "utilities/math_helpers.h": "#pragma once\n__host__ __device__ inline float squared(float x) { return x * x; }\n",
    "include/tile.h": "#pragma once\n#define TILE 128\n",
    "square/Makefile": "all: square\nsquare: main.cu\n\tnvcc -O2 -I../include -o square main.cu\n",
    "square/main.cu": """#include <cuda_runtime.h>
#include "../utilities/math_helpers.h"
#include "tile.h"
__global__ void square_all(float* a, int n) {
  int i = blockIdx.x * TILE + threadIdx.x;
  if (i < n) a[i] = squared(a[i]);
}
int main() {
  float* d;
  cudaMalloc((void**)&d, 1024 * sizeof(float));
  square_all<<<1024 / TILE, TILE>>>(d, 1024);
  return 0;
}
""",
}


def _suite(root: Path) -> Path:
    for rel, text in SUITE.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_sibling_headers_are_included_as_the_build_does(tmp_path: Path) -> None:
    suite = _suite(tmp_path / "suite")
    out, m, _ = make_mep(str(suite / "square"), "square_all", str(tmp_path / "m"))
    text = (out / m.kernel_file).read_text()
    assert '#include "../utilities/math_helpers.h"' in text and '#include "tile.h"' in text
    assert "__has_include" not in text  # found: not hidden behind a guard that fails later with a missing name
    flags = tomllib.loads((out / "mep.toml").read_text())["flags"]
    assert f"-I{suite / 'square'}" in flags and f"-I{suite / 'include'}" in flags, flags
    assert m.launch.grid == (8, 1, 1) and m.launch.block == (128, 1, 1)


def test_include_paths_of_compile_commands_are_in_the_flags(tmp_path: Path) -> None:
    suite = _suite(tmp_path / "suite")
    (suite / "square" / "Makefile").unlink()
    entry = {"directory": str(suite / "square"), "file": "main.cu",
             "arguments": ["nvcc", "-I../include", "-DUNUSED=1", "-c", "main.cu"]}
    (suite / "square" / "compile_commands.json").write_text(json.dumps([entry]))
    out, _m, _ = make_mep(str(suite / "square"), "square_all", str(tmp_path / "m"))
    flags = tomllib.loads((out / "mep.toml").read_text())["flags"]
    assert f"-I{suite / 'include'}" in flags and "-DUNUSED=1" in flags, flags


@needs_nvcc
@pytest.mark.slow
def test_kernel_file_compiles_alone_with_the_flags(tmp_path: Path) -> None:
    suite = _suite(tmp_path / "suite")
    out, m, _ = make_mep(str(suite / "square"), "square_all", str(tmp_path / "m"))
    flags = tomllib.loads((out / "mep.toml").read_text())["flags"]
    p = subprocess.run(["nvcc", "-arch=sm_90", *flags, "-c", str(out / m.kernel_file), "-o", str(tmp_path / "k.o")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
