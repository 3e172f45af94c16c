from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import SAMPLES, needs_nvcc

from s2s.base.errors import UserError
from s2s.extract.clang_closure import clang_args, parse_unit, unit_flags
from s2s.extract.extract import Extraction, extract
from s2s.scan.compdb import CompileCommand


def _tree(root: Path, files: dict[str, str], commands: dict[str, str] | None = None) -> Path:
    """A fixture tree; `commands` maps a unit to its nvcc flags (written to compile_commands.json)."""
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text).lstrip())
    if commands is not None:
        entries = [{"directory": ".", "file": unit, "command": f"nvcc -arch=sm_90 -O3 {flags} -c {unit} -o {unit}.o"}
                   for unit, flags in commands.items()]
        (root / "compile_commands.json").write_text(json.dumps(entries))
    return root


def _texts(ex: Extraction) -> list[str]:
    return [d.text for d in ex.items]


def _nvcc(ex: Extraction, tmp_path: Path, name: str = "kernel") -> subprocess.CompletedProcess[str]:
    src = tmp_path / f"{name}_extracted.cu"
    src.write_text(ex.text)
    return subprocess.run(["nvcc", "-c", "-arch=sm_90", str(src), "-o", str(src.with_suffix(".o"))],
                          capture_output=True, text=True, timeout=300)


OVERLOADS = {
    "k.cu": """
        #include <cuda_runtime.h>
        __device__ float f(float x) { return x * 2.0f; }
        __device__ double f(double x) { return x * 3.0; }
        int f(int x) { return x + 1; }
        __global__ void k(float* out) { out[0] = f(1.0f); }
        """,
}


def test_overload_resolution_picks_the_float_overload(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "t", OVERLOADS, {"k.cu": ""})
    ex = extract(tree, "k")
    assert ex.mode == "clang"
    fs = [d for d in ex.items if d.names == ("f",)]
    assert len(fs) == 1 and "float f(float x)" in fs[0].text
    assert any("function f (k.cu:3) is not used under the unit's flags" in n for n in ex.notes)
    by_names = extract(tree, "k", mode="names")
    assert by_names.mode == "names" and len([d for d in by_names.items if d.names == ("f",)]) == 2


MACROS = {
    "config.h": """
        #ifdef USE_BIG
        #define SZ 1024
        #else
        #define SZ 16
        #endif
        """,
    "big.h": """
        #ifdef USE_BIG
        #define TILE 32
        #endif
        """,
    "small.h": """
        #ifndef USE_BIG
        #define TILE 8
        #endif
        """,
    "k.cu": """
        #include "config.h"
        #include "big.h"
        #include "small.h"
        __global__ void k(float* out) {
            out[threadIdx.x] = SZ * TILE;
        }
        """,
}


@pytest.mark.parametrize("flags, tile_file, size", [("-DUSE_BIG", "big.h", 1024), ("", "small.h", 16)])
def test_macro_under_D_flags(tmp_path: Path, flags: str, tile_file: str, size: int) -> None:
    tree = _tree(tmp_path / "t", MACROS, {"k.cu": flags})
    ex = extract(tree, "k")
    assert ex.mode == "clang"
    files = {d.file for d in ex.items}
    assert files == {"config.h", tile_file}, ex.items
    assert any(f"#define SZ {size}" in t for t in _texts(ex))
    if flags:
        assert "#define USE_BIG 1" in ex.text  # the flag's value travels with the block that tests it


@pytest.mark.slow
@needs_nvcc
def test_macro_under_D_flags_compiles_with_the_same_values(tmp_path: Path) -> None:
    files = dict(MACROS)
    files["k.cu"] = files["k.cu"].replace("out[threadIdx.x]", 'static_assert(SZ == 16 && TILE == 8, "flags");\n    out[threadIdx.x]')
    ex = extract(_tree(tmp_path / "t", files, {"k.cu": ""}), "k")
    res = _nvcc(ex, tmp_path)
    assert res.returncode == 0, res.stderr


TEMPLATES = {
    "types.h": """
        typedef float real_t;
        template <typename T> struct Traits { typedef T value_type; };
        """,
    "k.cu": """
        #include "types.h"
        template <typename T>
        __global__ void scale(T* x, T a, int n) {
            int i = threadIdx.x;
            if (i < n) x[i] = a * x[i];
        }
        __global__ void twice(Traits<real_t>::value_type* x) { x[threadIdx.x] *= 2; }
        void run(real_t* d, int n) { scale<real_t><<<1, 32>>>(d, (real_t)2, n); }
        """,
}


