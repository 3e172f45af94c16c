"""Kernels kept in files of any extension that a unit `#include`s (CloverLeaf's `kernel_files/*.cuknl`).

The walk lists files by extension; a file it does not list is still scanned when a listed file includes it (resolved
from the includer's directory, then the directories above it inside the tree), its kernels attributed to it with the
including unit's dialect, and extraction takes the unit's flags and writes the body into the MEP's kernel file.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import tomllib
from conftest import needs_nvcc, run_cli

from s2s.extract.mep_writer import make_mep
from s2s.scan.sources import is_foreign_include, resolve_foreign
from s2s.scan.tree import scan_tree


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


APP = {
    "Makefile": "NVFLAGS = -O2 -DSCALE_BY=3\nall: app\napp: app.cu\n\tnvcc $(NVFLAGS) -c app.cu -o app.o\n",
    "app.cu": """#include <cuda_runtime.h>
#include "kernel_files/header.hpp"
#include "kernel_files/scale.cuknl"
#define N 4096
int main() {
    float* d;
    cudaMalloc((void**)&d, N * sizeof(float));
    scale_kernel<<<N / BLOCK, BLOCK>>>(d, 2.0f, N);
    shift_kernel<<<N / BLOCK, BLOCK>>>(d, N);
    cudaDeviceSynchronize();
    return 0;
}
""",
    "kernel_files/header.hpp": "#define BLOCK 256\n#define AT(i) (i)\n",
    "kernel_files/scale.cuknl": """// kernel bodies, included by app.cu
#include "shift.knlinc"
__global__ void scale_kernel(float* x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[AT(i)] = a * x[AT(i)] * SCALE_BY;
}
""",
    "kernel_files/shift.knlinc": "__global__ void shift_kernel(float* x, int n) { int i = threadIdx.x; if (i < n) x[i] += 1.0f; }\n",
    "kernel_files/orphan.cuknl": "__global__ void orphan_kernel(float* x) { x[0] = 0; }\n",  # included by nothing
    "hip/main.cpp": """#include <hip/hip_runtime.h>
#include "hk.kinc"
int main() { float* d; hipMalloc((void**)&d, 64 * sizeof(float)); hipLaunchKernelGGL(hk, dim3(1), dim3(64), 0, 0, d); return 0; }
""",
    "hip/hk.kinc": "__global__ void hk(float* x) { x[threadIdx.x] = 1.0f; }\n",
}


def _found(tree: Path, **kw: object) -> dict[str, tuple[str, str]]:
    return {k.name: (k.file, k.language) for k in scan_tree(tree, **kw).kernels}  # type: ignore[arg-type]


def test_kernels_in_included_files_of_any_extension_are_scanned(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "app", APP)
    assert _found(tree, jobs=1) == {
        "scale_kernel": ("kernel_files/scale.cuknl", "cuda"),
        "shift_kernel": ("kernel_files/shift.knlinc", "cuda"),  # included by an included file, from its own directory
        "hk": ("hip/hk.kinc", "hip"),  # the dialect of the unit that includes it
    }  # orphan.cuknl: no unit includes it, so no compiler sees it


def test_included_files_follow_the_cache(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "app", APP)
    cache = tmp_path / "cache"
    first = _found(tree, cache_dir=cache, jobs=1)
    again = scan_tree(tree, cache_dir=cache, jobs=1)
    assert {k.name: (k.file, k.language) for k in again.kernels} == first and again.extra["parsed"] == "0"
    knl = tree / "kernel_files" / "scale.cuknl"
    knl.write_text(knl.read_text() + "__global__ void late_kernel(float* x) { x[1] = 2; }\n")
    os.utime(knl, (1, 1))  # older than the cache's racy window: only its size tells it changed
    assert _found(tree, cache_dir=cache, jobs=1)["late_kernel"] == ("kernel_files/scale.cuknl", "cuda")
    unit = tree / "app.cu"
    unit.write_text('#include "kernel_files/orphan.cuknl"\n' + unit.read_text())  # now something includes it
    assert _found(tree, cache_dir=cache, jobs=1)["orphan_kernel"] == ("kernel_files/orphan.cuknl", "cuda")


def test_includes_out_of_the_tree_are_not_followed(tmp_path: Path) -> None:
    outside = _tree(tmp_path / "elsewhere", {"secret.cuknl": "__global__ void secret(float* x) { x[0] = 1; }\n"})
    tree = _tree(tmp_path / "app", {
        "a.cu": '#include "../elsewhere/secret.cuknl"\n#include "link.cuknl"\n#include "build/gen.cuknl"\n'
                '__global__ void own(float* x) { x[0] = 0; }\n',
        "build/gen.cuknl": "__global__ void generated(float* x) { x[0] = 3; }\n",  # a directory the walk skips
    })
    (tree / "link.cuknl").symlink_to(outside / "secret.cuknl")
    assert _found(tree, jobs=1) == {"own": ("a.cu", "cuda")}
    assert resolve_foreign(tree, "a.cu", "../elsewhere/secret.cuknl", False) is None
    assert resolve_foreign(tree, "a.cu", "link.cuknl", False) is None
    assert is_foreign_include("k.cuknl", True) and not is_foreign_include("vector", True)
    assert not is_foreign_include("x.cuh", False)  # the walk lists it already


def test_include_resolved_from_the_directories_above_the_includer(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "app", {
        "src/deep/u.cu": '#include "kernels/k.gpu"\nint main() { k<<<1, 32>>>(0); }\n',  # found through `-I.` of the root
        "kernels/k.gpu": "__global__ void k(float* x) { if (x) x[threadIdx.x] = 1; }\n",
    })
    assert _found(tree, jobs=1) == {"k": ("kernels/k.gpu", "cuda")}


def test_include_resolved_through_the_include_paths_of_compile_commands(tmp_path: Path) -> None:
    import json

    tree = _tree(tmp_path / "app", {
        "src/u.cu": '#include "knl/k.gpu"\nint main() { k<<<1, 32>>>(0); }\n',
        "include/knl/k.gpu": "__global__ void k(float* x) { if (x) x[threadIdx.x] = 1; }\n",
    })
    assert _found(tree, jobs=1) == {}  # no directory above src/u.cu holds knl/k.gpu
    entry = {"directory": str(tree / "src"), "file": "u.cu", "arguments": ["nvcc", "-I", "../include", "-c", "u.cu"]}
    (tree / "compile_commands.json").write_text(json.dumps([entry]))
    assert _found(tree, jobs=1) == {"k": ("include/knl/k.gpu", "cuda")}
    out, _m, _ex = make_mep(str(tree), "k", str(tmp_path / "m"), mode="names")
    assert "__global__ void k" in (out / "kernel.cu").read_text()


def test_kernel_of_an_included_file_extracts_with_the_units_flags(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "app", APP)
    out, manifest, ex = make_mep(str(tree), "scale_kernel", str(tmp_path / "mep"))
    text = (out / "kernel.cu").read_text()
    assert "__global__ void scale_kernel" in text and "#define AT(i) (i)" in text
    doc = tomllib.loads((out / "mep.toml").read_text())
    assert doc["origin"]["file"] == "kernel_files/scale.cuknl" and doc["origin"]["unit"] == "app.cu"
    assert "-DSCALE_BY=3" in doc["flags"] and "Makefile" in doc["origin"]["flags_from"]
    assert doc["launch"]["block"] == [256, 1, 1] and doc["launch"]["grid"] == [16, 1, 1]
    params = {q.name: q for q in manifest.params}
    assert params["x"].count == 4096 and params["n"].value == 4096, params["x"].source
    assert any("not compiled on its own" in n for n in ex.notes)


@pytest.mark.slow
@needs_nvcc
def test_kernel_file_of_an_included_kernel_compiles_alone(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "app", APP)
    res = run_cli("extract", str(tree), "--kernel", "kernel_files/scale.cuknl:scale_kernel", "-o", str(tmp_path / "m"))
    assert res.returncode == 0, res.stderr
    doc = tomllib.loads((tmp_path / "m" / "mep.toml").read_text())
    nvcc = shutil.which("nvcc")
    assert nvcc is not None
    p = subprocess.run([nvcc, "-c", str(tmp_path / "m" / "kernel.cu"), "-o", os.devnull, *doc["flags"]],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr


def test_hip_kernels_by_content_extract_as_hip_in_a_cu_file_and_in_an_included_file(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "app", {
        "port/main.cu": """#include <hip/hip_runtime.h>
