/*
 * hip/hip_runtime.h - minimal HIP-to-CUDA shim.
 *
 * Lets plain HIP sources be compiled by nvcc when no ROCm installation
 * (hipcc) is available:
 *
 *     nvcc -x cu -arch=sm_90 -I<path>/templates/hip_shim -c foo.hip -o foo.o
 *
 * Every HIP name used by common application code is mapped onto its CUDA
 * runtime equivalent.  Only the runtime API and kernel-side built-ins are
 * covered (no hipBLAS/hipFFT/rocPRIM etc.).  Real HIP installations are not
 * affected: this directory is only put on the include path by Makefiles
 * that fall back to nvcc.
 */
#ifndef HIP_SHIM_HIP_RUNTIME_H
#define HIP_SHIM_HIP_RUNTIME_H

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#ifndef __HIP_PLATFORM_NVIDIA__
#define __HIP_PLATFORM_NVIDIA__ 1
#endif
#ifndef __HIP_PLATFORM_NVCC__
#define __HIP_PLATFORM_NVCC__ 1   /* pre-ROCm-5 spelling */
#endif
#define HIP_SHIM 1

/* ------------------------------------------------------------------ */
/* kernel qualifiers and launch                                         */
/* ------------------------------------------------------------------ */
#ifndef __HIPCC__
#define __HIPCC__ 1
#endif
#if defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
#define __HIP_DEVICE_COMPILE__ 1
#endif

#define __launch_bounds_hip__(...) __launch_bounds__(__VA_ARGS__)

/* hipLaunchKernelGGL(kernel, grid, block, sharedMemBytes, stream, args...) */
#define hipLaunchKernelGGL(kernelName, numBlocks, numThreads, memPerBlock, streamId, ...) \
    do {                                                                                 \
        kernelName<<<(numBlocks), (numThreads), (memPerBlock), (streamId)>>>(__VA_ARGS__); \
    } while (0)

/* protects commas of template kernels: hipLaunchKernelGGL(HIP_KERNEL_NAME(k<T,N>), ...) */
#define HIP_KERNEL_NAME(...) __VA_ARGS__

/* symbols are passed by reference on the CUDA side */
#define HIP_SYMBOL(X) X

/* dynamic shared memory: HIP_DYNAMIC_SHARED(float, sdata) */
#define HIP_DYNAMIC_SHARED(type, var) extern __shared__ type var[];
#define HIP_DYNAMIC_SHARED_ATTRIBUTE

/* old-style thread/block index built-ins */
#define hipThreadIdx_x (threadIdx.x)
#define hipThreadIdx_y (threadIdx.y)
#define hipThreadIdx_z (threadIdx.z)
#define hipBlockIdx_x  (blockIdx.x)
#define hipBlockIdx_y  (blockIdx.y)
#define hipBlockIdx_z  (blockIdx.z)
#define hipBlockDim_x  (blockDim.x)
#define hipBlockDim_y  (blockDim.y)
#define hipBlockDim_z  (blockDim.z)
#define hipGridDim_x   (gridDim.x)
#define hipGridDim_y   (gridDim.y)
#define hipGridDim_z   (gridDim.z)

/* HIP warp shuffles have no mask argument; map them to the *_sync forms
 * with a full mask (CUDA warps are 32 wide). */
template <typename T>
__device__ __forceinline__ T hip_shim_shfl(T var, int src, int width = warpSize)
{ return __shfl_sync(0xffffffffu, var, src, width); }
template <typename T>
__device__ __forceinline__ T hip_shim_shfl_up(T var, unsigned int delta, int width = warpSize)
{ return __shfl_up_sync(0xffffffffu, var, delta, width); }
template <typename T>
__device__ __forceinline__ T hip_shim_shfl_down(T var, unsigned int delta, int width = warpSize)
{ return __shfl_down_sync(0xffffffffu, var, delta, width); }
template <typename T>
__device__ __forceinline__ T hip_shim_shfl_xor(T var, int mask, int width = warpSize)
{ return __shfl_xor_sync(0xffffffffu, var, mask, width); }
#define __shfl(...)      hip_shim_shfl(__VA_ARGS__)
#define __shfl_up(...)   hip_shim_shfl_up(__VA_ARGS__)
#define __shfl_down(...) hip_shim_shfl_down(__VA_ARGS__)
#define __shfl_xor(...)  hip_shim_shfl_xor(__VA_ARGS__)

