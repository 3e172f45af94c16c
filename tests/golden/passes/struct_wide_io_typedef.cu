// RUN: struct-wide-io
// ----- INPUT
typedef struct { double x, y; } vec2d;

__global__ void halve(const vec2d* in, vec2d* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        vec2d v = in[i];
        v.x *= 0.5;
        out[i] = v;
        out[i].y = 0.0;
    }
}
// ----- EXPECTED
typedef struct { double x, y; } vec2d;

/* s2s struct-wide-io: a structure moved in 16- or 8-byte words when its size and address allow */
#ifndef S2S_WIDE_IO_DEFINED /* once per translation unit, whichever files of it receive a copy */
#define S2S_WIDE_IO_DEFINED
template <int W> struct s2s_word;
template <> struct s2s_word<16> { typedef float4 type; };
template <> struct s2s_word<8> { typedef float2 type; };
template <typename T, int W = (sizeof(T) % 16 == 0 ? 16 : (sizeof(T) % 8 == 0 ? 8 : 0))>
struct s2s_wide_io {
    typedef typename s2s_word<W>::type word;
    union words { word w[sizeof(T) / W]; T t; };
    static __device__ __forceinline__ T load(const T* p)
    {
        if (reinterpret_cast<unsigned long long>(p) % W) return *p;
        words u;
        const word* s = reinterpret_cast<const word*>(p);
#pragma unroll
        for (int i = 0; i < (int)(sizeof(T) / W); ++i) u.w[i] = s[i];
        return u.t;
    }
    static __device__ __forceinline__ void store(T* p, const T& v)
    {
        if (reinterpret_cast<unsigned long long>(p) % W) { *p = v; return; }
        words u;
        u.t = v;
        word* d = reinterpret_cast<word*>(p);
#pragma unroll
        for (int i = 0; i < (int)(sizeof(T) / W); ++i) d[i] = u.w[i];
    }
};
template <typename T>
struct s2s_wide_io<T, 0> {
    static __device__ __forceinline__ T load(const T* p) { return *p; }
    static __device__ __forceinline__ void store(T* p, const T& v) { *p = v; }
};
#endif

__global__ void halve(const vec2d* in, vec2d* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        vec2d v = s2s_wide_io<vec2d>::load(in + (i));
        v.x *= 0.5;
        s2s_wide_io<vec2d>::store(out + (i), v);
        out[i].y = 0.0;
    }
}
