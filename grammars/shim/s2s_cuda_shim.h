/*
 * s2s_cuda_shim.h - just enough of the CUDA language and runtime for libclang to parse CUDA and
 * HIP sources without a CUDA installation and without clang's CUDA wrapper headers.
 *
 * s2s parses a translation unit with
 *     -x cuda --cuda-host-only -nocudainc -nocudalib -include <this file>
 * and puts grammars/shim/include first among the system include directories, so that
 * <cuda_runtime.h>, <cuda.h>, <hip/hip_runtime.h>, ... resolve to stubs that include this file.
 *
 * This header is for *parsing* only: the bodies are never compiled, the declarations only have to
 * type-check the way nvcc's would. It includes only the C library's <math.h>, <stdlib.h>,
 * <string.h>, <stdio.h>, <limits.h> and <stddef.h>, and declares the common math functions itself where
 * those are missing.
 */
#ifndef S2S_CUDA_SHIM_H
#define S2S_CUDA_SHIM_H
#define S2S_CUDA_SHIM 1

/* as the real runtime's driver_types.h does: INT_MIN, SIZE_MAX, size_t are seen by every CUDA unit */
#if __has_include(<limits.h>)
#include <limits.h>
#include <stddef.h>
#endif

/* what nvcc's host pass predefines */
#ifndef __CUDACC__
#define __CUDACC__ 1
#endif
#ifndef __NVCC__
#define __NVCC__ 1
#endif
#ifndef __CUDACC_VER_MAJOR__
#define __CUDACC_VER_MAJOR__ 13
#define __CUDACC_VER_MINOR__ 0
#define __CUDACC_VER_BUILD__ 0
#endif
#ifndef CUDART_VERSION
#define CUDART_VERSION 13000
#endif
#ifndef __CUDART_API_VERSION
#define __CUDART_API_VERSION 13000
#endif

/* ---------------------------------------------------------------- qualifiers */
#define __host__ __attribute__((host))
#define __device__ __attribute__((device))
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __managed__ __attribute__((managed))
#define __forceinline__ __inline__ __attribute__((always_inline))
/* __noinline__ is a keyword of clang (>= 15) in CUDA mode; defining it breaks libstdc++'s __attribute__((__noinline__)) */
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#define __grid_constant__
#define __cluster_dims__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __builtin_align__(n) __attribute__((aligned(n)))
#define __restrict__ __restrict
#define __device_builtin__
#define __cudart_builtin__
#define CUDARTAPI
#define __CUDA_ALIGN__(n) __attribute__((aligned(n)))

#if defined(__cplusplus)
#define S2S_EXTERN_C extern "C"
#define S2S_DEFAULT(v) = v
#else
#define S2S_EXTERN_C
#define S2S_DEFAULT(v)
#endif
#define S2S_HD __host__ __device__
#define S2S_D __device__

typedef __SIZE_TYPE__ size_t;

