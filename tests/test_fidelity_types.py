"""Issue 29, class 6: an unsigned parameter keeps its type in mep.toml (`unsigned int n` was typed int, so a value
of 3e9 or a buffer of unsigned elements was filled and compared as signed), and a cast to an integer type converts
as C does (modulo 2^bits). Written here from scratch.
"""
from __future__ import annotations

from pathlib import Path

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
