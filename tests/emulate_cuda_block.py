"""Run a CUDA kernel with barriers, shared memory, warp shuffles and atomics on the CPU: one OS thread per CUDA thread
of a block (started once a launch).

tests/emulate_cuda.py runs threads one after another, a legal schedule only for kernels without collectives. Here the
blocks run one after another and the threads of a block at once: `__syncthreads()` is a barrier of the block's
threads, `__syncwarp` and `__shfl_down_sync` (`_up_`, `_xor_`, plain) a barrier of the warp's lanes around an exchange through per-thread slots, `__shared__`
one array per kernel (blocks do not overlap), `atomicAdd` a locked add; `float4`, `int4`, `uint4` are plain structs, and
buffers can start off a 16-byte boundary to take a rewrite's scalar path. A shuffle checks its mask: it must name
exactly the lanes of the warp that exist (a full mask on a partial warp is undefined on a GPU and stops the program
with BAD MASK; with a width under 32 the lanes of the caller's segment may be named instead), and a lane that reads a
lane the warp lacks gets NaN bits. No GPU needed.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from emulate_cuda import Launch, kernel_text
from session_builds import compile_threaded

from s2s.lang.kernel_facts import kernel_facts
from s2s.passes.common.thread_index import elem_type

SHIM = """\
#include <barrier>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>
struct s2s_dim3 { unsigned x, y, z; };
// a buffer passed to any pointer parameter: `float*`, and a 2-D array parameter `float a[N][M]` (a `float (*)[M]`)
struct s2s_any { void* p; template <typename T> operator T*() const { return (T*)p; } };
static thread_local s2s_dim3 threadIdx;
static s2s_dim3 blockIdx, blockDim, gridDim;
static std::barrier<>* s2s_block;
static std::vector<std::barrier<>*> s2s_warps;
static std::vector<std::barrier<>*> s2s_segments[6];  // [log2 width][segment]: lanes that shuffle within their segment
static unsigned long long s2s_slot[1024];
static std::mutex s2s_atomic;
struct float4 { float x, y, z, w; };
struct int4 { int x, y, z, w; };
struct uint4 { unsigned x, y, z, w; };
#define __global__
#define __device__
#define __restrict__
#define __shared__ static
#define __forceinline__ inline
static int s2s_tid();
static std::barrier<>* s2s_bar(unsigned mask, int width);
static int s2s_tid() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
static int s2s_size() { return blockDim.x * blockDim.y * blockDim.z; }
static std::barrier<>* s2s_bar(unsigned mask, int width) {
    // the lanes of a width-wide segment shuffling among themselves (the segment's mask) wait for each other only
    int tid = s2s_tid(), lane = tid & 31, here = s2s_size() - (tid & ~31), log2w = 0;
    while ((1 << log2w) < width) ++log2w;
    unsigned present = here >= 32 ? 0xffffffffu : (1u << here) - 1u;
    unsigned segment = width >= 32 ? present : (((1u << width) - 1u) << (lane / width * width)) & present;
    return width < 32 && mask == segment && mask != present ? s2s_segments[log2w][tid / width] : s2s_warps[tid / 32];
}
static void __syncthreads() { s2s_block->arrive_and_wait(); }
static void __syncwarp(unsigned mask = 0xffffffffu) {  // the lanes of the mask: a whole warp or one segment
    int width = 1;
    while (width < __builtin_popcount(mask)) width *= 2;
    s2s_bar(mask, width)->arrive_and_wait();
}
template <typename T> static T min(T a, T b) { return b < a ? b : a; }  // CUDA's integer min/max
template <typename T> static T max(T a, T b) { return a < b ? b : a; }
template <typename T> static T atomicAdd(T* p, T v) { std::lock_guard<std::mutex> g(s2s_atomic); T old = *p; *p += v; return old; }
template <typename T> static T __shfl_down_sync(unsigned mask, T v, int off, int width = 32) {
    int tid = s2s_tid(), lane = tid & 31, here = s2s_size() - (tid & ~31);
    unsigned present = here >= 32 ? 0xffffffffu : (1u << here) - 1u;
    unsigned segment = width >= 32 ? present : (((1u << width) - 1u) << (lane / width * width)) & present;
    if (mask != present && mask != segment) { printf("BAD MASK\\n"); fflush(stdout); _Exit(3); }
    std::barrier<>* bar = s2s_bar(mask, width);
    std::memcpy(&s2s_slot[tid], &v, sizeof(T));
    bar->arrive_and_wait();
    T out = v;
    if ((lane % width) + off < width) {
        if (lane + off < here) std::memcpy(&out, &s2s_slot[tid + off], sizeof(T));
        else std::memset(&out, 0xff, sizeof(T));
    }
    bar->arrive_and_wait();
    return out;
}
template <typename T> static T __shfl_up_sync(unsigned mask, T v, int off, int width = 32) {
    int tid = s2s_tid(), lane = tid & 31, here = s2s_size() - (tid & ~31);
    unsigned present = here >= 32 ? 0xffffffffu : (1u << here) - 1u;
    if ((mask & present) != mask) { printf("BAD MASK\\n"); fflush(stdout); _Exit(3); }
    std::barrier<>* bar = s2s_bar(mask, width);
    std::memcpy(&s2s_slot[tid], &v, sizeof(T));
    bar->arrive_and_wait();
    T out = v;
    if ((lane % width) - off >= 0) std::memcpy(&out, &s2s_slot[tid - off], sizeof(T));
    bar->arrive_and_wait();
    return out;
}
template <typename T> static T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
    int tid = s2s_tid(), lane = tid & 31, here = s2s_size() - (tid & ~31);
    unsigned present = here >= 32 ? 0xffffffffu : (1u << here) - 1u;
    if ((mask & present) != mask) { printf("BAD MASK\\n"); fflush(stdout); _Exit(3); }
    std::barrier<>* bar = s2s_bar(mask, width);
    std::memcpy(&s2s_slot[tid], &v, sizeof(T));
    bar->arrive_and_wait();
    T out;
    int from = lane / width * width + src % width;
    if (from < here) std::memcpy(&out, &s2s_slot[(tid & ~31) + from], sizeof(T));
    else std::memset(&out, 0xff, sizeof(T));
    bar->arrive_and_wait();
    return out;
}
template <typename T> static T __shfl_xor_sync(unsigned mask, T v, int bits, int width = 32) {
    int tid = s2s_tid(), lane = tid & 31, here = s2s_size() - (tid & ~31);
    unsigned present = here >= 32 ? 0xffffffffu : (1u << here) - 1u;
    if ((mask & present) != mask) { printf("BAD MASK\\n"); fflush(stdout); _Exit(3); }
    std::barrier<>* bar = s2s_bar(mask, width);
    std::memcpy(&s2s_slot[tid], &v, sizeof(T));
    bar->arrive_and_wait();
    T out;
    int from = lane ^ bits;
    if (from < here) std::memcpy(&out, &s2s_slot[(tid & ~31) + from], sizeof(T));
    else std::memset(&out, 0xff, sizeof(T));
    bar->arrive_and_wait();
    return out;
}
template <typename F> static void s2s_launch(F k, s2s_dim3 g, s2s_dim3 b) {
    // one OS thread per thread of a block, started once a launch and reused block after block: between two blocks
    // every thread waits at `gate` with the launcher (with new threads for each block, the bit-for-bit tests of
    // contraction-blocking spent 24 of their 37 CPU-seconds in the kernel, creating and joining threads)
    gridDim = g; blockDim = b;
    int n = b.x * b.y * b.z;
    std::barrier<> block(n);  // each block ends with every barrier's phase complete (else it never ends): reusable
    s2s_block = &block;
    s2s_warps.clear();
    for (int w = 0; w * 32 < n; ++w) s2s_warps.push_back(new std::barrier<>(n - w * 32 < 32 ? n - w * 32 : 32));
    for (int l = 1; l < 5; ++l) {
        int w = 1 << l;
        for (auto* x : s2s_segments[l]) delete x;
        s2s_segments[l].clear();
        for (int g = 0; g * w < n; ++g) s2s_segments[l].push_back(new std::barrier<>(n - g * w < w ? n - g * w : w));
    }
    std::barrier<> gate(n + 1);
    bool done = false;
    std::vector<std::thread> ts;
    for (int t = 0; t < n; ++t)
        ts.emplace_back([&, t] {
            unsigned u = t;
            threadIdx = {u % b.x, u / b.x % b.y, u / (b.x * b.y)};
            for (;;) {
                gate.arrive_and_wait();  // a block starts (blockIdx set) or the launch ends
                if (done) return;
                k();
                gate.arrive_and_wait();  // every thread of the block has returned
            }
        });
    for (blockIdx.z = 0; blockIdx.z < g.z; ++blockIdx.z) for (blockIdx.y = 0; blockIdx.y < g.y; ++blockIdx.y)
    for (blockIdx.x = 0; blockIdx.x < g.x; ++blockIdx.x) {
        gate.arrive_and_wait();
        gate.arrive_and_wait();
    }
    done = true;
    gate.arrive_and_wait();
    for (auto& t : ts) t.join();
    for (auto* w : s2s_warps) delete w;
    s2s_warps.clear();
}
"""


def same_outputs(tmp: Path, name: str, before: bytes, after: bytes, launches: tuple[Launch, Launch], counts: dict[str, int],
                 scalars: dict[str, str], rtol: float = 0.0, offset: int = 0) -> str:
    """Both kernels on identical buffers (each `offset` elements past a 16-byte boundary), threaded; "SAME" when every
    buffer matches (floating-point ones within `rtol`, relative), else what differed (DIFF name, BAD MASK, a compiler or
    runtime error)."""
    gxx = shutil.which("g++")
    assert gxx is not None, "g++ is needed"
    facts = kernel_facts(before, "cuda", name)
    assert facts is not None
    setup, args, checks = [], {"a": [], "b": []}, []
    for i, p in enumerate(facts.params):
        ty = elem_type(p.type)
        if not p.pointer:
            for side in args:
                args[side].append(f"({ty})({scalars[p.name]})")
            continue
        n, real = counts[p.name], ty in {"float", "double"}
        fill = f"({ty})((i * 7919u + {i * 104729}u) % 1000u) / ({ty})7" if real else f"({ty})((i * 31u + {i}) % 97u)"
        for side in args:
            setup += [f"{ty}* {p.name}_{side} = ({ty}*)aligned_alloc(16, ({n} + 8) * sizeof({ty})) + {offset};", f"for (long i = 0; i < {n}; ++i) {p.name}_{side}[i] = {fill};"]
            args[side].append(f"s2s_any{{(void*){p.name}_{side}}}")
        a, b = f"{p.name}_a", f"{p.name}_b"
        if rtol and real:
            checks.append(f"for (long i = 0; i < {n}; ++i) {{ double d = (double){a}[i] - (double){b}[i], m = {a}[i] < 0 ? -{a}[i] : {a}[i];"
                          f' if (!(d <= {rtol} * m + 1e-30 && -d <= {rtol} * m + 1e-30)) {{ printf("DIFF {p.name}\\n"); return 1; }} }}')
        else:
            checks.append(f'if (memcmp({a}, {b}, {n} * sizeof(*{a}))) {{ printf("DIFF {p.name}\\n"); return 1; }}')
    main = ["int main() {", *setup]
    for side, suffix, launch in (("a", "before", launches[0]), ("b", "after", launches[1])):
        g, b = ", ".join(f"{v}u" for v in launch.grid), ", ".join(f"{v}u" for v in launch.block)
        main.append(f"s2s_launch([&] {{ {name}_{suffix}({', '.join(args[side])}); }}, s2s_dim3{{{g}}}, s2s_dim3{{{b}}});")
    main += [*checks, 'printf("SAME\\n");', "return 0;", "}"]
    program = tmp / f"{name}_threaded.cpp"
    exe = tmp / f"{name}_threaded"
    text = SHIM + kernel_text(before, name, "before") + "\n" + kernel_text(after, name, "after") + "\n" + "\n".join(main)
    build = compile_threaded(gxx, program, text, exe)
    assert build.returncode == 0, build.stderr[-3000:]
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    return run.stdout.strip() or run.stderr.strip() or f"exit {run.returncode}"