/* ---------------------------------------------------------------- vector types */
#define S2S_VEC(T, N)                                                                            \
    struct N##1 { T x; };                                                                        \
    struct N##2 { T x, y; };                                                                     \
    struct N##3 { T x, y, z; };                                                                  \
    struct N##4 { T x, y, z, w; };                                                               \
    typedef struct N##1 N##1; typedef struct N##2 N##2; typedef struct N##3 N##3; typedef struct N##4 N##4; \
    static __inline__ S2S_HD N##1 make_##N##1(T x) { N##1 r; r.x = x; return r; }                \
    static __inline__ S2S_HD N##2 make_##N##2(T x, T y) { N##2 r; r.x = x; r.y = y; return r; }  \
    static __inline__ S2S_HD N##3 make_##N##3(T x, T y, T z)                                     \
    { N##3 r; r.x = x; r.y = y; r.z = z; return r; }                                             \
    static __inline__ S2S_HD N##4 make_##N##4(T x, T y, T z, T w)                                \
    { N##4 r; r.x = x; r.y = y; r.z = z; r.w = w; return r; }

S2S_VEC(signed char, char)
S2S_VEC(unsigned char, uchar)
S2S_VEC(short, short)
S2S_VEC(unsigned short, ushort)
S2S_VEC(int, int)
S2S_VEC(unsigned int, uint)
S2S_VEC(long, long)
S2S_VEC(unsigned long, ulong)
S2S_VEC(long long, longlong)
S2S_VEC(unsigned long long, ulonglong)
S2S_VEC(float, float)
S2S_VEC(double, double)
#undef S2S_VEC

#if defined(__cplusplus)
struct dim3 {
    unsigned int x, y, z;
    S2S_HD constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
    S2S_HD constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    S2S_HD constexpr operator uint3() const { return uint3{x, y, z}; }
};
#else
typedef struct dim3 { unsigned int x, y, z; } dim3;
#endif
typedef struct dim3 dim3;

/* ---------------------------------------------------------------- built-in variables */
extern const __device__ uint3 threadIdx;
extern const __device__ uint3 blockIdx;
extern const __device__ dim3 blockDim;
extern const __device__ dim3 gridDim;
extern const __device__ int warpSize;

/* ---------------------------------------------------------------- host runtime types */
enum cudaError {
    cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2, cudaErrorInitializationError = 3,
    cudaErrorLaunchFailure = 4, cudaErrorLaunchTimeout = 6, cudaErrorLaunchOutOfResources = 7,
    cudaErrorInvalidDeviceFunction = 8, cudaErrorInvalidConfiguration = 9, cudaErrorInvalidDevice = 10,
    cudaErrorInvalidSymbol = 13, cudaErrorInvalidDevicePointer = 17, cudaErrorInvalidMemcpyDirection = 21,
    cudaErrorNoDevice = 100, cudaErrorNoKernelImageForDevice = 209, cudaErrorIllegalAddress = 700,
    cudaErrorNotReady = 600, cudaErrorNotSupported = 801, cudaErrorUnknown = 999
};
typedef enum cudaError cudaError_t;
enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0, cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3, cudaMemcpyDefault = 4
};
typedef enum cudaMemcpyKind cudaMemcpyKind;
enum cudaFuncCache { cudaFuncCachePreferNone = 0, cudaFuncCachePreferShared = 1, cudaFuncCachePreferL1 = 2,
                     cudaFuncCachePreferEqual = 3 };
typedef enum cudaFuncCache cudaFuncCache;
enum cudaSharedMemConfig { cudaSharedMemBankSizeDefault = 0, cudaSharedMemBankSizeFourByte = 1,
                           cudaSharedMemBankSizeEightByte = 2 };
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
                         cudaFuncAttributePreferredSharedMemoryCarveout = 9 };
enum cudaDeviceAttr {
    cudaDevAttrMaxThreadsPerBlock = 1, cudaDevAttrMaxBlockDimX = 2, cudaDevAttrMaxGridDimX = 5,
    cudaDevAttrMaxSharedMemoryPerBlock = 8, cudaDevAttrWarpSize = 10, cudaDevAttrClockRate = 13,
    cudaDevAttrMultiProcessorCount = 16, cudaDevAttrComputeCapabilityMajor = 75,
    cudaDevAttrComputeCapabilityMinor = 76, cudaDevAttrMaxSharedMemoryPerMultiprocessor = 81,
    cudaDevAttrL2CacheSize = 38, cudaDevAttrMaxSharedMemoryPerBlockOptin = 97
};
typedef enum cudaDeviceAttr cudaDeviceAttr;
enum cudaMemoryType { cudaMemoryTypeUnregistered = 0, cudaMemoryTypeHost = 1, cudaMemoryTypeDevice = 2,
                      cudaMemoryTypeManaged = 3 };
struct cudaPointerAttributes { enum cudaMemoryType type; int device; void* devicePointer; void* hostPointer; };
typedef struct cudaPointerAttributes cudaPointerAttributes;
struct cudaDeviceProp {
    char name[256]; size_t totalGlobalMem; size_t sharedMemPerBlock; int regsPerBlock; int warpSize;
    size_t memPitch; int maxThreadsPerBlock; int maxThreadsDim[3]; int maxGridSize[3]; int clockRate;
    size_t totalConstMem; int major; int minor; size_t textureAlignment; int deviceOverlap;
    int multiProcessorCount; int kernelExecTimeoutEnabled; int integrated; int canMapHostMemory;
    int computeMode; int concurrentKernels; int ECCEnabled; int pciBusID; int pciDeviceID; int asyncEngineCount;
    int unifiedAddressing; int memoryClockRate; int memoryBusWidth; int l2CacheSize; int persistingL2CacheMaxSize;
    int maxThreadsPerMultiProcessor; int managedMemory; int isMultiGpuBoard; size_t sharedMemPerMultiprocessor;
    int regsPerMultiprocessor; size_t sharedMemPerBlockOptin; int maxBlocksPerMultiProcessor;
};
typedef struct cudaDeviceProp cudaDeviceProp;
struct cudaFuncAttributes { size_t sharedSizeBytes; size_t constSizeBytes; size_t localSizeBytes;
                            int maxThreadsPerBlock; int numRegs; int ptxVersion; int binaryVersion; };
typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;
typedef struct CUgraph_st* cudaGraph_t;
typedef struct CUgraphExec_st* cudaGraphExec_t;
typedef unsigned long long cudaTextureObject_t;
typedef unsigned long long cudaSurfaceObject_t;
struct cudaExtent { size_t width, height, depth; };
struct cudaPitchedPtr { void* ptr; size_t pitch, xsize, ysize; };
#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01
#define cudaStreamLegacy ((cudaStream_t)0x1)
#define cudaStreamPerThread ((cudaStream_t)0x2)
#define cudaEventDefault 0x00
#define cudaEventBlockingSync 0x01
#define cudaEventDisableTiming 0x02
#define cudaHostAllocDefault 0x00
#define cudaHostAllocPortable 0x01
#define cudaHostAllocMapped 0x02
#define cudaHostAllocWriteCombined 0x04
#define cudaHostRegisterDefault 0x00
#define cudaMemAttachGlobal 0x01
#define cudaMemAttachHost 0x02
#define cudaDeviceScheduleAuto 0x00
#define cudaDeviceMapHost 0x08

/* ---------------------------------------------------------------- host runtime API */
S2S_EXTERN_C {
cudaError_t cudaMalloc(void** devPtr, size_t size);
cudaError_t cudaMallocManaged(void** devPtr, size_t size, unsigned int flags S2S_DEFAULT(cudaMemAttachGlobal));
cudaError_t cudaMallocHost(void** ptr, size_t size);
cudaError_t cudaMallocPitch(void** devPtr, size_t* pitch, size_t width, size_t height);
cudaError_t cudaMalloc3D(struct cudaPitchedPtr* pitchedDevPtr, struct cudaExtent extent);
cudaError_t cudaHostAlloc(void** pHost, size_t size, unsigned int flags);
cudaError_t cudaHostRegister(void* ptr, size_t size, unsigned int flags);
cudaError_t cudaHostUnregister(void* ptr);
cudaError_t cudaHostGetDevicePointer(void** pDevice, void* pHost, unsigned int flags);
cudaError_t cudaFree(void* devPtr);
cudaError_t cudaFreeHost(void* ptr);
cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream S2S_DEFAULT(0));
cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                         enum cudaMemcpyKind kind);
cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                              size_t height, enum cudaMemcpyKind kind, cudaStream_t stream S2S_DEFAULT(0));
cudaError_t cudaMemcpyPeer(void* dst, int dstDevice, const void* src, int srcDevice, size_t count);
cudaError_t cudaMemset(void* devPtr, int value, size_t count);
cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream S2S_DEFAULT(0));
cudaError_t cudaMemset2D(void* devPtr, size_t pitch, int value, size_t width, size_t height);
cudaError_t cudaMemGetInfo(size_t* free, size_t* total);
cudaError_t cudaMemPrefetchAsync(const void* devPtr, size_t count, int dstDevice, cudaStream_t stream S2S_DEFAULT(0));
cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes* attributes, const void* ptr);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaDeviceReset(void);
cudaError_t cudaDeviceSetCacheConfig(enum cudaFuncCache cacheConfig);
cudaError_t cudaDeviceSetSharedMemConfig(enum cudaSharedMemConfig config);
cudaError_t cudaDeviceGetAttribute(int* value, enum cudaDeviceAttr attr, int device);
cudaError_t cudaDeviceCanAccessPeer(int* canAccessPeer, int device, int peerDevice);
cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags);
cudaError_t cudaSetDeviceFlags(unsigned int flags);
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
const char* cudaGetErrorString(cudaError_t error);
const char* cudaGetErrorName(cudaError_t error);
cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp* prop, int device);
cudaError_t cudaDriverGetVersion(int* driverVersion);
cudaError_t cudaRuntimeGetVersion(int* runtimeVersion);
cudaError_t cudaStreamCreate(cudaStream_t* pStream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* pStream, unsigned int flags);
cudaError_t cudaStreamCreateWithPriority(cudaStream_t* pStream, unsigned int flags, int priority);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamQuery(cudaStream_t stream);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags S2S_DEFAULT(0));
cudaError_t cudaEventCreate(cudaEvent_t* event);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream S2S_DEFAULT(0));
cudaError_t cudaEventQuery(cudaEvent_t event);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes* attr, const void* func);
cudaError_t cudaLaunchKernel(const void* func, dim3 gridDim, dim3 blockDim, void** args, size_t sharedMem,
                             cudaStream_t stream);
