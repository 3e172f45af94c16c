"""Replay a sequence MEP's launch list on the CPU, thread after thread, and return every buffer's final bytes.

The kernels (kernels.cu, and fused.cu when the MEP has fused pairs) compile with g++ under emulate_cuda's shim; each
launch of data/replay.txt (or data/fused.txt) runs every thread of its grid in order, or in reverse order: for kernels
without barriers, shared memory or warp collectives both are legal schedules of the GPU's, so a fusion that lets one
thread read what another thread's body has not written yet (or has already overwritten) gives a different final state
in one of the two orders. No GPU needed.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from emulate_cuda import SHIM

from s2s.sequence.fusion import params_and_body

RUNNER = r"""
#include <math.h>
#include <vector>
template <class T> static T s2s_val(const char* hex) {
    unsigned char b[sizeof(T)];
    for (size_t i = 0; i < sizeof(T); ++i) { unsigned v = 0; sscanf(hex + 2 * i, "%2x", &v); b[i] = (unsigned char)v; }
    T out;
    memcpy(&out, b, sizeof(T));
    return out;
}
static bool s2s_reverse = false;
#define RUN(k, g0, g1, g2, b0, b1, b2, ...) do { \
    gridDim = {g0, g1, g2}; blockDim = {b0, b1, b2}; \
    long total = (long)g0 * g1 * g2 * b0 * b1 * b2; \
    for (long q = 0; q < total; ++q) { \
        long p = s2s_reverse ? total - 1 - q : q; \
        threadIdx.x = p % b0; p /= b0; threadIdx.y = p % b1; p /= b1; threadIdx.z = p % b2; p /= b2; \
        blockIdx.x = p % g0; p /= g0; blockIdx.y = p % g1; p /= g1; blockIdx.z = p; \
        k(__VA_ARGS__); } } while (0)
"""


def _without_includes(text: str) -> str:
    return "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("#include"))


def _read_list(lines: list[str]) -> list[tuple[int, list[int], list[list[str]]]]:
    at = next(i for i, ln in enumerate(lines) if ln.startswith("launches "))
    out: list[tuple[int, list[int], list[list[str]]]] = []
    for ln in lines[at + 1:]:
        w = ln.split()
        if w[0] == "l":
            out.append((int(w[1]), [int(x) for x in w[2:8]], []))
        elif w[0] == "a":
            out[-1][2].append(w[1:])
    return out


def replay_on_cpu(mep: Path, plan: str, tmp: Path, reverse: bool = False) -> list[bytes]:
    """Every buffer's bytes after the launches of data/PLAN.txt ("replay" or "fused") ran on the CPU."""
    manifest = json.loads((mep / "sequence.json").read_text())
    names: list[str] = manifest["harness_kernels"]
    sources = (mep / "kernels.cu").read_text() + ("\n" + (mep / "fused.cu").read_text() if (mep / "fused.cu").is_file() else "")
    types = {}
    for name in names:
        found = params_and_body(sources.encode(), name)
        assert found is not None, name
        types[name] = [decl.format("").strip() for decl, _n in found[0]]
    sizes = [b["bytes"] for b in manifest["buffers"]]
    body = ["int main() {", f"s2s_reverse = {'true' if reverse else 'false'};", "std::vector<unsigned char*> B;"]
    for i, n in enumerate(sizes):
        body += [f"B.push_back((unsigned char*)aligned_alloc(16, {(n + 15) // 16 * 16}));",
                 f'{{ FILE* f = fopen("{mep}/data/buf{i}.before.bin", "rb"); if (!f || fread(B[{i}], 1, {n}, f) != {n}) return 3; fclose(f); }}']
    for k, cfg, args in _read_list((mep / "data" / f"{plan}.txt").read_text().splitlines()):
        exprs = []
        for ty, a in zip(types[names[k]], args):
            if a[0] == "p":
                exprs.append(f"({ty})(B[{a[1]}] + {a[2]})")
            elif a[0] == "v":
                exprs.append(f's2s_val<{ty}>("{a[2]}")')
            else:
                exprs.append(f"({ty})nullptr")
        body.append(f"RUN({names[k]}, {', '.join(f'{v}u' for v in cfg)}, {', '.join(exprs)});")
    for i, n in enumerate(sizes):
        body.append(f'{{ FILE* f = fopen("{tmp}/out{i}.bin", "wb"); fwrite(B[{i}], 1, {n}, f); fclose(f); }}')
    body += ["return 0;", "}"]
    program = tmp / f"{plan}_emulated.cpp"
    program.write_text(SHIM + RUNNER + _without_includes(sources) + "\n" + "\n".join(body) + "\n")
    exe = tmp / f"{plan}_emulated"
    gxx = shutil.which("g++")
    assert gxx is not None, "g++ is needed"
    build = subprocess.run([gxx, "-O1", "-ffp-contract=off", "-std=c++17", "-w", str(program), "-o", str(exe)],
                           capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr[-3000:]
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    return [(tmp / f"out{i}.bin").read_bytes() for i in range(len(sizes))]
