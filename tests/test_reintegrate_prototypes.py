"""A kernel declared before its definition (a prototype above main, or in a header) whose winning variant changed its
parameter types (restrict-const made a pointer `const`): the spliced definition no longer matched the prototype, the
launch compiled against the prototype, and the application's link failed with `undefined reference to solve(...,
double*, double*)` (a development application's time loop; its 1.07x winner was thrown away)."""
from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import needs_nvcc

from s2s.reintegrate.splice import header_prototypes, splice_kernel

KERNEL = b"""__global__ void step(const unsigned int n, const double r, double * __restrict__ u, double * __restrict__ v)
{
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i > 0 && i + 1 < n) v[i] = u[i] + r * (u[i - 1] - 2.0 * u[i] + u[i + 1]);
}"""
VARIANT = b"""__global__ void step(const unsigned int n, const double r, const double * __restrict__ u, double * __restrict__ v)
{
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i > 0 && i + 1 < n) v[i] = __ldg(&u[i]) + r * (__ldg(&u[i - 1]) - 2.0 * __ldg(&u[i]) + __ldg(&u[i + 1]));
}"""
PROTOTYPE = b"__global__ void step(const unsigned int n, const double r, double * __restrict__ u, double * __restrict__ v);\n"
MAIN = b"""
int main() {
  const unsigned int n = 1024;
  double *u, *v;
  cudaMalloc(&u, n * sizeof(double));
  cudaMalloc(&v, n * sizeof(double));
  for (int t = 0; t < 10; ++t) {
    step<<<n / 128, 128>>>(n, 0.25, u, v);
    double* w = u; u = v; v = w;
  }
  return cudaDeviceSynchronize() != cudaSuccess;
}

"""


def _file(prototype: bytes = PROTOTYPE) -> tuple[bytes, tuple[int, int]]:
    data = b"#include <cuda_runtime.h>\n// the kernel, declared first\n" + prototype + MAIN + KERNEL + b"\n"
    start = data.index(KERNEL)
    return data, (start, start + len(KERNEL))


def test_the_prototype_takes_the_variants_parameters() -> None:
    data, kernel = _file()
    new = splice_kernel(data, kernel, VARIANT, (0, len(VARIANT)), KERNEL, "cuda", "step")
    assert new.count(b"const double * __restrict__ u") == 2  # the prototype and the definition
    assert b"double * __restrict__ u," not in new.replace(b"const double * __restrict__ u,", b"")
    assert new.endswith(MAIN + VARIANT + b"\n")  # everything else as it was
    assert new.startswith(b"#include <cuda_runtime.h>\n// the kernel, declared first\n__global__ void step(")


def test_an_unchanged_signature_or_a_prototype_with_defaults_is_left_alone() -> None:
    data, kernel = _file()
    same = KERNEL.replace(b"2.0 * u[i]", b"(u[i] + u[i])")
    assert splice_kernel(data, kernel, same, (0, len(same)), KERNEL, "cuda", "step").startswith(data[:kernel[0]])
    defaults = PROTOTYPE.replace(b"const double r,", b"const double r = 0.25,")
    data, kernel = _file(defaults)
    assert defaults in splice_kernel(data, kernel, VARIANT, (0, len(VARIANT)), KERNEL, "cuda", "step")


def test_a_header_prototype_takes_them_too(tmp_path: Path) -> None:
    (tmp_path / "kernels.h").write_bytes(b"#pragma once\n" + PROTOTYPE)
    data, kernel = _file(b'#include "kernels.h"\n')
    (tmp_path / "main.cu").write_bytes(data)
    out = header_prototypes(tmp_path / "main.cu", data, kernel, VARIANT, (0, len(VARIANT)), "cuda", "step", tmp_path)
    (before, after), = out.values()
    assert before == b"#pragma once\n" + PROTOTYPE
    assert after == b"#pragma once\n" + PROTOTYPE.replace(b"double * __restrict__ u", b"const double * __restrict__ u")


@needs_nvcc
def test_the_spliced_application_links(tmp_path: Path) -> None:
    data, kernel = _file()
    (tmp_path / "app.cu").write_bytes(splice_kernel(data, kernel, VARIANT, (0, len(VARIANT)), KERNEL, "cuda", "step"))
    proc = subprocess.run(["nvcc", "-arch=sm_90", "-o", "app", "app.cu"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
