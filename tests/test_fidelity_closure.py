"""Issue 29, class 5: the kernel file holds everything the kernel needs, however the need is spelled.

Names used only in `__launch_bounds__` (libclang's references do not reach attributes), free operators (no name in
the kernel spells `operator+`; also on a CUDA vector type), a type named only by the launch's template arguments,
`using namespace` directives the kernel's unqualified names rely on, and a project header that defines the kernel's
types. Each kernel is extracted with the name-based closure and with libclang (a compile_commands.json), and its
file must compile alone. Written here from scratch.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import needs_nvcc
from session_builds import nvcc_checks

from s2s.extract.mep_writer import make_mep

APP = {
    "inc/real.h": "#ifndef REAL_H\n#define REAL_H\ntypedef double real_t;\ntypedef int idx_t;\n#endif\n",
    # a class template that only declares its members; its explicit specializations define them
    "inc/directed.h": """#pragma once
template <class T> struct directed_ops {
  __device__ T plus_lo(const T &a, const T &b);
  __device__ T plus_hi(const T &a, const T &b) const;
};
template <> struct directed_ops<float> {
  __device__ float plus_lo(const float &a, const float &b) { return __fadd_rd(a, b); }
  __device__ float plus_hi(const float &a, const float &b) const { return __fadd_ru(a, b); }
};
template <> struct directed_ops<double> {
  __device__ double plus_lo(const double &a, const double &b) { return __dadd_rd(a, b); }
  __device__ double plus_hi(const double &a, const double &b) const { return __dadd_ru(a, b); }
};
""",
    "main.cu": """#include <cuda_runtime.h>