__device__ __forceinline__ unsigned long long hip_shim_ballot(int pred)
{ return (unsigned long long)__ballot_sync(0xffffffffu, pred); }
#define __ballot(p) hip_shim_ballot(p)

/* ------------------------------------------------------------------ */
/* types                                                               */
/* ------------------------------------------------------------------ */
typedef cudaError_t       hipError_t;
typedef cudaStream_t      hipStream_t;
typedef cudaEvent_t       hipEvent_t;
typedef cudaDeviceProp    hipDeviceProp_t;
typedef cudaMemcpyKind    hipMemcpyKind;
typedef cudaFuncCache     hipFuncCache_t;
typedef cudaPointerAttributes hipPointerAttribute_t;
typedef cudaDeviceAttr    hipDeviceAttribute_t;

/* error codes */
#define hipSuccess                  cudaSuccess
#define hipErrorInvalidValue        cudaErrorInvalidValue
#define hipErrorOutOfMemory         cudaErrorMemoryAllocation
#define hipErrorMemoryAllocation    cudaErrorMemoryAllocation
#define hipErrorNotReady            cudaErrorNotReady
#define hipErrorInvalidDevice       cudaErrorInvalidDevice
#define hipErrorNoDevice            cudaErrorNoDevice
#define hipErrorInvalidDevicePointer cudaErrorInvalidDevicePointer
#define hipErrorLaunchFailure       cudaErrorLaunchFailure

/* memcpy kinds */
#define hipMemcpyHostToHost         cudaMemcpyHostToHost
#define hipMemcpyHostToDevice       cudaMemcpyHostToDevice
#define hipMemcpyDeviceToHost       cudaMemcpyDeviceToHost
#define hipMemcpyDeviceToDevice     cudaMemcpyDeviceToDevice
#define hipMemcpyDefault            cudaMemcpyDefault

/* flags */
#define hipHostMallocDefault        cudaHostAllocDefault
#define hipHostMallocPortable       cudaHostAllocPortable
#define hipHostMallocMapped         cudaHostAllocMapped
#define hipHostMallocWriteCombined  cudaHostAllocWriteCombined
#define hipMemAttachGlobal          cudaMemAttachGlobal
#define hipMemAttachHost            cudaMemAttachHost
#define hipStreamDefault            cudaStreamDefault
#define hipStreamNonBlocking        cudaStreamNonBlocking
#define hipEventDefault             cudaEventDefault
#define hipEventBlockingSync        cudaEventBlockingSync
#define hipEventDisableTiming       cudaEventDisableTiming
#define hipFuncCachePreferNone      cudaFuncCachePreferNone
#define hipFuncCachePreferShared    cudaFuncCachePreferShared
#define hipFuncCachePreferL1        cudaFuncCachePreferL1
#define hipFuncCachePreferEqual     cudaFuncCachePreferEqual

/* device attributes */
#define hipDeviceAttributeMaxThreadsPerBlock      cudaDevAttrMaxThreadsPerBlock
#define hipDeviceAttributeMultiprocessorCount     cudaDevAttrMultiProcessorCount
#define hipDeviceAttributeWarpSize                cudaDevAttrWarpSize
#define hipDeviceAttributeMaxSharedMemoryPerBlock cudaDevAttrMaxSharedMemoryPerBlock
#define hipDeviceAttributeClockRate               cudaDevAttrClockRate