#include "hk.kinc"
#define N 64
__global__ void hip_in_cu(float* a, int n) { int i = threadIdx.x; if (i < n) a[i] = 2.0f; }
int main() {
    float* d;
    hipMalloc((void**)&d, N * sizeof(float));
    hipLaunchKernelGGL(hip_in_cu, dim3(1), dim3(N), 0, 0, d, N);
    hipLaunchKernelGGL(hk, dim3(1), dim3(N), 0, 0, d);
    return 0;
}
""",
        "port/hk.kinc": "__global__ void hk(float* x) { x[threadIdx.x] = 1.0f; }\n",
    })
    for name in ("hip_in_cu", "hk"):
        out, m, _ = make_mep(str(tree), name, str(tmp_path / name), mode="names")
        assert (m.backend, m.kernel_file) == ("hip", "kernel.hip.cpp") and (out / "kernel.hip.cpp").is_file()
        assert m.launch.block == (64, 1, 1) and {p.name: p for p in m.params}[m.params[0].name].count == 64


def test_limits_macros_of_the_cuda_runtime_are_not_missing(tmp_path: Path) -> None:
    """nvcc's runtime headers bring <limits.h> into every CUDA unit (CloverLeaf's reduction kernel uses INT_MIN with no
    include of its own): the parsing shim does too, so the kernel is not refused as calling an undefined name."""
    tree = _tree(tmp_path / "app", {
        "Makefile": "NVFLAGS = -O2 -DUNUSED=1\nall:\n\tnvcc $(NVFLAGS) -c red.cu\n",
        "red.cu": '#include "kernel_files/red.cuknl"\nint main() { int* d = 0; lo<<<1, 32>>>(d); return 0; }\n',
        "kernel_files/red.cuknl": "__device__ int floor_of(int* x) { return INT_MIN + (int)sizeof(size_t) + (x ? CHAR_BIT : 0); }\n"
                                  "__global__ void lo(int* x) { x[threadIdx.x] = floor_of(x); }\n",
    })
    out, _m, ex = make_mep(str(tree), "lo", str(tmp_path / "m"), mode="clang")
    assert ex.mode == "clang" and "floor_of" in (out / "kernel.cu").read_text()
