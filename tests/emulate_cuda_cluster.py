"""Run a CUDA kernel that uses thread-block clusters (sm_90) on the CPU: one OS thread per CUDA thread of a cluster
(started once a launch), a cluster's blocks at once.

Clusters of `cluster` blocks along y run one after another; the threads of all blocks of one cluster run at once.
`__syncthreads()` is a barrier of the caller's block, `__cluster_barrier_arrive(); __cluster_barrier_wait();` one of
the whole cluster (the arrive does nothing, the wait arrives and waits: the kernels here always call them back to
back), `__shared__` arrays live in one arena per block (each declaration at its own offset), and
`__cluster_map_shared_rank(p, r)` is the same offset in block r's arena: a block that read its own arena where it
should read another's, or a missing cluster barrier, gives other sums or garbage. float4 is a plain struct; buffers
can start off a 16-byte boundary to take a rewrite's scalar path. No GPU needed.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from math import prod
from pathlib import Path

from emulate_cuda import Launch, kernel_text
from session_builds import compile_threaded

from s2s.lang.kernel_facts import kernel_facts
from s2s.passes.common.thread_index import elem_type

SHIM = """\
#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
struct s2s_dim3 { unsigned x, y, z; };
static thread_local s2s_dim3 threadIdx, blockIdx;
static s2s_dim3 blockDim, gridDim;
static thread_local std::barrier<>* s2s_block;
static thread_local char* s2s_arena;
static std::barrier<>* s2s_cluster;
static char s2s_arenas[8][1 << 16];
struct float4 { float x, y, z, w; };
#define __global__
#define __device__
#define __restrict__
#define __cluster_dims__(x, y, z)
#define __launch_bounds__(...)
static void __syncthreads() { s2s_block->arrive_and_wait(); }
static void __cluster_barrier_arrive() {}
static void __cluster_barrier_wait() { s2s_cluster->arrive_and_wait(); }
static void* __cluster_map_shared_rank(const void* p, unsigned r) {
    return s2s_arenas[r] + (static_cast<const char*>(p) - s2s_arena);
}
template <typename F> static void s2s_launch(F k, s2s_dim3 g, s2s_dim3 b, unsigned cluster) {
    // one OS thread per thread of a cluster's blocks, started once a launch and reused cluster after cluster (as in
    // emulate_cuda_block.py): between two clusters every thread waits at `gate` with the launcher; each cluster ends
    // with every barrier's phase complete (else it never ends), so the barriers are reused too
    gridDim = g; blockDim = b;
    unsigned n = b.x * b.y * b.z;
    std::vector<std::barrier<>*> blocks;
    for (unsigned r = 0; r < cluster; ++r) blocks.push_back(new std::barrier<>(n));
    std::barrier<> whole(n * cluster);
    s2s_cluster = &whole;
    std::barrier<> gate(n * cluster + 1);
    bool done = false;
    unsigned x = 0, y0 = 0, z = 0;
    std::vector<std::thread> ts;
    for (unsigned r = 0; r < cluster; ++r) for (unsigned t = 0; t < n; ++t)
        ts.emplace_back([&, r, t] {
            threadIdx = {t % b.x, t / b.x % b.y, t / (b.x * b.y)};
            s2s_block = blocks[r]; s2s_arena = s2s_arenas[r];
            for (;;) {
                gate.arrive_and_wait();  // a cluster starts (x, y0, z set, the arenas poisoned) or the launch ends
                if (done) return;
                blockIdx = {x, y0 + r, z};
                k();
                gate.arrive_and_wait();  // every thread of the cluster has returned
            }
        });
    for (z = 0; z < g.z; ++z) for (y0 = 0; y0 < g.y; y0 += cluster) for (x = 0; x < g.x; ++x) {
        memset(s2s_arenas, 0xff, sizeof s2s_arenas);  // NaN bits: a value read before it was written shows
        gate.arrive_and_wait();
        gate.arrive_and_wait();
    }
    done = true;
    gate.arrive_and_wait();
    for (auto& t : ts) t.join();
    for (auto* p : blocks) delete p;
}
"""

_SHARED = re.compile(r"__shared__\s+(\w+)\s+(\w+)((?:\s*\[\s*\d+\s*\])+)\s*;")
_SIZE = {"float": 4, "int": 4, "unsigned": 4, "double": 8}


def arena_text(text: str) -> str:
    """Each `__shared__ T name[..];` as a reference to its own 16-byte-aligned piece of the block's arena."""
    at = 0

    def place(m: re.Match[str]) -> str:
        nonlocal at
        dims = re.findall(r"\d+", m.group(3))
        here, at = at, at + (prod(int(d) for d in dims) * _SIZE[m.group(1)] + 15) // 16 * 16
        shape = "".join(f"[{d}]" for d in dims)
        return f"auto& {m.group(2)} = *reinterpret_cast<{m.group(1)}(*){shape}>(s2s_arena + {here});"

    return _SHARED.sub(place, text)


def same_outputs(tmp: Path, name: str, before: bytes, after: bytes, launches: tuple[Launch, Launch], cluster: int,
                 counts: dict[str, int], scalars: dict[str, str], rtol: float, offset: int = 0) -> str:
    """The original (clusters of one block) and the rewrite (clusters of `cluster` blocks along y) on identical buffers,
    each `offset` elements past a 16-byte boundary; "SAME" when every floating-point buffer matches within `rtol`
    (relative) and every other byte for byte, else what differed."""
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
        n = counts[p.name]
        fill = f"({ty})((i * 7919u + {i * 104729}u) % 1000u) / ({ty})7" if ty in {"float", "double"} else f"({ty})((i * 31u + {i}) % 97u)"
        for side in args:
            setup += [f"{ty}* {p.name}_{side} = ({ty}*)aligned_alloc(16, ({n} + 8) * sizeof({ty})) + {offset};",
                      f"for (long i = 0; i < {n}; ++i) {p.name}_{side}[i] = {fill};"]
            args[side].append(f"{p.name}_{side}")
        a, b = f"{p.name}_a", f"{p.name}_b"
        checks.append(f"for (long i = 0; i < {n}; ++i) {{ double d = (double){a}[i] - (double){b}[i], m = {a}[i] < 0 ? -{a}[i] : {a}[i];"
                      f' if (!(d <= {rtol} * m + 1e-30 && -d <= {rtol} * m + 1e-30)) {{ printf("DIFF {p.name} %ld\\n", i); return 1; }} }}')
    main = ["int main() {", *setup]
    for side, suffix, launch, c in (("a", "before", launches[0], 1), ("b", "after", launches[1], cluster)):
        g, b = ", ".join(f"{v}u" for v in launch.grid), ", ".join(f"{v}u" for v in launch.block)
        main.append(f"s2s_launch([&] {{ {name}_{suffix}({', '.join(args[side])}); }}, s2s_dim3{{{g}}}, s2s_dim3{{{b}}}, {c}u);")
    main += [*checks, 'printf("SAME\\n");', "return 0;", "}"]
    program = tmp / f"{name}_cluster.cpp"
    kernels = kernel_text(before, name, "before") + "\n" + arena_text(kernel_text(after, name, "after"))
    exe = tmp / f"{name}_cluster"
    build = compile_threaded(gxx, program, SHIM + kernels + "\n" + "\n".join(main), exe)
    assert build.returncode == 0, build.stderr[-3000:]
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    return run.stdout.strip() or run.stderr.strip() or f"exit {run.returncode}"
