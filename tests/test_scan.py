from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import SAMPLES, run_cli

from s2s.scan.tree import scan_tree


def test_cuda_sample_kernels_and_launches() -> None:
    index = scan_tree(SAMPLES / "heat3d_cuda")
    names = {k.qualified for k in index.kernels}
    assert {"linalg::matmul_naive", "linalg::matvec_rows", "stencil7", "reduce_energy", "particles_step", "axpby_t"} <= names
    stencil_sites = [s for s in index.launches if s.kernel == "stencil7"]
    assert stencil_sites and stencil_sites[0].in_loop and stencil_sites[0].enclosing_function
    axpby = next(k for k in index.kernels if k.name == "axpby_t")
    assert axpby.template_params == ("typename T", "int BS")
    sites = [s for s in index.launches if s.kernel.endswith("axpby_t")]
    assert sites[0].template_args.replace(" ", "") == "float,256"


def test_opencl_sample_kernels_traced_from_host() -> None:
    index = scan_tree(SAMPLES / "ocl_solver")
    kernels = {k.name: k for k in index.kernels}
    assert {"matvec", "matmul", "jacobi2d"} <= set(kernels)
    assert all(k.language == "opencl" for k in kernels.values())
    mv = kernels["matvec"]
    assert mv.params[0].address_space == "global" and mv.params[0].pointer
    launched = {s.kernel for s in index.launches if s.kind == "clEnqueueNDRangeKernel"}
    assert {"matvec", "matmul", "jacobi2d"} <= launched
    assert any(s.in_loop for s in index.launches if s.kernel == "jacobi2d")


def test_hip_sample_both_launch_forms() -> None:
    index = scan_tree(SAMPLES / "hip_particles")
    assert index.kernels and all(k.language == "hip" for k in index.kernels)
    kinds = {s.kind for s in index.launches}
    assert {"chevron", "hipLaunchKernelGGL"} <= kinds
    known = {k.name for k in index.kernels}
    assert all(s.kernel.split("::")[-1] in known for s in index.launches)