def test_typedef_behind_a_template_argument(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "t", TEMPLATES, {"k.cu": ""})
    ex = extract(tree, "scale")
    assert ex.mode == "clang" and ex.instantiations == ["real_t"]
    assert any("typedef float real_t" in t for t in _texts(ex))  # named only at the launch site
    assert not any("Traits" in t for t in _texts(ex))
    ex2 = extract(tree, "twice")
    assert [d.names[0] for d in ex2.items] == ["real_t", "Traits"]


@needs_nvcc
def test_template_instantiation_compiles(tmp_path: Path) -> None:
    ex = extract(_tree(tmp_path / "t", TEMPLATES, {"k.cu": ""}), "scale")
    res = _nvcc(ex, tmp_path)
    assert res.returncode == 0, res.stderr


def test_no_compile_commands_falls_back_to_names(tmp_path: Path) -> None:
    ex = extract(_tree(tmp_path / "t", OVERLOADS), "k")
    assert ex.mode == "names"
    assert any(n.startswith("name-based closure (tree-sitter index): no compile flags for k.cu") for n in ex.notes)


def test_missing_header_falls_back_with_its_location(tmp_path: Path) -> None:
    files = {"k.cu": '#include <mylib/thing.h>\n__global__ void k(float* out) { out[0] = 1.0f; }\n'}
    tree = _tree(tmp_path / "t", files, {"k.cu": ""})
    ex = extract(tree, "k")
    assert ex.mode == "names"
    assert "name-based closure (tree-sitter index): k.cu:1: 'mylib/thing.h' file not found" in ex.notes
    with pytest.raises(UserError, match="libclang could not be used"):
        extract(tree, "k", mode="clang")


def test_undeclared_identifier_is_missing(tmp_path: Path) -> None:
    files = {"k.cu": "__global__ void k(float* out) { out[0] = not_defined_anywhere(1.0f); }\n"}
    tree = _tree(tmp_path / "t", files, {"k.cu": ""})
    with pytest.raises(UserError, match="not_defined_anywhere"):
        extract(tree, "k")
    ex = extract(tree, "k", allow_missing=True)
    assert ex.mode == "clang" and any("not_defined_anywhere" in n for n in ex.notes)


CUDA_ARCH = {
    "k.cu": """
        __device__ float dev_only(float x) { return x + 1.0f; }
        float host_only(float x) { return x - 1.0f; }
        __global__ void k(float* x) {
        #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 600
            x[0] = dev_only(x[0]);
        #else
            x[0] = host_only(x[0]);
        #endif
        }
        """,
}


def test_cuda_arch_branches_keep_both_passes(tmp_path: Path) -> None:
    # the host pass sees host_only (clang rejects the wrong-side call: found by name), the device pass dev_only
    ex = extract(_tree(tmp_path / "t", CUDA_ARCH, {"k.cu": ""}), "k")
    assert ex.mode == "clang" and any("host and device passes" in n for n in ex.notes)
    assert [d.names[0] for d in ex.items] == ["dev_only", "host_only"]


@pytest.mark.slow
@needs_nvcc
def test_cuda_arch_branches_compile(tmp_path: Path) -> None:
    res = _nvcc(extract(_tree(tmp_path / "t", CUDA_ARCH, {"k.cu": ""}), "k"), tmp_path)
    assert res.returncode == 0, res.stderr


