from __future__ import annotations

from pathlib import Path

import pytest
from conftest import SAMPLES, needs_nvcc, run_cli

from s2s.extract.mep_writer import make_mep
from s2s.lang.cexpr import evaluate
from s2s.mep.manifest import FILL_IN, load


def test_c_expression_semantics() -> None:
    env = {"N": "500", "block.x": 16}
    assert evaluate("(int)ceil((float)N/block.x)", env.get) == 32
    assert evaluate("(N + 15) / 16", env.get) == 32  # integer division truncates: 515 / 16
    assert evaluate("N / 16", env.get) == 31
    assert evaluate("(size_t)N*N*sizeof(float)", env.get) == 1_000_000
    assert evaluate("-7 / 2", env.get) == -3


def test_cuda_matmul_sizes_roles_launch(tmp_path: Path) -> None:
    out, m, _ = make_mep(str(SAMPLES / "heat3d_cuda"), "matmul_naive", str(tmp_path / "mm"))
    p = {x.name: x for x in m.params}
    assert p["A"].role == "in" and p["C"].role == "inout" and p["n"].role == "scalar"
    assert p["A"].count == 512 * 512 and "cudaMalloc" not in p["A"].source or "allocated at src/main.cu" in p["A"].source
    assert p["n"].value == 512 and "-DMAT_N=512" in p["n"].source
    assert m.launch.block == (16, 16, 1) and m.launch.grid == (32, 32, 1)
    assert load(out).kernel == "linalg::matmul_naive"


def test_define_override_changes_sizes_and_grid(tmp_path: Path) -> None:
    _, m, _ = make_mep(str(SAMPLES / "heat3d_cuda"), "matvec_rows", str(tmp_path / "mv"), overrides={"MAT_N": "4096"})
    p = {x.name: x for x in m.params}
    assert p["A"].count == 4096 * 4096 and p["y"].role == "out"
    assert m.launch.grid == (16, 1, 1) and m.launch.block == (256, 1, 1)  # dim3 block1d(BLOCK_1D); ceil((float)N/block1d.x)
    assert "-DMAT_N=4096" in m.flags


def test_struct_by_value_constant_symbol_and_template(tmp_path: Path) -> None:
    _, m, _ = make_mep(str(SAMPLES / "heat3d_cuda"), "stencil7", str(tmp_path / "st"))
    prm = next(x for x in m.params if x.name == "p")
    assert isinstance(prm.value, dict) and prm.value["dt"] == 0.1
    assert [s.name for s in m.symbols] == ["coeffs"] and m.symbols[0].count == 7
    assert any(s.name == "Params" for s in m.structs)
    _, m, _ = make_mep(str(SAMPLES / "heat3d_cuda"), "axpby_t", str(tmp_path / "ax"))
    assert m.template_args.replace(" ", "") == "float,256"
    assert {x.name: x.elem for x in m.params}["x"] == "float"


def test_opencl_args_traced_through_clSetKernelArg(tmp_path: Path) -> None:
    _, m, _ = make_mep(str(SAMPLES / "ocl_solver"), "residual_norm", str(tmp_path / "rn"))
    p = {x.name: x for x in m.params}
    assert p["u"].count == 256 * 256 and p["partial"].role == "out"
    assert m.launch.block == (64, 1, 1) and m.launch.grid == (65536, 1, 1)  # round_up() evaluated
    assert "-DWG_SIZE=64" in m.flags and p["u"].elem == "float"  # REAL resolved through -DREAL=float
    assert not m.unfilled()


def test_unknown_values_marked_fill_in(tmp_path: Path) -> None:
    tree = tmp_path / "app"
    tree.mkdir()
    (tree / "k.cu").write_text(
        "__global__ void scale(float* x, float s, int n) { int i = threadIdx.x; if (i < n) x[i] *= s; }\n"
        "void run(float* d, float s, int n, int threads) { scale<<<(n + threads - 1) / threads, threads>>>(d, s, n); }\n"
    )
    _, m, _ = make_mep(str(tree), "scale", str(tmp_path / "m"))
    assert {x.name: x.count for x in m.params}["x"] == FILL_IN
    assert any("params.x.count" in e for e in m.unfilled())
    res = run_cli("extract", str(tree), "--kernel", "scale", "-o", str(tmp_path / "m2"))
    assert res.returncode == 0 and "FILL-IN" in res.stdout