cudaError_t cudaLaunchCooperativeKernel(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                                        size_t sharedMem, cudaStream_t stream);
cudaError_t cudaProfilerStart(void);
cudaError_t cudaProfilerStop(void);
/* what clang lowers <<<grid, block, shared, stream>>> to (CUDA >= 9.2, and before) */
unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem S2S_DEFAULT(0),
                                     struct CUstream_st* stream S2S_DEFAULT(0));
cudaError_t cudaConfigureCall(dim3 gridDim, dim3 blockDim, size_t sharedMem S2S_DEFAULT(0),
                              cudaStream_t stream S2S_DEFAULT(0));
}

#if defined(__cplusplus)
/* the C++ conveniences of cuda_runtime.h */
template <class T> static __inline__ cudaError_t cudaMalloc(T** devPtr, size_t size)
{ return cudaMalloc((void**)(void*)devPtr, size); }
template <class T> static __inline__ cudaError_t cudaMallocManaged(T** devPtr, size_t size,
                                                                  unsigned int flags = cudaMemAttachGlobal)
{ return cudaMallocManaged((void**)(void*)devPtr, size, flags); }
template <class T> static __inline__ cudaError_t cudaMallocHost(T** ptr, size_t size, unsigned int flags = 0)
{ return cudaHostAlloc((void**)(void*)ptr, size, flags); }
template <class T> static __inline__ cudaError_t cudaHostAlloc(T** ptr, size_t size, unsigned int flags)
{ return cudaHostAlloc((void**)(void*)ptr, size, flags); }
template <class T> static __inline__ cudaError_t cudaMallocPitch(T** devPtr, size_t* pitch, size_t w, size_t h)
{ return cudaMallocPitch((void**)(void*)devPtr, pitch, w, h); }
template <class T> cudaError_t cudaMemcpyToSymbol(const T& symbol, const void* src, size_t count,
                                                  size_t offset = 0, cudaMemcpyKind kind = cudaMemcpyHostToDevice);
template <class T> cudaError_t cudaMemcpyToSymbolAsync(const T& symbol, const void* src, size_t count,
                                                       size_t offset = 0, cudaMemcpyKind kind = cudaMemcpyHostToDevice,
                                                       cudaStream_t stream = 0);
template <class T> cudaError_t cudaMemcpyFromSymbol(void* dst, const T& symbol, size_t count, size_t offset = 0,
                                                    cudaMemcpyKind kind = cudaMemcpyDeviceToHost);
template <class T> cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const T& symbol, size_t count,
                                                         size_t offset = 0, cudaMemcpyKind kind = cudaMemcpyDeviceToHost,
                                                         cudaStream_t stream = 0);
template <class T> cudaError_t cudaGetSymbolAddress(void** devPtr, const T& symbol);
template <class T> cudaError_t cudaGetSymbolSize(size_t* size, const T& symbol);
template <class T> cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes* attr, T* entry);
template <class T> cudaError_t cudaFuncSetAttribute(T* entry, enum cudaFuncAttribute attr, int value);
template <class T> cudaError_t cudaFuncSetCacheConfig(T* func, enum cudaFuncCache cacheConfig);
template <class T> cudaError_t cudaLaunchKernel(T* func, dim3 gridDim, dim3 blockDim, void** args,
                                                size_t sharedMem = 0, cudaStream_t stream = 0);
template <class T> cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* numBlocks, T func, int blockSize,
                                                                            size_t dynamicSMemSize);
