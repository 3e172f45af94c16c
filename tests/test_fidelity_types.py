"""Issue 29, class 6: an unsigned parameter keeps its type in mep.toml (`unsigned int n` was typed int, so a value
of 3e9 or a buffer of unsigned elements was filled and compared as signed), and a cast to an integer type converts
as C does (modulo 2^bits). Written here from scratch.
"""
from __future__ import annotations

from pathlib import Path

from conftest import needs_nvcc

from s2s.extract.mep_writer import make_mep
from s2s.lang.cexpr import try_evaluate

APP = """#include <cuda_runtime.h>
__global__ void k(const unsigned* __restrict__ keys, unsigned int* out, unsigned int n, unsigned short m,
                  unsigned long long int big, signed char c, long int w) {
  unsigned int i = threadIdx.x;
  if (i < n) out[i] = keys[i] + m + (unsigned)big + c + w;
}
int main() {
  unsigned *keys, *out;
  cudaMalloc((void**)&keys, 64 * sizeof(unsigned));
  cudaMalloc((void**)&out, 64 * sizeof(unsigned int));
  k<<<1, 64>>>(keys, out, 3000000000u, (unsigned short)70000, 5ull, (signed char)-3, 7L);
  return 0;
}
"""


def test_unsigned_parameters_keep_their_types(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "main.cu").write_text(APP)
    m = make_mep(str(tmp_path / "app"), "k", str(tmp_path / "m"))[1]
    elem = {p.name: p.elem for p in m.params}
    assert elem == {"keys": "unsigned int", "out": "unsigned int", "n": "unsigned int", "m": "unsigned short",
                    "big": "unsigned long long", "c": "signed char", "w": "long"}, elem
    value = {p.name: p.value for p in m.params}
    assert (value["n"], value["m"], value["big"], value["c"], value["w"]) == (3000000000, 4464, 5, -3, 7), value


def test_casts_to_integer_types_convert_as_c_does() -> None:
    def none(_name: str) -> None:
        return None

    assert try_evaluate("(unsigned)(-1)", none) == 4294967295
    assert try_evaluate("(int)3000000000", none) == -1294967296
    assert try_evaluate("(unsigned char)300 + (long)2.7", none) == 46


def test_math_functions_spelled_with_std_are_evaluated() -> None:
    """`dim3 blocks(std::ceil(w / (float)TSIZE), h)`: the std:: spelling of a math function computes as the C one;
    a function not known stays unknown (the value FILL-IN, never a guess)."""
    def none(_name: str) -> None:
        return None

    assert try_evaluate("(unsigned)std::ceil(640 / (float)4)", none) == 160
    assert try_evaluate("(int)std::floor(7 / 2.0) + (int)floorf(3.5f) + (int)std::sqrt(16.0)", none) == 10
    assert try_evaluate("std::max(3, 9) * (int)std::pow(2, 5) + (int)log2(1024)", none) == 298
    assert try_evaluate("std::lgamma(3.0)", none) is None


STRUCT_APP = """#include <cuda_runtime.h>
#include <stdlib.h>
struct Dims { int nx; int ny; float h; };
__global__ void sweep(float* a, Dims d) { a[threadIdx.x] = d.nx * d.h + d.ny; }
int main(int argc, char** argv) {
  float* a;
  cudaMalloc((void**)&a, 64 * sizeof(float));
  Dims d;
  d.nx = 64;
  d.ny = atoi(argv[1]);  // from the command line: not known before the run
  d.h = 0.5f;
  sweep<<<1, 64>>>(a, d);
  return 0;
}
"""


def test_a_struct_passed_by_value_is_exact_or_fill_in(tmp_path: Path) -> None:
    """A struct by value with a field not known before the run was "random" (every field drawn from [0.5, 1.5]): on
    the H200, a development kernel's dims struct (cells and angles, 5 and 33) read as random sizes. Now FILL-IN, the
    hint naming the missing fields and the found ones; every field known: the values."""
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "main.cu").write_text(STRUCT_APP)
    _, m, _ = make_mep(str(tmp_path / "app"), "sweep", str(tmp_path / "mep"))
    d = {p.name: p for p in m.params}["d"]
    assert d.value == "FILL-IN" and "fields ny not found" in d.hint and "nx = 64" in d.hint, (d.value, d.hint)
    assert any("params.d" in u for u in m.unfilled())


FORWARD_APP = """#include <cstdint>
#include <cuda_runtime.h>
template <typename T> struct Moments;
struct Cell;
struct Grid { Cell* cells; int count; };
struct Cell { Grid* owner; float value; };

template <typename T>
__device__ Moments<T> moments_add(Moments<T> s, T x) {
  Moments<T> r;
  r.n = s.n + 1;
  T d = x - s.mean;
  r.mean = s.mean + d / (T)r.n;
  r.m2 = s.m2 + d * (x - r.mean);
  return r;
}

template <typename T>
struct Moments {
  T mean;
  T m2;
  int64_t n;
};

template <typename T>
__global__ void row_moments(int64_t cols, const T* x, T* mean, T* var, Grid g) {
  Moments<T> s = {0, 0, 0};
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) s = moments_add(s, x[blockIdx.x * cols + j]);
  if (threadIdx.x == 0) { mean[blockIdx.x] = s.mean; var[blockIdx.x] = s.m2 / (T)s.n + (T)g.count; }
}

int main() {
  float *x, *m, *v;
  cudaMalloc((void**)&x, 8 * 32 * sizeof(float));
  cudaMalloc((void**)&m, 8 * sizeof(float));
  cudaMalloc((void**)&v, 8 * sizeof(float));
  Grid g = {nullptr, 0};
  row_moments<float><<<8, 1>>>((int64_t)32, x, m, v, g);
  return 0;
}
"""


@needs_nvcc
def test_a_forward_declared_type_brings_its_definition(tmp_path: Path) -> None:
    """`template <typename T> struct Moments;` before the functions that use it, its definition further down: the MEP
    held the declaration alone (`Moments<float>` an incomplete type, the kernel file did not compile). A type used
    through a pointer before its definition (Cell) keeps its declaration too. Written here from scratch."""
    import subprocess

    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "main.cu").write_text(FORWARD_APP)
    mep = make_mep(str(tmp_path / "app"), "row_moments", str(tmp_path / "m"))[0]
    text = (Path(mep) / "kernel.cu").read_text()
    assert "template <typename T> struct Moments;" in text and "int64_t n;" in text
    assert text.index("struct Cell;") < text.index("struct Grid {") < text.index("struct Cell {")
    proc = subprocess.run(["nvcc", "-arch=sm_90", "-c", "kernel.cu", "-o", str(tmp_path / "k.o")], cwd=mep,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