/* ------------------------------------------------------------------ */
/* runtime API                                                         */
/* ------------------------------------------------------------------ */

/* errors */
#define hipGetLastError             cudaGetLastError
#define hipPeekAtLastError          cudaPeekAtLastError
#define hipGetErrorString           cudaGetErrorString
#define hipGetErrorName             cudaGetErrorName

/* devices */
#define hipGetDeviceCount           cudaGetDeviceCount
#define hipSetDevice                cudaSetDevice
#define hipGetDevice                cudaGetDevice
#define hipGetDeviceProperties      cudaGetDeviceProperties
#define hipDeviceGetAttribute       cudaDeviceGetAttribute
#define hipDeviceSynchronize        cudaDeviceSynchronize
#define hipDeviceReset              cudaDeviceReset
#define hipDeviceSetCacheConfig     cudaDeviceSetCacheConfig
#define hipFuncSetCacheConfig       cudaFuncSetCacheConfig
#define hipMemGetInfo               cudaMemGetInfo
#define hipDriverGetVersion         cudaDriverGetVersion
#define hipRuntimeGetVersion        cudaRuntimeGetVersion

/* memory */
#define hipMalloc                   cudaMalloc
#define hipMallocManaged            cudaMallocManaged
#define hipMallocPitch              cudaMallocPitch
#define hipFree                     cudaFree
#define hipHostFree                 cudaFreeHost
#define hipFreeHost                 cudaFreeHost
#define hipMallocHost               cudaMallocHost
#define hipHostRegister             cudaHostRegister
#define hipHostUnregister           cudaHostUnregister
#define hipHostGetDevicePointer     cudaHostGetDevicePointer
#define hipPointerGetAttributes     cudaPointerGetAttributes
#define hipMemcpy                   cudaMemcpy
#define hipMemcpyAsync              cudaMemcpyAsync
#define hipMemcpy2D                 cudaMemcpy2D
#define hipMemcpyToSymbol           cudaMemcpyToSymbol
#define hipMemcpyToSymbolAsync      cudaMemcpyToSymbolAsync
#define hipMemcpyFromSymbol         cudaMemcpyFromSymbol
#define hipMemcpyFromSymbolAsync    cudaMemcpyFromSymbolAsync
#define hipGetSymbolAddress         cudaGetSymbolAddress
#define hipGetSymbolSize            cudaGetSymbolSize
#define hipMemset                   cudaMemset
#define hipMemsetAsync              cudaMemsetAsync
#define hipMemPrefetchAsync         cudaMemPrefetchAsync

/* hipHostMalloc takes optional flags; cudaHostAlloc requires them */
template <typename T>
static inline hipError_t hipHostMalloc(T** ptr, size_t size,
                                       unsigned int flags = hipHostMallocDefault)
{
    return cudaHostAlloc((void**)ptr, size, flags);
}

/* streams */
#define hipStreamCreate             cudaStreamCreate
#define hipStreamCreateWithFlags    cudaStreamCreateWithFlags
#define hipStreamDestroy            cudaStreamDestroy
#define hipStreamSynchronize        cudaStreamSynchronize
#define hipStreamQuery              cudaStreamQuery
#define hipStreamWaitEvent          cudaStreamWaitEvent

/* events */
#define hipEventCreate              cudaEventCreate
#define hipEventCreateWithFlags     cudaEventCreateWithFlags
#define hipEventRecord              cudaEventRecord
#define hipEventSynchronize         cudaEventSynchronize
#define hipEventQuery               cudaEventQuery
#define hipEventElapsedTime         cudaEventElapsedTime
#define hipEventDestroy             cudaEventDestroy

/* occupancy */
#define hipOccupancyMaxActiveBlocksPerMultiprocessor cudaOccupancyMaxActiveBlocksPerMultiprocessor
#define hipOccupancyMaxPotentialBlockSize            cudaOccupancyMaxPotentialBlockSize

#endif /* HIP_SHIM_HIP_RUNTIME_H */
