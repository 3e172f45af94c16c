from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, SAMPLES, needs_nvcc, run_cli
from session_builds import nvcc_checks

from s2s.extract.extract import extract

CUDA_KERNELS = ["linalg::matmul_naive", "linalg::matvec_rows", "stencil7", "reduce_energy", "particles_step", "axpby_t"]


def _nvcc(path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["nvcc", "-c", "-arch=sm_90", *extra, str(path), "-o", str(path.with_suffix(".o"))],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
@needs_nvcc
def test_every_cuda_and_hip_kernel_compiles_alone(tmp_path: Path) -> None:
    from s2s.scan.tree import scan_tree

    srcs = []
    for sample in ("heat3d_cuda", "hip_particles"):
        index = scan_tree(SAMPLES / sample)
        for k in index.kernels:
            ex = extract(SAMPLES / sample, f"{k.file}:{k.name}", index=index)
            ext = ".cu"
            path = tmp_path / f"{sample}_{k.name}{ext}"
            path.write_text(ex.text)
            srcs.append(path)
    # one nvcc process for all files keeps the suite fast on two cores
    res = nvcc_checks("nvcc", ["-c", "-arch=sm_90", "-x", "cu", "-I", str(ROOT / "templates" / "hip_shim")], srcs, tmp_path, 900)
    assert res.returncode == 0, res.stderr[-3000:]


def test_closure_contents_and_provenance() -> None:
    ex = extract(SAMPLES / "heat3d_cuda", "stencil7")
    text = ex.text
    assert "struct Params" in text and "__constant__" in text
    assert "// s2s: from include/physics.cuh:" in text
    start, end = ex.kernel_range
    body = text.encode()[start:end].decode()
    original = (SAMPLES / "heat3d_cuda" / ex.kernel.file).read_bytes()[ex.kernel.start_byte : ex.kernel.end_byte].decode()
    assert body == original
    # dependencies come before their users
    assert text.index("struct Params") < text.index("diffusion_number(const Params")


def test_templated_kernel_carries_instantiations() -> None:
    ex = extract(SAMPLES / "heat3d_cuda", "axpby_t")
    assert any(i.replace(" ", "") == "float,256" for i in ex.instantiations)
    assert "s2s_instance_0" in ex.text


def test_round_trip_splice_is_byte_identical() -> None:
    for name in CUDA_KERNELS:
        ex = extract(SAMPLES / "heat3d_cuda", name)
        original = (SAMPLES / "heat3d_cuda" / ex.kernel.file).read_bytes()
        start, end = ex.kernel_range
        kernel_bytes = ex.text.encode()[start:end]
        spliced = original[: ex.kernel.start_byte] + kernel_bytes + original[ex.kernel.end_byte :]
        assert spliced == original


def test_cli_extract_writes_origin(tmp_path: Path) -> None:
    res = run_cli("extract", str(SAMPLES / "heat3d_cuda"), "--kernel", "reduce_energy", "-o", str(tmp_path / "m"))
    assert res.returncode == 0, res.stderr
    origin = json.loads((tmp_path / "m" / "extract.json").read_text())
    assert origin["sha256"] and origin["mode"] in {"clang", "names"}
    assert (tmp_path / "m" / "kernel.cu").exists()


@pytest.mark.parametrize("kernel, expect", [("no_such_kernel", "no kernel named"), ("matmul_naiv", "did you mean")])
def test_unknown_kernel_suggests(kernel: str, expect: str, tmp_path: Path) -> None:
    res = run_cli("extract", str(SAMPLES / "heat3d_cuda"), "--kernel", kernel, "-o", str(tmp_path / "m"))
    assert res.returncode == 2 and expect in res.stderr and "Traceback" not in res.stderr


def test_ambiguous_kernel_lists_candidates(tmp_path: Path) -> None:
    tree = tmp_path / "app"
    tree.mkdir()
    (tree / "a.cu").write_text("__global__ void twin(float* x) { x[0] = 1; }\n")
    (tree / "b.cu").write_text("__global__ void twin(float* x) { x[0] = 2; }\n")
    res = run_cli("extract", str(tree), "--kernel", "twin", "-o", str(tmp_path / "m"))
    assert res.returncode == 2 and "a.cu:1" in res.stderr and "b.cu:1" in res.stderr and "FILE:NAME" in res.stderr
    res = run_cli("extract", str(tree), "--kernel", "b.cu:twin", "-o", str(tmp_path / "m"))
    assert res.returncode == 0, res.stderr


def test_missing_dependency_named(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "k.cu").write_text("__global__ void k(float* x) {\n  x[0] = helper_not_here(x[1]);\n}\n")
    res = run_cli("extract", str(tmp_path / "app"), "--kernel", "k", "-o", str(tmp_path / "m"))
    assert res.returncode == 2 and "helper_not_here" in res.stderr and "k.cu:1" in res.stderr


def test_flags_from_makefile_when_no_compile_commands(tmp_path: Path) -> None:
    import shutil

    tree = tmp_path / "app"
    shutil.copytree(SAMPLES / "heat3d_cuda", tree, ignore=shutil.ignore_patterns("build", "compile_commands.json"))
    ex = extract(tree, "stencil7")
    assert any("flags read from Makefile" in n for n in ex.notes)
    assert ex.defines.get("NX") == "64" and ex.compile is not None


VENDORED = """\
#pragma once
#define LIB_NAMESPACE_BEGIN namespace lib {
#define LIB_NAMESPACE_END }
LIB_NAMESPACE_BEGIN
template <class T> __host__ __device__ T abs(T v) { return v < 0 ? -v : v; }
template <class T> struct holder { T x; T value; };
int x LIB_NAMESPACE_END
__host__ void uninitialized_fill(float* p, int n) { for (int i = 0; i < n; ++i) p[i] = 0; }
"""
FUNCTOR_KERNEL = """\
#include "rng.cuh"

struct Twice { __device__ float operator()(float v) const { return 2.0f * v; } };

__global__ void draw(float* out, unsigned long long seed, int n, float off)
{
    Twice func;
    Rng random(seed, blockIdx.x * blockDim.x + threadIdx.x);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = func(random.next()) + abs(off) + 1.5f + 0x1F;
}
"""
RNG = """\
#pragma once
struct Rng {
    unsigned long long s;
    __device__ Rng(unsigned long long seed, int id) : s(seed ^ (unsigned long long)id) {}
    __device__ unsigned int bits() { s = s * 6364136223846793005ULL + 1442695040888963407ULL; return (unsigned int)(s >> 33); }
    __device__ float next() { return bits() * 2.3283064e-10f; }
};
"""


@needs_nvcc
def test_vendored_library_and_local_objects_stay_out_of_the_closure(tmp_path: Path) -> None:
    """A vendored header library in the tree (a templated `abs`, macro-heavy lines, a host `uninitialized_fill`)
    is not what the kernel's compile sees; members (`blockIdx.x`, `random.next`), a functor and an object built in
    place are not names to look for; the extraction holds the kernel, Twice and Rng only, and compiles alone."""
    (tmp_path / "vendor" / "lib").mkdir(parents=True)
    (tmp_path / "vendor" / "lib" / "lib.cuh").write_text(VENDORED)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "rng.cuh").write_text(RNG)
    (tmp_path / "src" / "draw.cu").write_text(FUNCTOR_KERNEL)
    ex = extract(tmp_path, "draw", mode="names")
    assert sorted({d.file for d in ex.items}) == ["src/draw.cu", "src/rng.cuh"]
    assert "lib" not in ex.text and "uninitialized_fill" not in ex.text
    out = tmp_path / "draw_alone.cu"
    out.write_text(ex.text)
    proc = subprocess.run(["nvcc", "-c", "-arch=sm_90", str(out), "-o", str(tmp_path / "a.o")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_headers_from_outside_the_tree_are_named(tmp_path: Path) -> None:
    (tmp_path / "k.cu").write_text("#include <cmath>\n#include <cuda_runtime.h>\n#include <mylib/vec.h>\n"
                                   "__global__ void k(float* x, int n) { int i = threadIdx.x; if (i < n) x[i] = sqrtf(x[i]); }\n")
    ex = extract(tmp_path, "k", mode="names")
    note = next(n for n in ex.notes if "from outside the tree" in n)
    assert "<mylib/vec.h>" in note and "<cmath>" not in note and "cuda_runtime" not in note


@pytest.mark.slow
@needs_nvcc
def test_angle_include_the_tree_holds_becomes_an_include_dir(tmp_path: Path) -> None:
    """No compile flags: `<mylib/vec.h>` is found at third_party/mylib/include/mylib/vec.h, so the MEP gets that -I
    (and says so) instead of being told the header is missing."""
    inc = tmp_path / "third_party" / "mylib" / "include" / "mylib"
    inc.mkdir(parents=True)
    (inc / "vec.h").write_text("#pragma once\nstruct vec3 { float x, y, z; };\n"
                               "__device__ inline float dot3(vec3 a, vec3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "norms.cu").write_text(
        "#include <mylib/vec.h>\n__global__ void norms(const vec3* v, float* out, int n)\n"
        "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = dot3(v[i], v[i]); }\n")
    ex = extract(tmp_path, "norms", mode="names")
    want = str((tmp_path / "third_party" / "mylib" / "include").resolve())
    assert ex.include_dirs == [want]
    assert any("<mylib/vec.h> is included with <> and found in the tree" in n for n in ex.notes)
    assert not any("from outside the tree" in n for n in ex.notes)
    out = tmp_path.parent / f"{tmp_path.name}-out"
    out.mkdir()
    (out / "alone.cu").write_text(ex.text)
    proc = subprocess.run(["nvcc", "-c", "-arch=sm_90", f"-I{want}", "alone.cu", "-o", "alone.o"], cwd=out,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    r = run_cli("extract", str(tmp_path), "--kernel", "norms", "-o", str(out / "mep"))
    assert r.returncode == 0, r.stderr
    assert f'"-I{want}"' in (out / "mep" / "mep.toml").read_text()