def test_json_schema(tmp_path: Path) -> None:
    res = run_cli("scan", str(SAMPLES / "heat3d_cuda"), "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["schema"].startswith("s2s.scan/")
    assert doc["ranking"] == "estimate" and "estimate" in doc["ranking_note"]
    for k in doc["kernels"]:
        assert {"name", "file", "line", "language", "params"} <= set(k)
    for s in doc["launches"]:
        assert {"kernel", "file", "line", "grid", "block"} <= set(s)


def test_macro_hidden_kernel_found_and_function_macro_reported(tmp_path: Path) -> None:
    (tmp_path / "k.cu").write_text(
        "#define KERNEL __global__ void\n"
        "#define DEFINE_SCALE(NAME) __global__ void NAME(float* x) { x[0] *= 2; }\n"
        "KERNEL hidden_kernel(float* x, int n) { if (threadIdx.x < n) x[threadIdx.x] = 0; }\n"
        "DEFINE_SCALE(scale2)\n"
    )
    index = scan_tree(tmp_path)
    hidden = [k for k in index.kernels if k.name == "hidden_kernel"]
    assert hidden and hidden[0].via_macro == "KERNEL"
    assert any("DEFINE_SCALE" in limit and "k.cu:2" in limit for limit in index.limits)


def test_kernel_macro_through_a_chain_of_macros(tmp_path: Path) -> None:
    """Library style: the kernel attribute macro is an alias of an alias, defined in another header."""
    (tmp_path / "visibility.h").write_text("#define LIB_KERNEL_ATTRIBUTES __global__ __attribute__((visibility(\"hidden\")))\n")
    (tmp_path / "macros.cuh").write_text('#include "visibility.h"\n#define MY_KERNEL_ATTRIBUTES LIB_KERNEL_ATTRIBUTES\n'
                                         "#define MY_NOT_A_KERNEL inline\n")
    (tmp_path / "scan_kernels.cuh").write_text(
        '#include "macros.cuh"\n'
        "template <typename T>\nMY_KERNEL_ATTRIBUTES void fill_kernel(T* x, T v, int n)\n"
        "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = v; }\n"
        "MY_NOT_A_KERNEL void host_helper(float* x) { x[0] = 0; }\n")
    index = scan_tree(tmp_path)
    assert [(k.name, k.via_macro) for k in index.kernels] == [("fill_kernel", "MY_KERNEL_ATTRIBUTES")]


def test_namespace_macros_are_read_as_blanks(tmp_path: Path) -> None:
    """Library style: namespaces opened and closed by macros (over continued lines, through an empty prefix macro
    that another configuration defines as a namespace), and the kernel macro after `__launch_bounds__`."""
    (tmp_path / "ns.h").write_text(
        "#ifdef LIB_WRAPPED\n#define LIB_PREFIX namespace LIB_WRAPPED {\n#define LIB_POSTFIX }\n#else\n"
        "#define LIB_PREFIX\n#define LIB_POSTFIX\n#endif\n"
        "#define LIB_BEGIN \\\n  LIB_PREFIX \\\n  namespace lib \\\n  {\n#define LIB_END } /* lib */ \\\n  LIB_POSTFIX\n"
        "#define LIB_KERNEL_ATTRIBUTES __global__\n")
    (tmp_path / "sweep.cuh").write_text(
        '#include "ns.h"\nLIB_BEGIN\ntemplate <int BLOCK, typename T>\n__launch_bounds__(BLOCK)\n'
        "  LIB_KERNEL_ATTRIBUTES void sweep_kernel(T* x, int n)\n"
        "{ int i = blockIdx.x * BLOCK + threadIdx.x; if (i < n) x[i] += T(1); }\nLIB_END\n")
    index = scan_tree(tmp_path)
    assert [(k.name, k.via_macro) for k in index.kernels] == [("sweep_kernel", "LIB_KERNEL_ATTRIBUTES")]
    assert not [p for p in index.problems if p.file == "sweep.cuh"]


def test_parse_errors_listed_with_location(tmp_path: Path) -> None:
    (tmp_path / "bad.cu").write_text("__global__ void ok(float* x) { x[0] = 1; }\n__global__ void broken(float* x { x[0] = ; }\n")
    index = scan_tree(tmp_path)
    assert any(p.file == "bad.cu" and p.line == 2 for p in index.problems)


def test_binary_files_reported_and_non_utf8_files_scanned(tmp_path: Path) -> None:
    (tmp_path / "blob.cu").write_bytes(b"\x00\x01\x02__global__")
    (tmp_path / "latin.cu").write_bytes(b"// caf\xe9\n__global__ void k(float* x) {}\n")
    (tmp_path / "good.cu").write_text("__global__ void g(float* x) { x[0] = 1; }\n")
    index = scan_tree(tmp_path)
    msgs = {p.file: p.message for p in index.problems}
    assert "binary" in msgs["blob.cu"]
    assert "latin.cu" not in msgs  # a Latin-1 comment is no reason to skip a file (s2s.base.encoding)
    assert [k.name for k in index.kernels] == ["g", "k"]


def test_bad_input_one_line_exit_2(tmp_path: Path) -> None:
    res = run_cli("scan", str(tmp_path / "nope"))
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "nope" in res.stderr
    res = run_cli("scan", str(tmp_path))  # empty tree
    assert res.returncode == 2 and "no C, C++, CUDA" in res.stderr and "Traceback" not in res.stderr


def test_launch_through_a_function_like_macro(tmp_path: Path) -> None:
    (tmp_path / "app.cu").write_text(
        "#define LAUNCH(kern, g, b, ...) do { kern<<<g, b>>>(__VA_ARGS__); } while (0)\n"
        "#define N 4096\n"
        "__global__ void scale(float* x, float s, int n) { int i = threadIdx.x; if (i < n) x[i] *= s; }\n"
        "int main() { float* d; cudaMalloc(&d, N * sizeof(float)); dim3 block(128); dim3 grid((N + 127) / 128);\n"
        "  for (int t = 0; t < 10; ++t) LAUNCH(scale, grid, block, d, 2.0f, N);\n  return 0; }\n")
    index = scan_tree(tmp_path)
    (site,) = index.launches
    assert site.kernel == "scale" and site.kind == "macro:LAUNCH" and site.in_loop
    assert (site.grid, site.block) == ("grid", "block") and site.args == ("d", "2.0f", "N")


def test_syntax_the_grammar_lacks_is_normalized_or_reported(tmp_path: Path) -> None:
    (tmp_path / "k.cu").write_text(
        "__global__ void __launch_bounds__(256, 2, 1) lb3(float* x) { x[threadIdx.x] = 1; }\n"
        "__global__ void __cluster_dims__(2, 1, 1) clustered(float* x) { x[0] = 2; }\n"
        "void host(float* d) { auto f = [] __device__ (float v) { return v * 2; }; lb3<<<1, 256>>>(d); }\n"
        "__global__ void broken(float* x) { x[0] = ; @@ }\n")
    index = scan_tree(tmp_path)
    names = {k.name for k in index.kernels}
    assert {"lb3", "clustered"} <= names
    assert next(k for k in index.kernels if k.name == "lb3").qualifiers[-1] == "__launch_bounds__(256, 2, 1)"
    assert any(p.line == 4 for p in index.problems)  # the broken one is reported with its line


def test_runtime_api_launches_hip_kernel_name_and_embedded_opencl(tmp_path: Path) -> None:
    (tmp_path / "a.cu").write_text(
        "#include <hip/hip_runtime.h>\n"
        "template <typename T> __global__ void axpy(T a, const T* x, T* y, int n) { int i = threadIdx.x; if (i < n) y[i] += a * x[i]; }\n"
        "__global__ void fill(float* y, int n) { int i = threadIdx.x; if (i < n) y[i] = 1; }\n"
        'static const char* cl_src = "__kernel void hidden_cl(__global float* x) { x[0] = 1; }";\n'
        "void run(float* x, float* y, int n) {\n"
        "  hipLaunchKernelGGL(HIP_KERNEL_NAME(axpy<float>), dim3(1), dim3(64), 0, 0, 2.0f, x, y, n);\n"
        "  void* args[] = {&y, &n};\n  cudaLaunchKernel((const void*)fill, dim3(4), dim3(64), args, 0, 0);\n}\n")
    index = scan_tree(tmp_path)
    by_kernel = {s.kernel: s for s in index.launches}
    assert by_kernel["axpy"].template_args == "float" and by_kernel["axpy"].args == ("2.0f", "x", "y", "n")
    assert by_kernel["fill"].kind == "cudaLaunchKernel" and by_kernel["fill"].grid == "dim3(4)"
    assert any("hidden_cl" in limit and "a.cu:4" in limit for limit in index.limits)


def test_profile_ranks_sample_kernels_by_gpu_time() -> None:
    fixture = Path(__file__).parent / "fixtures" / "profiles" / "heat3d_nsys.csv"
    res = run_cli("scan", str(SAMPLES / "heat3d_cuda"), "--profile", str(fixture), "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    order = [k["qualified"] for k in doc["kernels"]][:5]
    assert order == ["reduce_energy", "linalg::matmul_naive", "stencil7", "axpby_t", "linalg::matvec_rows"]
    assert doc["ranking"] == "profile:nsys" and "some_library_kernel(int)" in " ".join(doc["unmatched_profile_names"])
    axpby = next(k for k in doc["kernels"] if k["name"] == "axpby_t")
    assert axpby["calls"] == 10 and any(i.replace(" ", "") == "float,256" for i in axpby["instantiations"])


def test_overloads_in_one_file_are_told_apart_by_line(tmp_path: Path) -> None:
    from s2s.base.errors import UserError
    from s2s.scan.tree import find_kernel

    (tmp_path / "agents.cuh").write_text(
        "template <class A> __global__ void agent(A a) { a.run(); }\n"
        "template <class A, class B> __global__ void agent(A a, B b) { a.run(b); }\n")
    index = scan_tree(tmp_path)
    with pytest.raises(UserError) as err:
        find_kernel(index, "agents.cuh:agent")
    assert "FILE:NAME@LINE" in (err.value.hint or "") and "agents.cuh:agent@1" in (err.value.hint or "")
    assert find_kernel(index, "agents.cuh:agent@2").line == 2 and find_kernel(index, "agent@1").line == 1


def test_comments_in_a_launch_are_not_its_arguments(tmp_path: Path) -> None:
    """`0,  // start` inside a chevron launch's argument list: the comment was taken as an argument, so capture's
    instrumented call put it on one line with the rest (`..., 0, // start, n);`: the build failed with "expected a )")."""
    from s2s.capture.instrument import _edit_file, _Slot

    (tmp_path / "k.cu").write_text(
        "__global__ void k(float* x, int start, int n) { int i = threadIdx.x; if (i >= start && i < n) x[i] = 0; }\n"
        "void run(float* x, int n) {\n  k<<<1, /* threads */ 64>>>(\n      x,\n      0,  // start\n"
        "      n /* count */);\n}\n")
    (site,) = scan_tree(tmp_path).launches
    assert site.args == ("x", "0", "n") and site.block == "64"
    edited, failed = _edit_file((tmp_path / "k.cu").read_bytes(), "cuda", [(site, _Slot())], "cuda")
    assert not failed and "(size_t)(0), (cudaStream_t)(0), x, 0, n);" in edited.decode()
