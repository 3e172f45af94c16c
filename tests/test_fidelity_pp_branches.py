"""Issue 29, class 3: host code under `#ifdef` is read as the launching unit's macros select it (a project header it
includes defines USE_DOUBLE), never by taking the `#else` branch's declarations because they come later in the
text; conditions the macros do not decide (a compiler's own macro, an include guard) keep every branch. Written here
from scratch.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from s2s.extract.mep_writer import make_mep
from s2s.extract.pp_branches import inactive_ranges

KERNEL = """#ifndef KERN_CUH
#define KERN_CUH
#include "include/params.h"
__global__ void k(
#ifdef USE_DOUBLE
  double* a,
#else
  float* a,
#endif
  int n) { int i = threadIdx.x; if (i < n) a[i] = 2 * a[i]; }
#endif
"""
MAIN = """#include <cuda_runtime.h>
#include "kern.cuh"
int main() {
#ifdef USE_DOUBLE
  double* d;
  int elems = 2 * WIDTH;
#elif WIDTH > 100
  float* d;
  int elems = WIDTH / 2;
#else
  float* d;
  int elems = WIDTH;
#endif
#ifdef __CUDACC_RDC__
  elems = 1;
#endif
  cudaMalloc((void**)&d, elems * sizeof(*d));
  k<<<1, elems>>>(d, elems);
  return 0;
}
"""


@pytest.mark.parametrize("header, elem, elems", [("#define USE_DOUBLE\n#define WIDTH 64\n", "double", 128),
                                                 ("#define WIDTH 64\n", "float", 64),
                                                 ("#define WIDTH 512\n", "float", 256)])
def test_host_declarations_follow_the_units_macros(tmp_path: Path, header: str, elem: str, elems: int) -> None:
    root = tmp_path / "app"
    (root / "include").mkdir(parents=True)
    (root / "include" / "params.h").write_text("#pragma once\n" + header)
    (root / "kern.cuh").write_text(KERNEL)
    (root / "main.cu").write_text(MAIN.replace("#ifdef __CUDACC_RDC__\n  elems = 1;\n#endif\n", ""))
    m = make_mep(str(root), "k", str(tmp_path / "m"))[1]
    p = {q.name: q for q in m.params}
    assert (p["a"].elem, p["a"].count, p["n"].value, m.launch.block[0]) == (elem, elems, elems, elems), p["a"].source


def test_a_condition_the_macros_do_not_decide_keeps_its_branches(tmp_path: Path) -> None:
    root = tmp_path / "app"
    (root / "include").mkdir(parents=True)
    (root / "include" / "params.h").write_text("#define WIDTH 64\n")
    (root / "kern.cuh").write_text(KERNEL)
    (root / "main.cu").write_text(MAIN)
    m = make_mep(str(root), "k", str(tmp_path / "m"))[1]
    assert m.launch.block[0] == "FILL-IN", m.launch.source  # 64, or 1 under -rdc: not known from the text alone


def test_inactive_ranges() -> None:
    data = b"#ifndef G\n#define G\nint a;\n#ifdef X\nint b;\n#else\nint c;\n#endif\n#if defined(_OPENMP)\nint d;\n#endif\n#endif\n"
    dropped = inactive_ranges(data, {"G": ("", "h:1")})
    assert [data[a:b].decode() for a, b in dropped] == ["int b;\n"]
    dropped = inactive_ranges(data, {"G": ("", "h:1"), "X": ("1", "h:2")})
    assert [data[a:b].decode() for a, b in dropped] == ["int c;\n"]
