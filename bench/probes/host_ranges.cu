// Which allocations can the capture runtime size? For each kind of memory a kernel can be given, whether
// cuMemGetAddressRange and cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_RANGE_SIZE) know its extent from an interior
// pointer, and what cudaPointerGetAttributes calls it. Run on the GPU machine:
//   nvcc -arch=sm_90 -o /tmp/host_ranges bench/probes/host_ranges.cu -lcuda && /tmp/host_ranges
#include <cstdio>
#include <cstdlib>
#include <cuda.h>
#include <cuda_runtime.h>

static void probe(const char* what, void* base, size_t bytes) {
  CUdeviceptr p = (CUdeviceptr)((char*)base + 64), start = 0;
  size_t size = 0, rsize = 0;
  CUresult r1 = cuMemGetAddressRange(&start, &size, p);
  CUresult r2 = cuPointerGetAttribute(&rsize, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p);
  cudaPointerAttributes at{};
  cudaError_t e = cudaPointerGetAttributes(&at, (char*)base + 64);
  if (e != cudaSuccess) cudaGetLastError();
  printf("%-28s bytes %zu | cuMemGetAddressRange %s size %zu start_ok %d | RANGE_SIZE %s %zu | type %d\n", what, bytes,
         r1 == CUDA_SUCCESS ? "ok" : "fail", size, (void*)start == base, r2 == CUDA_SUCCESS ? "ok" : "fail", rsize,
         e == cudaSuccess ? (int)at.type : -1);
}

int main() {
  cudaFree(0);
  const size_t n = (1 << 20) + 12;
  void *d, *m, *h, *hm, *sys = malloc(n);
  cudaMalloc(&d, n);
  cudaMallocManaged(&m, n);
  cudaMallocHost(&h, n);
  cudaHostAlloc(&hm, n, cudaHostAllocMapped);
  void* reg = malloc(n);
  cudaHostRegister(reg, n, cudaHostRegisterDefault);
  probe("cudaMalloc", d, n);
  probe("cudaMallocManaged", m, n);
  probe("cudaMallocHost", h, n);
  probe("cudaHostAlloc(Mapped)", hm, n);
  probe("malloc + cudaHostRegister", reg, n);
  probe("malloc (pageable)", sys, n);
  return 0;
}
