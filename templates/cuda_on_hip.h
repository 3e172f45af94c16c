/*
 * cuda_on_hip.h - the CUDA runtime names that the s2s harness uses, mapped onto HIP.
 * Included by harness.cu when built by hipcc (-DS2S_HIP); with nvcc the harness uses CUDA directly
 * and the kernel's HIP calls go through hip_shim/hip/hip_runtime.h instead.
 */
#ifndef S2S_CUDA_ON_HIP_H
#define S2S_CUDA_ON_HIP_H
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>

#define cudaError_t                 hipError_t
#define cudaSuccess                 hipSuccess
#define cudaGetErrorName            hipGetErrorName
#define cudaGetErrorString          hipGetErrorString
#define cudaGetLastError            hipGetLastError
#define cudaGetDeviceCount          hipGetDeviceCount
#define cudaSetDevice               hipSetDevice
#define cudaDeviceProp              hipDeviceProp_t
#define cudaGetDeviceProperties     hipGetDeviceProperties
#define cudaDeviceGetAttribute      hipDeviceGetAttribute
#define cudaDevAttrL2CacheSize      hipDeviceAttributeL2CacheSize
#define cudaDeviceSynchronize       hipDeviceSynchronize
#define cudaMemGetInfo              hipMemGetInfo
#define cudaMalloc                  hipMalloc
#define cudaFree                    hipFree
#define cudaMemcpy                  hipMemcpy
#define cudaMemcpyAsync             hipMemcpyAsync
#define cudaMemcpyHostToDevice      hipMemcpyHostToDevice
#define cudaMemcpyDeviceToHost      hipMemcpyDeviceToHost
#define cudaMemcpyDeviceToDevice    hipMemcpyDeviceToDevice
#define cudaMemset                  hipMemset
#define cudaHostRegister            hipHostRegister
#define cudaHostRegisterDefault     hipHostRegisterDefault
#define cudaMemsetAsync             hipMemsetAsync
#define cudaMemcpyToSymbol(sym, src, n) hipMemcpyToSymbol(HIP_SYMBOL(sym), src, n)
#define cudaStream_t                hipStream_t
#define cudaStreamCreateWithFlags   hipStreamCreateWithFlags
#define cudaStreamNonBlocking       hipStreamNonBlocking
#define cudaStreamSynchronize       hipStreamSynchronize
#define cudaStreamDestroy           hipStreamDestroy
#define cudaEvent_t                 hipEvent_t
#define cudaEventCreate             hipEventCreate
#define cudaEventRecord             hipEventRecord
#define cudaEventSynchronize        hipEventSynchronize
#define cudaEventElapsedTime        hipEventElapsedTime
#define cudaEventDestroy            hipEventDestroy
#define cudaLaunchKernel            hipLaunchKernel
#define cudaFuncAttributes          hipFuncAttributes
#define cudaFuncGetAttributes       hipFuncGetAttributes
#define cudaFuncSetAttribute        hipFuncSetAttribute
#define cudaFuncAttributeMaxDynamicSharedMemorySize hipFuncAttributeMaxDynamicSharedMemorySize

#endif /* S2S_CUDA_ON_HIP_H */