#include "inc/real.h"
#include "inc/directed.h"
static const int warp_w = 16;
static const int block_threads = warp_w * warp_w;
struct Pair { float lo, hi; };
__host__ __device__ inline Pair operator+(const Pair& a, const Pair& b) { return Pair{a.lo + b.lo, a.hi + b.hi}; }
__host__ __device__ inline bool operator<(const Pair& a, const Pair& b) { return a.hi < b.hi; }
__device__ inline float4 operator*(float4 v, float s) { return make_float4(v.x * s, v.y * s, v.z * s, v.w * s); }
namespace shapes { __device__ inline float area(float w, float h) { return w * h; } }
using namespace shapes;
static __global__ __launch_bounds__(block_threads, 2048 / block_threads)
void bounded(float* a) { a[threadIdx.x] = 1.f; }
__global__ void pairs(Pair* a, const Pair* b) { int i = threadIdx.x; if (a[i] < b[i]) a[i] = a[i] + b[i]; }
__global__ void unqualified(float* a) { a[threadIdx.x] = area(a[threadIdx.x], 2.f); }
struct Rgba { unsigned char r, g, b, a; };
template <typename T> __global__ void copy_t(T* dst, const T* src) { dst[threadIdx.x] = src[threadIdx.x]; }
__global__ void scale4(float4* v, float s) { v[threadIdx.x] = v[threadIdx.x] * s; }
__global__ void typed(real_t* a, idx_t n) { idx_t i = threadIdx.x; if (i < n) a[i] = (real_t)i; }
template <int BS, int ITEMS> __global__ void tiled_t(float* a) { a[blockIdx.x * BS + threadIdx.x] = (float)ITEMS; }
template <class S> class Gen {
 public:
  __host__ __device__ explicit Gen(S s) : s_(s) {}
  template <class R> __host__ __device__ R draw();
 private:
  S s_;
};
template <> template <> __host__ __device__ unsigned Gen<unsigned>::draw<unsigned>() { s_ = s_ * 1664525u + 1013904223u; return s_; }
template <> template <> __host__ __device__ float Gen<unsigned>::draw<float>() { return draw<unsigned>() * 2.3283064e-10f; }
template <class T, class Rng> __global__ void drawn(T* out) { Rng g(threadIdx.x); out[threadIdx.x] = g.template draw<T>(); }
template <class T, class Rng> void fill_random(T* d) { drawn<T, Rng><<<1, 256>>>(d); }
template <class T> __global__ void widen(T* lo, T* hi, T d) {
  directed_ops<T> r; int i = threadIdx.x; lo[i] = r.plus_lo(lo[i], -d); hi[i] = r.plus_hi(hi[i], d);
}
int main() {
  float* d; Pair* p; real_t* r;
  const int bs = 128;
  cudaMalloc((void**)&d, 256 * sizeof(float));
  cudaMalloc((void**)&p, 256 * sizeof(Pair));
  cudaMalloc((void**)&r, 256 * sizeof(real_t));
  bounded<<<1, block_threads>>>(d);
  pairs<<<1, 256>>>(p, p);
  unqualified<<<1, 256>>>(d);
  typed<<<1, 256>>>(r, 256);
  float4* q;
  cudaMalloc((void**)&q, 256 * sizeof(float4));
  scale4<<<1, 256>>>(q, 2.f);
  Rgba* px;
  cudaMalloc((void**)&px, 256 * sizeof(Rgba));
  copy_t<Rgba><<<1, 256>>>(px, px);
  tiled_t<bs, bs * 2><<<2, bs>>>(d);  // template arguments that are variables of the host function
  fill_random<float, Gen<unsigned>>(d);  // Gen's member specializations are defined after the class
  widen<float><<<1, 256>>>(d, d, 0.5f);
  return 0;
}
""",
}
KERNELS = ["bounded", "pairs", "unqualified", "typed", "scale4", "copy_t", "tiled_t", "drawn", "widen"]


def _tree(root: Path, with_flags: bool) -> Path:
    for rel, text in APP.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    if with_flags:
        entry = {"directory": str(root), "file": "main.cu", "arguments": ["nvcc", "-O2", "-c", "main.cu"]}
        (root / "compile_commands.json").write_text(json.dumps([entry]))
    return root


@pytest.mark.parametrize("with_flags", [False, True], ids=["names", "clang"])
def test_closure_holds_what_the_kernel_needs(tmp_path: Path, with_flags: bool) -> None:
    tree = _tree(tmp_path / "app", with_flags)
    texts = {}
    for k in KERNELS:
        out, m, _ = make_mep(str(tree), k, str(tmp_path / k))
        texts[k] = (out / m.kernel_file).read_text()
    assert "static const int block_threads" in texts["bounded"] and "static const int warp_w" in texts["bounded"]
    assert "operator+" in texts["pairs"] and "operator<" in texts["pairs"]
    assert "using namespace shapes;" in texts["unqualified"] and "inline float area" in texts["unqualified"]
    assert "typedef double real_t;" in texts["typed"] and "typedef int idx_t;" in texts["typed"]
    assert "operator*(float4 v, float s)" in texts["scale4"] and "operator+" not in texts["scale4"]  # on a vector type
    assert "struct Rgba" in texts["copy_t"] and "copy_t<Rgba>" in texts["copy_t"]  # named only by the launch
    assert "int main" not in texts["tiled_t"]  # a host variable as template argument does not pull its function in
    assert "Gen<unsigned>::draw<float>()" in texts["drawn"] and "Gen<unsigned>::draw<unsigned>()" in texts["drawn"]
    # members the primary template declares are no calls of functions defined nowhere; its specializations come along
    assert "struct directed_ops<float>" in texts["widen"] and "struct directed_ops<double>" in texts["widen"]


@needs_nvcc
@pytest.mark.slow
@pytest.mark.parametrize("with_flags", [False, True], ids=["names", "clang"])
def test_kernel_files_compile_alone(tmp_path: Path, with_flags: bool) -> None:
    tree = _tree(tmp_path / "app", with_flags)
    files = []
    for k in KERNELS:
        out, m, _ = make_mep(str(tree), k, str(tmp_path / k))
        files.append(out / m.kernel_file)
    p = nvcc_checks("nvcc", ["-arch=sm_90", "-c"], files, tmp_path, 900)  # a failure names the file (tmp_path/KERNEL)
    assert p.returncode == 0, p.stderr[-3000:]