def test_removed_cuda_apis_are_modernized_in_the_mep(tmp_path: Path) -> None:
    tree = tmp_path / "old"
    tree.mkdir()
    (tree / "red.cu").write_text(
        "#define N (1 << 20)\n"
        "__global__ void warp_sum(const float* in, float* out, int n) {\n"
        "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    float v = i < n ? in[i] : 0.0f;\n"
        "    for (int off = 16; off > 0; off >>= 1) v += __shfl_down(v, off);\n"
        "    if ((threadIdx.x & 31) == 0) atomicAdd(out, v);\n}\n"
        "int main() { float *a, *b; cudaMalloc(&a, N * sizeof(float)); cudaMalloc(&b, sizeof(float));\n"
        "  warp_sum<<<N / 256, 256>>>(a, b, N); cudaThreadSynchronize(); return 0; }\n")
    out, m, _ = make_mep(str(tree), "warp_sum", str(tmp_path / "m"))
    text = (out / "kernel.cu").read_text()
    assert "__shfl_down_sync(0xffffffffu, v, off)" in text
    assert any("__shfl_down" in n for n in m.notes)
    p = {x.name: x for x in m.params}
    assert p["out"].rtol is not None and p["out"].rtol > 1e-3  # float sum by atomics from a million threads
    assert p["in"].rtol is None and m.rtol == 1e-3


@needs_nvcc
def test_a_shuffle_overload_the_code_defines_itself_is_left_as_written(tmp_path: Path) -> None:
    """`float2 __shfl_down(float2 v, int d)` is the application's own overload (its calls resolve to it): neither its
    definition nor its calls become `__shfl_down_sync(0xffffffffu, ...)`; a macro named like an intrinsic neither."""
    tree = tmp_path / "own"
    tree.mkdir()
    (tree / "pair.cu").write_text(
        "#define __ballot(p) __ballot_sync(0xffffffffu, p)\n"
        "__device__ __forceinline__\n"
        "float2 __shfl_down(const float2 v, const unsigned d, const int width = 32) {\n"
        "    float2 r;\n"
        "    r.x = __shfl_down_sync(0xffffffffu, v.x, d, width);\n"
        "    r.y = __shfl_down_sync(0xffffffffu, v.y, d, width);\n"
        "    return r;\n}\n"
        "__global__ void pair_sum(const float2* in, float2* out, unsigned* votes) {\n"
        "    float2 v = in[threadIdx.x];\n"
        "    for (int off = 16; off > 0; off >>= 1) { float2 o = __shfl_down(v, off); v.x += o.x; v.y += o.y; }\n"
        "    unsigned b = __ballot(v.x > 0.0f);\n"
        "    if (threadIdx.x == 0) { out[0] = v; votes[0] = b; }\n}\n"
        "int main() { float2 *a, *b; unsigned* c; cudaMalloc(&a, 32 * sizeof(float2)); cudaMalloc(&b, sizeof(float2));\n"
        "  cudaMalloc(&c, sizeof(unsigned)); pair_sum<<<1, 32>>>(a, b, c); cudaDeviceSynchronize(); return 0; }\n")
    out, m, _ = make_mep(str(tree), "pair_sum", str(tmp_path / "m"))
    text = (out / "kernel.cu").read_text()
    assert "float2 __shfl_down(const float2 v" in text and "__shfl_down(v, off)" in text
    assert "#define __ballot(p) __ballot_sync(0xffffffffu, p)" in text and "__ballot(v.x > 0.0f)" in text
    assert not any("without a mask" in n for n in m.notes)
    import subprocess
    p = subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-c", str(out / "kernel.cu"), "-o", str(tmp_path / "k.o")],
                       capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stderr[-2000:]


