"""Issue 29, class 6: `sizeof` of CUDA's vector types and of the application's structs is evaluated as nvcc lays them
out on a 64-bit host (3-vectors unpadded, double3 aligned to 8, float4 to 16, a struct to its widest member), or the
value is FILL-IN (a union, an over-aligned struct): never a size off by padding. Written here from scratch.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from s2s.extract.mep_writer import make_mep
from s2s.mep.manifest import FILL_IN

STRUCTS = """struct Inner { char tag; double3 pos; };
struct Outer { char c; Inner in; short s; };
struct Wide { char c; float4 v; };
struct Small { char a; char3 b; short2 s; };
union Either { float f; double d; };
struct __align__(16) Padded { float x; };
"""
SIZES = {"double3": 24, "char3": 3, "longlong2": 16, "Inner": 32, "Outer": 48, "Wide": 32, "Small": 8}
UNKNOWN = ["Either", "Padded"]


def _app() -> str:
    kernels = "".join(f"__global__ void k_{t}({t}* a) {{ a[threadIdx.x] = a[0]; }}\n" for t in [*SIZES, *UNKNOWN])
    launches = "".join(f"  {{ {t}* d; cudaMalloc((void**)&d, 960); k_{t}<<<960 / sizeof({t}), 1>>>(d); }}\n"
                       for t in [*SIZES, *UNKNOWN])
    return "#include <cuda_runtime.h>\n" + STRUCTS + kernels + "int main() {\n" + launches + "  return 0;\n}\n"


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sizes") / "app"
    root.mkdir()
    (root / "main.cu").write_text(_app())
    return root


@pytest.mark.parametrize("ctype", sorted(SIZES))
def test_sizeof_is_the_compilers(tree: Path, tmp_path: Path, ctype: str) -> None:
    m = make_mep(str(tree), f"k_{ctype}", str(tmp_path / "m"))[1]
    assert m.launch.grid[0] == 960 // SIZES[ctype], m.launch.source
    assert {p.name: p.count for p in m.params}["a"] == 960 // SIZES[ctype]


@pytest.mark.parametrize("ctype", UNKNOWN)
def test_sizeof_of_a_union_or_an_over_aligned_struct_is_fill_in(tree: Path, tmp_path: Path, ctype: str) -> None:
    m = make_mep(str(tree), f"k_{ctype}", str(tmp_path / "m"))[1]
    assert m.launch.grid[0] == FILL_IN, m.launch.source


def test_the_sizes_are_nvccs(tmp_path: Path) -> None:
    """The table above is what nvcc itself says (static assertions compiled, no GPU needed)."""
    checks = "".join(f"static_assert(sizeof({t}) == {n}, \"{t}\");\n" for t, n in SIZES.items())
    (tmp_path / "sizes.cu").write_text("#include <cuda_runtime.h>\n" + STRUCTS + checks)
    got = subprocess.run(["nvcc", "-c", "-o", str(tmp_path / "sizes.o"), str(tmp_path / "sizes.cu")],
                         capture_output=True, text=True)
    assert got.returncode == 0, got.stderr


TEMPLATED = """#include <cuda_runtime.h>
template <typename T> __global__ void fill(T* a, int n) { int i = threadIdx.x; if (i < n) a[i] = T(1); }
template <typename T> __global__ void fill_b(T* a, int n) { int i = threadIdx.x; if (i < n) a[i] = T(2); }
template <typename T> void run(int n) {
  size_t bytes = n * sizeof(T);
  T* d;
  cudaMalloc((void**)&d, bytes);
  fill<<<(n + 127) / 128, 128>>>(d, n);
}
template <typename T> void run_either(int n, bool big) {
  T* d;
  cudaMalloc((void**)&d, n * sizeof(T));
  fill_b<<<1, 32>>>(d, n);
}
int main(int argc, char** argv) {
  run<double>(1000);
  if (argc > 1) run_either<float>(64, true); else run_either<char>(64, false);
  return 0;
}
"""


def test_sizeof_of_the_launching_functions_template_parameter(tmp_path: Path) -> None:
    """`n * sizeof(T)` in `template <typename T> void run(int n)` called as run<double>: T's size from that call (as the
    launch's template arguments are resolved); calls that disagree (which runs is known at run time only): FILL-IN."""
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "main.cu").write_text(TEMPLATED)
    m = make_mep(str(tmp_path / "app"), "fill", str(tmp_path / "m"))[1]
    assert m.template_args == "double" and {p.name: p.count for p in m.params}["a"] == 1000, m.params
    assert "sizeof(T) = 8" in {p.name: p.source for p in m.params}["a"]
    m2 = make_mep(str(tmp_path / "app"), "fill_b", str(tmp_path / "m2"))[1]
    assert {p.name: p.count for p in m2.params}["a"] == FILL_IN
