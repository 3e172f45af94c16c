"""Scan throughput: generate a tree of >= 1M lines of mixed C++/CUDA/headers, scan it, print lines per second.

    python bench/scan_speed.py [--lines 1000000] [--out bench/results/scan_speed.json]
"""
from __future__ import annotations

import argparse
import json
import platform
import random
import tempfile
import time
from pathlib import Path

from provenance import commit

from s2s.scan.tree import scan_tree

HEADER = """#pragma once
#include <cstddef>
#ifndef BLOCK_{i}
#define BLOCK_{i} 256
#endif
struct Cell{i} {{ float rho, u, v, w, e; int flags; }};
namespace mod{i} {{
inline double weight_{i}(double x) {{ return x * x + {i}.0; }}
template <typename T> struct Accum{i} {{ T sum = T(0); void add(T v) {{ sum += v; }} }};
}}
"""
HOST = """#include "mod{i}.h"
#include <vector>
#include <cstdio>
// host-only translation unit {i}: bookkeeping, I/O and setup code with no kernels
namespace io{i} {{
static int parse_line_{i}(const char* s, double* out, int n) {{
    int k = 0;
    for (int j = 0; j < n && s[j]; ++j) {{
        if (s[j] == ',') {{ out[k++] = j * 0.5; }}
    }}
    return k;
}}
void setup_{i}(std::vector<double>& v) {{
    for (size_t j = 0; j < v.size(); ++j) {{
        v[j] = mod{i}::weight_{i}(double(j));
        if (v[j] > 1e9) {{ std::printf("overflow at %zu\\n", j); }}
    }}
}}
}}
"""
KERNEL = """#include "mod{i}.h"
#define IDX{i}(i, j, n) ((i) * (n) + (j))
__device__ float flux_{i}(float a, float b) {{ return 0.5f * (a + b); }}
__global__ void update_{i}(const float* __restrict__ in, float* out, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float s = 0.0f;
    for (int k = 0; k < 8; ++k) {{ s += flux_{i}(in[i], in[(i + k) % n]); }}
    out[i] = s;
}}
void run_{i}(const float* d_in, float* d_out, int n, int steps) {{
    dim3 block(BLOCK_{i});
    dim3 grid((n + block.x - 1) / block.x);
    for (int t = 0; t < steps; ++t) {{
        update_{i}<<<grid, block>>>(d_in, d_out, n);
    }}
}}
"""


def generate(root: Path, target_lines: int, seed: int = 7) -> int:
    rng = random.Random(seed)
    lines = 0
    i = 0
    while lines < target_lines:
        d = root / f"pkg{i // 50:03d}"
        d.mkdir(parents=True, exist_ok=True)
        parts = [("mod{i}.h", HEADER), (f"host{i}.cpp", HOST * rng.randint(4, 10)), (f"kern{i}.cu", KERNEL)]
        for name, body in parts:
            text = body.format(i=i).replace("{i}", str(i))
            if name.startswith("host"):
                text = text.replace(f"namespace io{i} {{", f"namespace io{i} {{", 1)
            (d / name.format(i=i)).write_text(text)
            lines += text.count("\n")
        i += 1
    return lines


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--out", default="bench/results/scan_speed.json")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        generated = generate(root, args.lines)
        t0 = time.perf_counter()
        index = scan_tree(root)
        seconds = time.perf_counter() - t0
        from s2s.extract.mep_writer import make_mep

        t0 = time.perf_counter()
        make_mep(str(root), "pkg001/kern77.cu:update_77", str(root.parent / f"{root.name}-mep"), index=index)
        extract_seconds = time.perf_counter() - t0
    rate = index.lines_scanned / seconds
    commit_id = commit()
    result = {"lines": index.lines_scanned, "generated_lines": generated, "files": index.files_scanned,
              "kernels": len(index.kernels), "launches": len(index.launches), "seconds": round(seconds, 3),
              "lines_per_second": round(rate), "extract_one_kernel_seconds": round(extract_seconds, 2), "machine": platform.processor() or platform.machine(),
              "cpus": __import__("os").cpu_count(), "date": time.strftime("%Y-%m-%d"), "commit": commit_id}
    print(json.dumps(result))
    print(f"scan: {index.lines_scanned:,} lines in {seconds:.2f} s = {rate:,.0f} lines/s "
          f"({len(index.kernels)} kernels, {len(index.launches)} launches); extract + MEP of one kernel {extract_seconds:.1f} s")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
