"""Run a sequence MEP's window on the CPU two ways, one OS thread per CUDA thread, and return every buffer's final bytes:
as the application launched it (each launch's blocks one after another, the threads of a block at once, __syncthreads
a barrier of the block's threads) and as its persistent kernel (persistent.cu: `real_blocks` blocks of the body's
largest block size at once, the grid barrier a barrier of all their threads), its schedule filled by persistent.cu's own
s2s_persist_fill from the window's launches and checked by its s2s_persist_follows. The launches after the last whole
iteration run as the original's. `__shared__` is one array per function (a `static`), so a body with shared memory
runs with one real block (its virtual blocks one after another, as on a GPU with room for one). No GPU needed.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from emulate_sequence import _read_list, _without_includes

from s2s.sequence.fusion import params_and_body

SHIM = r"""
#include <barrier>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>
struct uint3 { unsigned x, y, z; };
struct dim3 { unsigned x, y, z; dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {} };
static inline uint3 make_uint3(unsigned a, unsigned b, unsigned c) { return {a, b, c}; }
static thread_local uint3 threadIdx, blockIdx;
static dim3 blockDim, gridDim;
static thread_local std::barrier<>* s2s_block;
static std::barrier<>* s2s_grid;
#define __global__
#define __device__
#define __restrict__
#define __forceinline__ inline
#define __grid_constant__
#define __shared__ static
static void __syncthreads() { s2s_block->arrive_and_wait(); }
namespace cooperative_groups {
struct grid_group { void sync() { s2s_grid->arrive_and_wait(); } };
static inline grid_group this_grid() { return {}; }
}
// the runtime calls persistent.cu makes to size its grid (never called here: the grid is the test's)
typedef int cudaError_t;
enum { cudaSuccess = 0, cudaDevAttrCooperativeLaunch, cudaDevAttrMultiProcessorCount, cudaFuncAttributeMaxDynamicSharedMemorySize };
static cudaError_t cudaGetDevice(int*) { return 1; }
static cudaError_t cudaDeviceGetAttribute(int*, int, int) { return 1; }
static cudaError_t cudaFuncSetAttribute(const void*, int, int) { return 1; }
static cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int*, const void*, int, size_t) { return 1; }
static cudaError_t cudaGetLastError() { return cudaSuccess; }
typedef std::vector<std::vector<unsigned char>> s2s_args;
template <class T> static T s2s_get(const std::vector<unsigned char>& b) {
    std::remove_cv_t<T> out;
    std::memcpy(&out, b.data(), sizeof out);
    return out;
}
static std::vector<unsigned char> s2s_hex(const char* hex) {
    std::vector<unsigned char> out(std::strlen(hex) / 2);
    for (size_t i = 0; i < out.size(); ++i) { unsigned v = 0; std::sscanf(hex + 2 * i, "%2x", &v); out[i] = (unsigned char)v; }
    return out;
}
static std::vector<unsigned char> s2s_ptr(void* p) {
    std::vector<unsigned char> out(sizeof p);
    std::memcpy(out.data(), &p, sizeof p);
    return out;
}
// `g` blocks of `b` threads: the threads of each block at once, the blocks one after another (`body` one thread's run)
template <class F> static void s2s_blocks(dim3 g, dim3 b, F body) {
    gridDim = g;
    blockDim = b;
    unsigned n = b.x * b.y * b.z;
    for (unsigned z = 0; z < g.z; ++z) for (unsigned y = 0; y < g.y; ++y) for (unsigned x = 0; x < g.x; ++x) {
        std::barrier<> block(n);
        std::vector<std::thread> ts;
        for (unsigned t = 0; t < n; ++t)
            ts.emplace_back([&, t] {
                s2s_block = &block;
                blockIdx = {x, y, z};
                threadIdx = {t % b.x, t / b.x % b.y, t / (b.x * b.y)};
                body();
            });
        for (auto& t : ts) t.join();
    }
}
// `real` blocks of `threads` threads all at once, a grid barrier over all of them
template <class F> static void s2s_cooperative(unsigned real, unsigned threads, F body) {
    gridDim = dim3(real);
    blockDim = dim3(threads);
    std::barrier<> grid(real * threads);
    s2s_grid = &grid;
    std::vector<std::barrier<>*> blocks;
    for (unsigned r = 0; r < real; ++r) blocks.push_back(new std::barrier<>(threads));
    std::vector<std::thread> ts;
    for (unsigned r = 0; r < real; ++r)
        for (unsigned t = 0; t < threads; ++t)
            ts.emplace_back([&, r, t] { s2s_block = blocks[r]; blockIdx = {r, 0, 0}; threadIdx = {t, 0, 0}; body(); });
    for (auto& t : ts) t.join();
    for (auto* b : blocks) delete b;
}
"""


def run_on_cpu(mep: Path, tmp: Path, mode: str, real_blocks: int = 1, tamper: tuple[int, int, str] | None = None) -> list[bytes]:
    """Every buffer's bytes after the window ran as `mode` ("original" or "persistent" on `real_blocks` blocks);
    `tamper` (launch, argument, hex): that argument's bytes replaced first, for s2s_persist_follows to catch (the
    program then exits 4 without running)."""
    manifest = json.loads((mep / "sequence.json").read_text())
    names: list[str] = manifest["kernels"]
    sources = (mep / "kernels.cu").read_text()
    types = {}
    for name in names:
        found = params_and_body(sources.encode(), name)
        assert found is not None, name
        types[name] = [decl.format("").strip() for decl, _n in found[0]]
    sizes = [b["bytes"] for b in manifest["buffers"]]
    body = ["int main(int argc, char** argv) {", "unsigned real = argc > 1 ? (unsigned)atoi(argv[1]) : 1u;", "std::vector<unsigned char*> B;", "std::vector<s2s_args> S;", "std::vector<dim3> G, K;"]
    for i, n in enumerate(sizes):
        body += [f"B.push_back((unsigned char*)aligned_alloc(16, {(n + 15) // 16 * 16}));",
                 f'{{ FILE* f = fopen("{mep}/data/buf{i}.before.bin", "rb"); if (!f || fread(B[{i}], 1, {n}, f) != {n}) return 3; fclose(f); }}']
    launches = _read_list((mep / "data" / "replay.txt").read_text().splitlines())
    for _k, cfg, args in launches:
        stored = [f"s2s_ptr(B[{a[1]}] + {a[2]})" if a[0] == "p" else f's2s_hex("{a[2]}")' if a[0] == "v"
                  else "s2s_ptr(nullptr)" for a in args]
        body.append(f"S.push_back({{{', '.join(stored)}}}); G.push_back(dim3({cfg[0]}, {cfg[1]}, {cfg[2]})); "
                    f"K.push_back(dim3({cfg[3]}, {cfg[4]}, {cfg[5]}));")
    if tamper is not None:
        body.append(f'S[{tamper[0]}][{tamper[1]}] = s2s_hex("{tamper[2]}");')
    length = len(manifest["variation"]["body_sites"])
    whole = len(launches) // length * length
    start = 0
    if mode == "persistent":
        start = whole
        body += ["auto arg = [&](long long k, int i) { return (const void*)S[k][i].data(); };",
                 "auto config = [&](long long k, dim3& g, dim3& b) { g = G[k]; b = K[k]; };",
                 f"if (!s2s_persist_follows({whole // length}, arg, config)) {{ printf(\"does not follow\\n\"); return 4; }}",
                 "s2s_persist_args p;", f"s2s_persist_fill(p, {whole // length}, arg, config);",
                 f"unsigned threads = 0; for (int k = 0; k < {length}; ++k) threads = std::max(threads, K[k].x * K[k].y * K[k].z);",
                 f"s2s_cooperative(real, threads, [&] {{ s2s_persistent(p, {whole // length}); }});"]
    for n, (k, _cfg, _args) in enumerate(launches[start:], start):
        name = names[k]
        call = ", ".join(f"s2s_get<{ty}>(S[{n}][{i}])" for i, ty in enumerate(types[name]))
        body.append(f"s2s_blocks(G[{n}], K[{n}], [&] {{ {name}({call}); }});")
    for i, n in enumerate(sizes):
        body.append(f'{{ FILE* f = fopen((std::string("{tmp}/{mode}{i}.") + std::to_string(real) + ".bin").c_str(), "wb"); '
                    f'fwrite(B[{i}], 1, {n}, f); fclose(f); }}')
    body += ["return 0;", "}"]
    persistent = _without_includes((mep / "persistent.cu").read_text()) if mode == "persistent" else ""
    program = tmp / f"{mode}_emulated.cpp"
    text = SHIM + _without_includes(sources) + "\n" + persistent + "\n" + "\n".join(body) + "\n"
    exe = tmp / f"{mode}_emulated"
    if not exe.is_file() or not program.is_file() or program.read_text() != text:  # another real_blocks: the same build
        program.write_text(text)
        gxx = shutil.which("g++")
        assert gxx is not None, "g++ is needed"
        build = subprocess.run([gxx, "-O1", "-ffp-contract=off", "-std=c++20", "-pthread", "-w", str(program), "-o", str(exe)],
                               capture_output=True, text=True, timeout=300)
        assert build.returncode == 0, build.stderr[-3000:]
    run = subprocess.run([str(exe), str(real_blocks)], capture_output=True, text=True, timeout=300)
    if run.returncode == 4:
        raise AssertionError(f"the window does not follow the schedule: {run.stdout}")
    assert run.returncode == 0, run.stdout + run.stderr
    return [(tmp / f"{mode}{i}.{real_blocks}.bin").read_bytes() for i in range(len(sizes))]