def test_every_declarator_of_a_constant_list_is_a_symbol(tmp_path: Path) -> None:
    """`__constant__ double dt, omega;` declares two symbols: the capture records both (the MEP of a kernel reading
    `omega` replayed it as zero when only `dt` was listed); `ce[3][5]` holds 15 elements, not 3."""
    tree = tmp_path / "consts"
    tree.mkdir()
    (tree / "relax.cu").write_text(
        "namespace coeffs {\n__constant__ double dt, omega;\n__constant__ double ce[3][5];\n"
        "__constant__ double tz1, tz2,\n    tz3; // three\n}\n"
        "__global__ void relax(double* v, int n) {\n    using namespace coeffs;\n"
        "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    if (i < n) v[i] = v[i] - omega * dt * (tz1 + tz2 + tz3) * ce[2][4];\n}\n"
        "int main() { double* v; cudaMalloc(&v, 256 * sizeof(double)); relax<<<1, 256>>>(v, 256); return 0; }\n")
    _out, m, _ = make_mep(str(tree), "relax", str(tmp_path / "m"))
    got = {s.name: (s.elem, s.count) for s in m.symbols}
    assert got == {"coeffs::dt": ("double", 1), "coeffs::omega": ("double", 1), "coeffs::ce": ("double", 15),
                   "coeffs::tz1": ("double", 1), "coeffs::tz2": ("double", 1), "coeffs::tz3": ("double", 1)}, got


def test_float_sum_by_atomics_widens_only_that_outputs_rtol(tmp_path: Path) -> None:
    """reduce_energy: atomicAdd(energy, ...) from NX*NY*NZ threads; energy gets the wide rtol, nothing else does."""
    out, m, _ = make_mep(str(SAMPLES / "heat3d_cuda"), "reduce_energy", str(tmp_path / "re"),
                         overrides={"NX": "256", "NY": "256", "NZ": "256"})
    p = {x.name: x for x in m.params}
    assert p["energy"].rtol == 0.05 and "16777216 threads" in p["energy"].tol_from
    assert p["u"].rtol is None and p["energy"].atol is None and m.rtol == 1e-3
    widened = [n for n in m.notes if "widened" in n]
    assert len(widened) == 1 and widened[0].startswith("params.energy.rtol widened to 0.05: energy is a float sum")
    back = load(out)
    assert back.tolerance(back.params[1]) == (0.05, 1e-4) and back.tolerance(back.params[0]) == (1e-3, 1e-4)
    _, small, _ = make_mep(str(SAMPLES / "heat3d_cuda"), "reduce_energy", str(tmp_path / "small"))  # 64^3 threads
    assert all(x.rtol is None for x in small.params) and not any("widened" in n for n in small.notes)


REALISH = Path(__file__).parent / "fixtures" / "realish"


def test_template_launch_in_host_template_and_argc_default(tmp_path: Path) -> None:
    """smooth<T> launched inside template run_smooth<T>, called as run_smooth<real_t>; sizes from `argc > 1 ? ... : 1024`,
    a struct by value whose fields are set in main and passed through a parameter; flags only in the Makefile."""
    out, m, ex = make_mep(str(REALISH), "smooth", str(tmp_path / "s"))
    assert m.template_args == "real_t" and ex.instantiations == ["real_t"]
    p = {x.name: x for x in m.params}
    assert p["in"].count == 1024 * 768 and p["out"].role == "out"
    assert p["m"].value == {"nx": 1024, "ny": 768, "dx": 0.01}
    assert m.launch.grid == (64, 48, 1) and m.launch.block == (16, 16, 1)
    assert not m.unfilled()


def test_index_array_bounded_by_the_buffer_it_indexes(tmp_path: Path) -> None:
    _, m, _ = make_mep(str(REALISH), "gather", str(tmp_path / "g"))
    p = {x.name: x for x in m.params}
    assert p["idx"].fill == "index" and p["idx"].high == p["src"].count == 1024 * 768
    assert p["n"].value == 1024 and m.launch.grid == (4, 1, 1)


@pytest.mark.slow
@needs_nvcc
def test_realish_harnesses_build(tmp_path: Path) -> None:
    import subprocess

    for k in ("smooth", "gather"):
        out, _m, _ = make_mep(str(REALISH), k, str(tmp_path / k))
        res = subprocess.run(["nvcc", "-c", "-arch=sm_90", "-std=c++17", "harness.cu", "-o", "h.o"], cwd=out,
                             capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr[-2000:]
