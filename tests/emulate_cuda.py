"""Run a CUDA kernel and its rewrite on the CPU, thread after thread, and compare every buffer byte for byte.

For kernels without barriers, shared memory, atomics or warp collectives a sequential run of every thread is a legal
schedule of the GPU's, so a rewrite that changes what any thread computes shows up here. A small shim gives g++
`threadIdx`/`blockIdx`/`blockDim`/`gridDim`, `float4`/`int4` and `make_float4`; buffers can start one element past a
16-byte boundary to take a rewrite's misaligned path. No GPU needed; the test is as real as the C++ compiler.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from s2s.lang.kernel_facts import kernel_facts

SHIM = """\
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
struct float4 { float x, y, z, w; };
struct float2 { float x, y; };
struct int4 { int x, y, z, w; };
struct uint4 { unsigned x, y, z, w; };
static inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
static inline float2 make_float2(float a, float b) { return {a, b}; }
static inline int4 make_int4(int a, int b, int c, int d) { return {a, b, c, d}; }
static inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return {a, b, c, d}; }
struct s2s_dim3 { unsigned x, y, z; };
// a buffer passed to any pointer parameter: `float*`, and a 2-D array parameter `float a[N][M]` (a `float (*)[M]`)
struct s2s_any { void* p; template <typename T> operator T*() const { return (T*)p; } };
static s2s_dim3 threadIdx, blockIdx, blockDim, gridDim;
#define __global__
#define __device__
#define __restrict__
#define __forceinline__ inline
template <typename T> static T atomicAdd(T* p, T v) { T old = *p; *p += v; return old; }
#define LAUNCH(k, g0, g1, g2, b0, b1, b2, ...) do { \\
    gridDim = {g0, g1, g2}; blockDim = {b0, b1, b2}; \\
    for (blockIdx.z = 0; blockIdx.z < g2; ++blockIdx.z) for (blockIdx.y = 0; blockIdx.y < g1; ++blockIdx.y) \\
    for (blockIdx.x = 0; blockIdx.x < g0; ++blockIdx.x) for (threadIdx.z = 0; threadIdx.z < b2; ++threadIdx.z) \\
    for (threadIdx.y = 0; threadIdx.y < b1; ++threadIdx.y) for (threadIdx.x = 0; threadIdx.x < b0; ++threadIdx.x) \\
        k(__VA_ARGS__); } while (0)
"""


@dataclass(frozen=True)
class Launch:
    grid: tuple[int, int, int]
    block: tuple[int, int, int]


def kernel_text(source: bytes, name: str, suffix: str) -> str:
    """The file's #defines and the kernel, renamed NAME_suffix; `#include` lines and `int main` onward left out."""
    text = source.decode()
    text = text[:text.index("int main")] if "int main" in text else text
    text = "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("#include"))
    return re.sub(rf"\b{name}\s*\(", f"{name}_{suffix}(", text, count=1)


def same_outputs(tmp: Path, name: str, before: bytes, after: bytes, launches: tuple[Launch, Launch], counts: dict[str, int],
                 scalars: dict[str, str], offset: int = 0, rtol: float = 0.0) -> str:
    """Compile both kernels into one program, run each on identical buffers (each `offset` elements past a 16-byte
    boundary), and return its report: "SAME" when every buffer matches byte for byte (with `rtol`, floating-point
    buffers within that relative tolerance: a sum in another order)."""
    gxx = shutil.which("g++")
    assert gxx is not None, "g++ is needed"
    facts = kernel_facts(before, "cuda", name)
    assert facts is not None
    setup, args = [], {"a": [], "b": []}
    for i, p in enumerate(facts.params):
        ty = p.base_type.replace("const ", "").strip()
        if not p.pointer:
            for side in args:
                args[side].append(f"({ty})({scalars[p.name]})")
            continue
        n = counts[p.name]
        fill = f"({ty})((i * 7919u + {i * 104729}u) % 1000u) / ({ty})7" if ty in {"float", "double"} else f"({ty})((i * 31u + {i}) % 97u)"
        for side in args:
            buf = f"{p.name}_{side}"
            setup += [f"{ty}* {buf} = ({ty}*)aligned_alloc(64, (({n} + 8) * sizeof({ty}) + 63) / 64 * 64) + {offset};",
                      f"for (long i = 0; i < {n}; ++i) {buf}[i] = {fill};"]
            args[side].append(f"s2s_any{{(void*){buf}}}")
    checks = []
    for p in (q for q in facts.params if q.pointer):
        a, b, n = f"{p.name}_a", f"{p.name}_b", counts[p.name]
        if rtol and p.base_type.replace("const ", "").strip() in {"float", "double"}:
            checks.append(f"for (long i = 0; i < {n}; ++i) if (!({a}[i] - {b}[i] <= {rtol} * ({a}[i] < 0 ? -{a}[i] : {a}[i]) + 1e-30 && "
                          f'{b}[i] - {a}[i] <= {rtol} * ({a}[i] < 0 ? -{a}[i] : {a}[i]) + 1e-30)) {{ printf("DIFF {p.name}\\n"); return 1; }}')
        else:
            checks.append(f'if (memcmp({a}, {b}, {n} * sizeof(*{a}))) {{ printf("DIFF {p.name}\\n"); return 1; }}')
    (ga, ba), (gb, bb) = ((launches[0].grid, launches[0].block), (launches[1].grid, launches[1].block))
    main = ["int main() {", *setup,
            f"LAUNCH({name}_before, {', '.join(f'{v}u' for v in (*ga, *ba))}, {', '.join(args['a'])});",
            f"LAUNCH({name}_after, {', '.join(f'{v}u' for v in (*gb, *bb))}, {', '.join(args['b'])});",
            *checks, 'printf("SAME\\n");', "return 0;", "}"]
    program = tmp / f"{name}_emulated.cpp"
    program.write_text(SHIM + kernel_text(before, name, "before") + "\n" + kernel_text(after, name, "after") + "\n" + "\n".join(main))
    exe = tmp / f"{name}_emulated"
    build = subprocess.run([gxx, "-O1", "-fno-strict-aliasing", "-std=c++17", "-w", str(program), "-o", str(exe)],
                           capture_output=True, text=True, timeout=120)
    assert build.returncode == 0, build.stderr[-3000:]
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    return run.stdout.strip() or run.stderr.strip()