def test_libclang_that_cannot_load_falls_back(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "t", OVERLOADS, {"k.cu": ""})
    code = ("import clang.cindex as c; c.Config.set_library_file('/nonexistent/libclang.so'); "
            "from s2s.extract.extract import extract; ex = extract(__import__('sys').argv[1], 'k'); print(ex.mode); print(ex.notes[0])")
    res = subprocess.run([sys.executable, "-c", code, str(tree)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    mode, note = res.stdout.splitlines()[:2]
    assert mode == "names" and "libclang cannot be loaded" in note


def test_device_function_from_another_unit(tmp_path: Path) -> None:
    files = {
        "helper.cuh": "__device__ float helper(float x);\n",
        "a.cu": '#include "helper.cuh"\n__global__ void k(float* x) { x[0] = helper(x[0]); }\n',
        "b.cu": '#include "helper.cuh"\n__device__ float helper(float x) { return 2.0f * x; }\n',
    }
    ex = extract(_tree(tmp_path / "t", files, {"a.cu": "-rdc=true", "b.cu": "-rdc=true"}), "k")
    assert ex.mode == "clang"
    assert [(d.file, d.kind) for d in ex.items] == [("helper.cuh", "function"), ("b.cu", "function")]
    assert any("outside the kernel's translation unit" in n for n in ex.notes)


def test_unit_flags_keep_what_shapes_the_parse(tmp_path: Path) -> None:
    cmd = CompileCommand(file=tmp_path / "k.cu", directory=tmp_path,
                         args=("nvcc", "-arch=sm_90", "-O3", "-Xcompiler", "-fopenmp", "-DA=1", "-D", "B", "-UC",
                               "-Iinc", "-I", "/abs", "-isystem", "sys", "--std=c++20", "-x", "cu", "--expt-relaxed-constexpr",
                               "-rdc=true", "-c", "k.cu", "-o", "k.o", "--define-macro=E=2"))
    flags, _notes = unit_flags(cmd)
    assert flags == ["-D", "A=1", "-D", "B", "-U", "C", "-I", str(tmp_path / "inc"), "-I", "/abs", "-isystem",
                     str(tmp_path / "sys"), "-std=c++20", "-D", "E=2"]


def test_heat3d_stencil7_in_clang_mode() -> None:
    ex = extract(SAMPLES / "heat3d_cuda", "stencil7")
    assert ex.mode == "clang", ex.notes
    assert [d.names[0] for d in ex.items] == ["STENCIL_NCOEFF", "Params", "diffusion_number", "coeffs"]
    assert ex.notes[0].startswith("libclang ")


@pytest.mark.slow
@needs_nvcc
def test_heat3d_stencil7_extract_compiles(tmp_path: Path) -> None:
    ex = extract(SAMPLES / "heat3d_cuda", "stencil7")
    assert ex.mode == "clang"
    res = _nvcc(ex, tmp_path, "stencil7")
    assert res.returncode == 0, res.stderr


SHIM_SMOKE = """
    #include <cuda_runtime.h>
    #include <device_launch_parameters.h>
    #include <cuda_fp16.h>
    #include <cstdio>
    #include <cmath>
    #include <vector>
    #include <memory>
    __device__ __managed__ int counter;
    __constant__ float table[16];
    __global__ void __launch_bounds__(256, 2) k(const float4* __restrict__ in, double* acc, float* out, int n) {
        extern __shared__ float dyn[];
        __shared__ float tile[32];
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        float4 v = __ldg(&in[i]);
        float s = sqrtf(v.x) + expf(v.y) + fabsf(v.z) + rsqrtf(v.w) + __fdividef(1.0f, v.x) + table[i % 16];
        s += __shfl_down_sync(0xffffffffu, s, 16) + min(1.0f, s) + max(i, 3) + std::sqrt(s) + (float)__half(s);
        tile[threadIdx.x % 32] = s;
        dyn[threadIdx.x] = s;
        __syncthreads();
        atomicAdd(acc, (double)s);
        atomicAdd(&counter, 1);
        out[i] = warpSize + tile[0] + make_float3(s, s, s).x;
        if (i == 0) printf("%f\\n", s);
    }
    int main() {
        std::vector<float> h(16, 1.0f);
        float* d = nullptr;
        cudaMalloc(&d, 64 * sizeof(float));
        cudaMemcpyToSymbol(table, h.data(), 16 * sizeof(float));
        cudaDeviceProp prop;
        cudaGetDeviceProperties(&prop, 0);
        dim3 grid((64 + 255) / 256), block(256);
        cudaStream_t st;
        cudaStreamCreate(&st);
        k<<<grid, block, 256 * sizeof(float), st>>>(nullptr, nullptr, d, 64);
        cudaError_t err = cudaGetLastError();
        if (err != cudaSuccess) std::printf("%s\\n", cudaGetErrorString(err));
        cudaDeviceSynchronize();
        cudaFree(d);
    }
    """


@pytest.mark.parametrize("device", [False, True])
def test_shim_parses_common_cuda_without_errors(tmp_path: Path, device: bool) -> None:
    from clang.cindex import Diagnostic

    tree = _tree(tmp_path / "t", {"k.cu": SHIM_SMOKE})
    cmd = CompileCommand(file=tree / "k.cu", directory=tree, args=("nvcc", "-c", "k.cu"))
    args, _notes = clang_args(cmd, device=device)
    tu = parse_unit(tree / "k.cu", args, {})
    errors = [f"{d.location.line}: {d.spelling}" for d in tu.diagnostics if d.severity >= Diagnostic.Error]
    assert errors == []