template <class T> cudaError_t cudaOccupancyMaxPotentialBlockSize(int* minGridSize, int* blockSize, T func,
                                                                 size_t dynamicSMemSize = 0, int blockSizeLimit = 0);
#endif

/* ---------------------------------------------------------------- device functions */
/* The C library seen from both sides, as clang's own CUDA wrapper does it: every function its
 * headers declare becomes __host__ __device__. */
#pragma clang force_cuda_host_device begin
#if defined(__cplusplus) && __has_include(<math.h>) && __has_include(<stdlib.h>)
/* the C headers themselves, not libstdc++'s wrappers (which would pull half of the C++ library in
 * under the pragma and clash with its later, host-only redeclarations) */
#define _GLIBCXX_INCLUDE_NEXT_C_HEADERS
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#undef _GLIBCXX_INCLUDE_NEXT_C_HEADERS
#else
/* no C library headers on this machine: the single-precision functions kernels use most */
S2S_EXTERN_C {
float sqrtf(float); float expf(float); float exp2f(float); float logf(float); float log2f(float);
float log10f(float); float powf(float, float); float sinf(float); float cosf(float); float tanf(float);
float fabsf(float); float floorf(float); float ceilf(float); float fminf(float, float); float fmaxf(float, float);
float fmaf(float, float, float); float tanhf(float); float atan2f(float, float); float erff(float);
float roundf(float); float truncf(float); float fmodf(float, float); float cbrtf(float); float hypotf(float, float);
double sqrt(double); double exp(double); double log(double); double pow(double, double); double sin(double);
double cos(double); double fabs(double); double floor(double); double ceil(double); double fmin(double, double);
double fmax(double, double); double fma(double, double, double); double tanh(double);
int printf(const char*, ...);
}
#endif
#if !defined(__GLIBC__) /* glibc declares these fast-math names itself */
float __expf(float); float __exp10f(float); float __logf(float); float __log2f(float); float __powf(float, float);
float __sinf(float); float __cosf(float); float __tanf(float); void __sincosf(float, float*, float*);
#endif
#pragma clang force_cuda_host_device end

S2S_EXTERN_C {
S2S_D void __syncthreads(void);
S2S_D int __syncthreads_count(int);
S2S_D int __syncthreads_and(int);
S2S_D int __syncthreads_or(int);
S2S_D void __syncwarp(unsigned int mask S2S_DEFAULT(0xffffffffu));
S2S_D void __threadfence(void);
S2S_D void __threadfence_block(void);
S2S_D void __threadfence_system(void);
S2S_D unsigned int __activemask(void);
S2S_D unsigned int __ballot_sync(unsigned int mask, int pred);
S2S_D int __all_sync(unsigned int mask, int pred);
S2S_D int __any_sync(unsigned int mask, int pred);
S2S_D long long clock64(void);
S2S_D void __nanosleep(unsigned int ns);
S2S_D unsigned int __lanemask_lt(void);
S2S_D int __popc(unsigned int); S2S_D int __popcll(unsigned long long);
S2S_D int __clz(int); S2S_D int __clzll(long long);
S2S_D int __ffs(int); S2S_D int __ffsll(long long);
S2S_D unsigned int __brev(unsigned int);
S2S_D int __mul24(int, int); S2S_D unsigned int __umul24(unsigned int, unsigned int);
S2S_D int __mulhi(int, int); S2S_D unsigned int __umulhi(unsigned int, unsigned int);
S2S_D float __int_as_float(int); S2S_D int __float_as_int(float);
S2S_D float __uint_as_float(unsigned int); S2S_D unsigned int __float_as_uint(float);
S2S_D double __longlong_as_double(long long); S2S_D long long __double_as_longlong(double);
S2S_D int __float2int_rn(float); S2S_D int __float2int_rz(float); S2S_D unsigned int __float2uint_rn(float);
S2S_D float __int2float_rn(int); S2S_D int __double2int_rn(double); S2S_D float __double2float_rn(double);
S2S_D float __saturatef(float);
S2S_D float __fdividef(float, float); S2S_D float __frcp_rn(float); S2S_D float __fsqrt_rn(float);
S2S_D float __fadd_rn(float, float); S2S_D float __fmul_rn(float, float); S2S_D float __fmaf_rn(float, float, float);
S2S_D double __dadd_rn(double, double); S2S_D double __dmul_rn(double, double); S2S_D double __fma_rn(double, double, double);
S2S_HD float rsqrtf(float); S2S_HD double rsqrt(double); S2S_HD float rcbrtf(float);
S2S_HD float exp10f(float); S2S_HD float rhypotf(float, float); S2S_HD float norm3df(float, float, float);
S2S_HD float rnorm3df(float, float, float); S2S_HD float normcdff(float); S2S_HD float erfcinvf(float);
S2S_HD float erfinvf(float); S2S_HD void sincospif(float, float*, float*); S2S_HD float sinpif(float);
S2S_HD float cospif(float);
}

#if defined(__cplusplus)
/* integer and floating min/max overloads of the CUDA math API */
#define S2S_MINMAX(T)                                                                            \
    static __inline__ S2S_HD T min(T a, T b) { return a < b ? a : b; }                           \
    static __inline__ S2S_HD T max(T a, T b) { return a > b ? a : b; }
S2S_MINMAX(int) S2S_MINMAX(unsigned int) S2S_MINMAX(long) S2S_MINMAX(unsigned long)
S2S_MINMAX(long long) S2S_MINMAX(unsigned long long) S2S_MINMAX(float) S2S_MINMAX(double)
#undef S2S_MINMAX

/* atomics */
#define S2S_ATOMIC2(name, T) S2S_D T name(T* address, T val); S2S_D T name##_block(T* address, T val); \
    S2S_D T name##_system(T* address, T val);
#define S2S_ATOMIC_INT(name) S2S_ATOMIC2(name, int) S2S_ATOMIC2(name, unsigned int) \
    S2S_ATOMIC2(name, unsigned long long)
S2S_ATOMIC_INT(atomicAdd) S2S_ATOMIC2(atomicAdd, float) S2S_ATOMIC2(atomicAdd, double)
S2S_ATOMIC_INT(atomicSub) S2S_ATOMIC_INT(atomicExch) S2S_ATOMIC2(atomicExch, float)
S2S_ATOMIC_INT(atomicMin) S2S_ATOMIC2(atomicMin, long long)
S2S_ATOMIC_INT(atomicMax) S2S_ATOMIC2(atomicMax, long long)
S2S_ATOMIC_INT(atomicAnd) S2S_ATOMIC_INT(atomicOr) S2S_ATOMIC_INT(atomicXor)
S2S_ATOMIC2(atomicInc, unsigned int) S2S_ATOMIC2(atomicDec, unsigned int)
#undef S2S_ATOMIC_INT
#undef S2S_ATOMIC2
S2S_D int atomicCAS(int* address, int compare, int val);
S2S_D unsigned int atomicCAS(unsigned int* address, unsigned int compare, unsigned int val);
S2S_D unsigned long long atomicCAS(unsigned long long* address, unsigned long long compare, unsigned long long val);
S2S_D unsigned short atomicCAS(unsigned short* address, unsigned short compare, unsigned short val);

/* warp shuffles, for every type the CUDA headers overload them for */
template <class T> S2S_D T __shfl_sync(unsigned int mask, T var, int srcLane, int width = 32);
template <class T> S2S_D T __shfl_up_sync(unsigned int mask, T var, unsigned int delta, int width = 32);
template <class T> S2S_D T __shfl_down_sync(unsigned int mask, T var, unsigned int delta, int width = 32);
template <class T> S2S_D T __shfl_xor_sync(unsigned int mask, T var, int laneMask, int width = 32);
template <class T> S2S_D unsigned int __match_any_sync(unsigned int mask, T value);
template <class T> S2S_D T __reduce_add_sync(unsigned int mask, T value);
template <class T> S2S_D T __ldg(const T* ptr);
template <class T> S2S_D T __ldcg(const T* ptr);
template <class T> S2S_D T __ldca(const T* ptr);
template <class T> S2S_D T __ldcs(const T* ptr);
template <class T> S2S_D T __ldlu(const T* ptr);
template <class T> S2S_D void __stcg(T* ptr, T value);
template <class T> S2S_D void __stcs(T* ptr, T value);
template <class T> S2S_D void __stwt(T* ptr, T value);
#endif

#endif /* S2S_CUDA_SHIM_H */
