"""The CUDA/HIP harness: builds with nvcc here (no GPU needed); the tests marked `gpu` run it and need
an NVIDIA GPU (`nvidia-smi`), and are skipped without one."""
from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import needs_nvcc
from mep_util import ParamSpec, StructSpec, SymbolSpec, add_variant, make_mep, manifest

from s2s.base.errors import UserError
from s2s.mep.evaluate import build, build_many, evaluate, run_built

gpu = pytest.mark.gpu
needs_gpu = pytest.mark.skipif(shutil.which("nvidia-smi") is None, reason="no NVIDIA GPU (nvidia-smi not found)")

# ---- a sample-like MEP: namespace, template, struct by value, AoS buffer, __constant__ symbol, macros ----
SAMPLE = r'''
#include <cuda_runtime.h>
#include <cstdio>
#include <math.h>
#ifndef NP
#define NP 1024
#endif
#define SQ(x) ((x) * (x))

struct Params {          /* passed by value */
    float dt;
    float drag;
    int steps;
    float w[3];
};

struct Particle {        /* array of structures */
    float x, y, z;
    float vx, vy, vz;
    float m;
    int id;
};

__constant__ float coeffs[7];

namespace physics {
__host__ __device__ inline float accel(const Particle& q, const Params p)
{
    return SQ(p.dt) * coeffs[0] - p.drag * q.vx / (1.0f + fabsf(q.m)) + p.w[1];
}

template <typename T, int BS>
__global__ void __launch_bounds__(BS) step(Particle* parts, int n, const T* u, T* out, Params p)
{
    int i = blockIdx.x * BS + threadIdx.x;
    if (i >= n) return;
    Particle q = parts[i];
    T a = accel(q, p) + u[i] * coeffs[1];
    q.vx += p.dt * a;
    q.x += p.dt * q.vx;
    q.id += p.steps;
    parts[i] = q;
    out[i] = a * 2 + (T)(NP % 7);
}
}  // namespace physics
'''

SAMPLE_STRUCTS = [
    StructSpec("Params", (("float", "dt", 1), ("float", "drag", 1), ("int", "steps", 1), ("float", "w", 3))),
    StructSpec("Particle", tuple(("float", f, 1) for f in ("x", "y", "z", "vx", "vy", "vz", "m")) + (("int", "id", 1),)),
]


def sample_manifest(**kw: object) -> object:
    n = 1000
    return manifest("physics::step", "cuda", "kernel.cu", [
        ParamSpec("parts", "Particle *", "inout", "Particle", count=n, low=-2.0, high=2.0),
        ParamSpec("n", "int", "scalar", "int", value=n),
        ParamSpec("u", "const float *", "in", "float", count=n),
        ParamSpec("out", "float *", "out", "float", count=n),
        ParamSpec("p", "Params", "scalar", "Params", value="random", fill="random-struct", low=0.1, high=1.0),
    ], (4, 1, 1), (256, 1, 1), template_args="float, 256", flags=["-DNP=2048"], macros=["NP", "SQ"],
        symbols=[SymbolSpec("coeffs", "float", 7)], structs=SAMPLE_STRUCTS, **kw)


# ---- a simple out-of-place kernel and broken variants of it ------------------------------------------
AXPY = r'''
#include <cuda_runtime.h>
namespace blas {
template <typename T>
__global__ void axpy(T a, const T* x, const T* y, T* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}
}
'''
BODY = "if (i < n) out[i] = a * x[i] + y[i];"
GRID_STRIDE = """for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += gridDim.x * blockDim.x) out[k] = fma(a, x[k], y[k]);"""
CACHE = """__device__ int s2s_have[1024];
__device__ float s2s_cache[1024];
""" + AXPY.replace(BODY, "if (i < n) { if (!s2s_have[i]) { s2s_cache[i] = a * x[i] + y[i]; s2s_have[i] = 1; } out[i] = s2s_cache[i]; }")

AXPY_VARIANTS: dict[str, str | tuple[str, dict]] = {
    "ok": AXPY.replace("a * x[i] + y[i]", "fmaf(a, x[i], y[i])"),
    "ok_launch": (AXPY.replace(BODY, GRID_STRIDE), {"grid": [2, 1, 1], "block": [128, 1, 1], "note": "grid-stride loop"}),
    "skip": AXPY.replace("i < n", "i < n - 1"),
    "writes_in": AXPY.replace(BODY, "if (i < n) { out[i] = a * x[i] + y[i]; ((T*)x)[i] = 0; }"),
    "oob": AXPY.replace("i < n", "i <= n"),
    "nan": AXPY.replace("a * x[i] + y[i]", "(i == 7 ? NAN : a * x[i] + y[i])"),
    "zero": AXPY.replace("a * x[i] + y[i]", "(T)0"),
    "cache": CACHE,
    "hang": AXPY.replace(BODY, "for (;;) { if (x[i % n] > 1e30f) break; }\n    " + BODY),
    "crash": AXPY.replace(BODY, "if (i == 3) *(volatile int*)nullptr = 1;\n    " + BODY),
    "comperr": AXPY.replace("a * x[i]", "a * * x[i]"),
}
EXPECTED = {
    "ok": "ok", "ok_launch": "ok", "skip": "wrong-output", "writes_in": "wrong-output", "oob": "wrong-output",
    "nan": "wrong-output", "zero": "wrong-output", "cache": "wrong-output", "hang": "timed-out",
    "crash": "runtime-failed", "comperr": "compile-failed",
}


def axpy_manifest(**kw: object) -> object:
    n = 1000
    m = manifest("blas::axpy", "cuda", "kernel.cu", [
        ParamSpec("a", "float", "scalar", "float", value=2.5),
        ParamSpec("x", "const float *", "in", "float", count=n),
        ParamSpec("y", "const float *", "in", "float", count=n),
        ParamSpec("out", "float *", "out", "float", count=n),
        ParamSpec("n", "int", "scalar", "int", value=n),
    ], (4, 1, 1), (256, 1, 1), template_args="float", repetitions=20, timeout_s=60.0)
    return replace(m, **kw)


# ---- builds (no GPU needed) --------------------------------------------------------------------------
@pytest.mark.slow
@needs_nvcc
def test_sample_like_harness_builds(tmp_path: Path) -> None:
    mep = make_mep(tmp_path / "mep", SAMPLE, sample_manifest())  # type: ignore[arg-type]
    b = build(mep, None)
    assert b.ok, b.messages
    assert (mep / "harness.cu").is_file() and (mep / "build" / "ref" / "harness").is_file()
    text = (mep / "harness.cu").read_text()
    assert "namespace s2s_ref {" in text and "namespace s2s_var {" in text
    assert '#pragma push_macro("NP")' in text and "cudaMemcpyToSymbol(coeffs" in text
    assert (mep / "Makefile").is_file() and "make run" in (mep / "README.md").read_text()
    assert b.seconds > 0
    again = build(mep, None)  # unchanged: the binary is reused
    assert again.ok and again.cached
    # the binary's options are documented
    import subprocess

    usage = subprocess.run([str(mep / "build" / "ref" / "harness"), "--help"], capture_output=True, text=True)
    assert "--var-grid" in usage.stderr and "S2S_RESULT" in usage.stderr


@pytest.mark.slow
@needs_nvcc
def test_compile_errors_name_the_entry_or_blame_the_variant(tmp_path: Path) -> None:
    mep = make_mep(tmp_path / "mep", AXPY, axpy_manifest(), {"comperr": AXPY_VARIANTS["comperr"]})  # type: ignore[arg-type]
    b = build(mep, "comperr")
    assert not b.ok and b.verdict == "compile-failed" and b.input_error is None
    assert any("variants/comperr/kernel.cu" in m for m in b.messages)
    m = run_built(b)
    assert m.verdict == "compile-failed" and m.messages

    # a type that does not exist: the message names the entry
    text = (mep / "mep.toml").read_text().replace('elem = "float"\ncount = 1000', 'elem = "flaot"\ncount = 1000', 1)
    (mep / "mep.toml").write_text(text)
    with pytest.raises(UserError) as err:
        evaluate(mep, None)
    assert err.value.message.startswith("params.x.elem = 'flaot'") and "mep.toml" in (err.value.file or "")
    assert err.value.line is not None


@pytest.mark.slow
@needs_nvcc
def test_an_error_of_the_kernel_file_itself_is_named_before_what_follows_from_it(tmp_path: Path) -> None:
    """A kernel whose declaration does not compile (`scale_t` is nowhere) makes the harness's `fn_traits<...>` of it
    incomplete too; the message names the kernel file's own first error, not `params: incomplete type ...`."""
    broken = AXPY.replace("void axpy(T a, const T* x", "void axpy(T a, const scale_t* x")
    mep = make_mep(tmp_path / "mep", broken, axpy_manifest())
    with pytest.raises(UserError) as err:
        evaluate(mep, None)
    assert err.value.message.startswith("kernel.cu:5: the reference kernel file does not compile: "), err.value.message
    assert "scale_t" in err.value.message and "fn_traits" not in err.value.message


@needs_nvcc
def test_unknown_kernel_and_bad_counts_are_input_errors(tmp_path: Path) -> None:
    mep = make_mep(tmp_path / "mep", AXPY, axpy_manifest(kernel="blas::axpyy"))  # type: ignore[arg-type]
    with pytest.raises(UserError, match=r"^kernel = 'blas::axpyy'"):
        build_and_raise(mep)
    # an unevaluated size expression is named before any compiler runs
    (mep / "mep.toml").write_text((mep / "mep.toml").read_text().replace("count = 1000", 'count = "N*N"', 1))
    with pytest.raises(UserError, match=r"params\.x\.count"):
        build(mep, None)


def build_and_raise(mep: Path) -> None:
    b = build(mep, None)
    run_built(b)


HIP_AXPY = AXPY.replace("#include <cuda_runtime.h>", "#include <hip/hip_runtime.h>").replace(
    "blockIdx.x * blockDim.x + threadIdx.x", "hipBlockIdx_x * hipBlockDim_x + hipThreadIdx_x")


@pytest.mark.slow
@needs_nvcc
def test_hip_kernel_builds_through_the_shim(tmp_path: Path) -> None:
    m = axpy_manifest(backend="hip", kernel_file="kernel.hip.cpp")  # type: ignore[arg-type]
    mep = make_mep(tmp_path / "mep", HIP_AXPY, m)  # type: ignore[arg-type]
    b = build(mep, None)
    assert b.ok, b.messages
    assert (mep / "hip_shim" / "hip" / "hip_runtime.h").is_file()
    assert "-x" in b.command and "cu" in b.command


@pytest.mark.slow
@needs_nvcc
def test_per_output_tolerances_reach_the_harness_and_it_builds(tmp_path: Path) -> None:
    m = axpy_manifest()
    m.params[3] = replace(m.params[3], rtol=0.02, atol=1e-6)  # type: ignore[attr-defined]
    mep = make_mep(tmp_path / "mep", AXPY, m)  # type: ignore[arg-type]
    b = build(mep, None)
    assert b.ok, b.messages
    blocks = (mep / "harness.cu").read_text().split("spec.bufs.push_back(")[1:]
    tols = {blk.split('"')[1]: [t.strip() for t in blk.split("});")[0].split(",")[-2:]] for blk in blocks}
    assert tols == {"x": ["0.001", "0.0001"], "y": ["0.001", "0.0001"], "out": ["0.02", "1e-06"]}


# The comparison of the generic harness part on the host (no GPU): each buffer against its own tolerance,
# --rtol on the command line against that one, and the tolerance reported with each check.
HOST_CHECK = r'''
#include "s2s_harness_common.cuh"
int main(int argc, char** argv) {
    using namespace s2s;
    Spec spec{};
    spec.bufs.push_back({"a", "out", 4, sizeof(float), 0, -1.0, 1.0, &fill_bytes<float, VisitPrim>,
                         &compare_buffer<float, VisitPrim>, 1e-3, 1e-4});
    spec.bufs.push_back({"b", "out", 4, sizeof(float), 0, -1.0, 1.0, &fill_bytes<float, VisitPrim>,
                         &compare_buffer<float, VisitPrim>, 0.02, 1e-4});
    Run run(spec);
    std::string err;
    if (!parse_args(argc, argv, run.o, err)) return 2;
    const float ref[4] = {1.f, 2.f, 3.f, 4.f}, var[4] = {1.01f, 2.02f, 3.03f, 4.04f};  // 1% off
    for (const BufSpec& bs : spec.bufs) {
        Buffer b;
        b.spec = &bs;
        Check c{bs.name, bs.role};
        c.rtol = run.rtol_of(b);
        c.atol = run.atol_of(b);
        bs.cmp(c, "", (const unsigned char*)ref, (const unsigned char*)var, 4, nullptr, nullptr, run.rtol_of(b), run.atol_of(b));
        printf("%s\n", c.json().c_str());
    }
}
'''


@pytest.mark.slow
@needs_nvcc
def test_harness_compares_each_buffer_with_its_own_tolerance(tmp_path: Path) -> None:
    import subprocess

    from s2s.base.resources import templates_dir
    from s2s.mep.backends.cuda import CudaBackend

    (tmp_path / "t.cu").write_text(HOST_CHECK)
    cc = subprocess.run([*CudaBackend().compiler(), f"-I{templates_dir()}", "t.cu", "-o", "t"], cwd=tmp_path,
                        capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr

    def checks(*args: str) -> dict[str, dict]:
        out = subprocess.run([str(tmp_path / "t"), *args], capture_output=True, text=True, check=True).stdout
        return {c["name"]: c for c in map(json.loads, out.splitlines())}

    own = checks()
    assert not own["a"]["ok"] and "differ beyond tolerance" in own["a"]["message"] and own["a"]["rtol"] == 1e-3
    assert own["b"]["ok"] and own["b"]["rtol"] == 0.02 and own["b"]["atol"] == 1e-4
    forced = checks("--rtol", "0.05")
    assert forced["a"]["ok"] and forced["b"]["ok"] and forced["a"]["rtol"] == forced["b"]["rtol"] == 0.05


@gpu
@needs_gpu
@needs_nvcc
def test_hip_runs_through_the_shim(tmp_path: Path) -> None:
    m = axpy_manifest(backend="hip", kernel_file="kernel.hip.cpp")  # type: ignore[arg-type]
    mep = make_mep(tmp_path / "mep", HIP_AXPY, m, {"zero": HIP_AXPY.replace("a * x[i] + y[i]", "0.0f")})  # type: ignore[arg-type]
    ok = evaluate(mep, None)
    assert ok.verdict == "ok" and ok.backend == "hip" and ok.speedup, ok.messages
    assert evaluate(mep, "zero", time=False).verdict == "wrong-output"


# ---- on a GPU ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def axpy_builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str | None, object]:
    root = tmp_path_factory.mktemp("axpy")
    mep = make_mep(root / "mep", AXPY, axpy_manifest(timeout_s=15.0), AXPY_VARIANTS)  # type: ignore[arg-type]
    ids: list[str | None] = [None, *AXPY_VARIANTS]
    return dict(zip(ids, build_many(mep, ids)))


@gpu
@needs_gpu
@needs_nvcc
@pytest.mark.parametrize("variant", [None, *EXPECTED])
def test_cuda_variant_verdicts(axpy_builds: dict, variant: str | None) -> None:
    m = run_built(axpy_builds[variant])
    expected = "ok" if variant is None else EXPECTED[variant]
    assert m.verdict == expected, (m.verdict, m.messages, m.outputs)
    if expected == "ok":
        assert m.ref and m.var and m.speedup and m.device
        assert m.ref.median_us > 0 and m.ref.samples == 20
        if variant is None:
            assert 0.5 < m.speedup < 2.0
    out = {o.name: o for o in m.outputs}
    if variant == "skip":
        assert out["out"].unwritten == 1 and out["out"].first_bad == 999
    if variant == "writes_in":
        assert not out["x"].ok and "modified this input" in out["x"].message
    if variant == "oob":
        assert "past the end" in out["out"].message
    if variant == "nan":
        assert "NaN" in out["out"].message and out["out"].first_bad == 7
    if variant == "zero":
        assert "all zero" in out["out"].message
    if variant == "cache":
        assert "input set 2" in out["out"].message
    if variant == "hang":
        assert "killed after" in m.messages[0]
    if variant == "crash":
        assert any("variant kernel failed" in x for x in m.messages)


@gpu
@needs_gpu
@needs_nvcc
def test_cuda_sample_like_runs_and_cli(tmp_path: Path) -> None:
    from conftest import run_cli

    mep = make_mep(tmp_path / "mep", SAMPLE, sample_manifest())  # type: ignore[arg-type]
    add_variant(mep, sample_manifest(), "same", SAMPLE.replace("a * 2", "2 * a"))  # type: ignore[arg-type]
    m = evaluate(mep, None)
    assert m.verdict == "ok", (m.messages, m.outputs)
    assert {o.name for o in m.outputs} == {"parts", "u", "out"}
    r = run_cli("run", str(mep), "--variant", "same", "--json")
    assert r.returncode == 0, r.stderr
    obj = json.loads(r.stdout)
    assert obj["verdict"] == "ok" and obj["reference"]["median_us"] > 0 and obj["variant"]["median_us"] > 0
    assert obj["speedup"] > 0 and obj["device"]
    assert {o["name"] for o in obj["outputs"]} == {"parts", "u", "out"}
    # by hand: the generated Makefile builds and runs the same harness
    import subprocess

    for args in (["make", "-s", "run", "ARGS=--no-time"], ["make", "-s", "run", "VARIANT=same", "ARGS=--reps 5"]):
        r2 = subprocess.run(args, cwd=mep, capture_output=True, text=True, timeout=300)
        line = next(ln for ln in r2.stdout.splitlines() if ln.startswith("S2S_RESULT "))
        assert json.loads(line[len("S2S_RESULT "):])["verdict"] == "ok", (args, line)


@gpu
@needs_gpu
@needs_nvcc
def test_cuda_sanitize(axpy_builds: dict) -> None:
    if shutil.which("compute-sanitizer") is None:
        pytest.skip("compute-sanitizer not installed")
    m = run_built(axpy_builds["ok"], time=False, sanitize=True)
    assert m.verdict == "ok" and any("compute-sanitizer memcheck: no errors" in x for x in m.messages), m.messages
    bad = run_built(axpy_builds["crash"], time=False, sanitize=True)
    assert bad.verdict == "runtime-failed"


@gpu
@needs_gpu
@needs_nvcc
def test_cuda_launch_too_large_names_the_entry(tmp_path: Path) -> None:
    from conftest import run_cli

    mep = make_mep(tmp_path / "mep", AXPY, axpy_manifest())  # type: ignore[arg-type]
    text = (mep / "mep.toml").read_text().replace("grid = [4, 1, 1]", "grid = [4, 100000, 1]")
    (mep / "mep.toml").write_text(text)
    r = run_cli("run", str(mep))
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "launch.grid" in r.stderr and len(r.stderr.strip().splitlines()) == 1


FILL_CHECK = r'''
#include "s2s_harness_common.cuh"
struct P3 { float x; int n; double w[2]; };
struct VisitP3 { template <class S, class F> void operator()(S& v, F& f) const { s2s::visit_prim(v.x, f); s2s::visit_prim(v.n, f);
                                                                              s2s::visit_prim(v.w, f); } };
// the parallel fill against one sequential stream, element by element (bit for bit)
template <class T, class V> int same(size_t n, int mode) {
    std::vector<unsigned char> got(n * sizeof(T)), want(n * sizeof(T));
    s2s::fill_bytes<T, V>(got.data(), n, 42, 3, mode, -2.0, 5.0);
    s2s::Rng rng(42, 3);
    s2s::Filler f{&rng, -2.0, 5.0, mode};
    for (size_t i = 0; i < n; ++i) { T e{}; V{}(e, f); memcpy(want.data() + i * sizeof(T), (const void*)&e, sizeof(T)); }
    return got == want ? 0 : 1;
}
int main() {
    const size_t n = (size_t(3) << 20) + 12345;  // several chunks, and a last one of another length
    int bad = same<float, s2s::VisitPrim>(n, s2s::FILL_UNIFORM) + same<int, s2s::VisitPrim>(n, s2s::FILL_INDEX)
            + same<float4, s2s::VisitPrim>(n, s2s::FILL_UNIFORM) + same<P3, VisitP3>(n / 4, s2s::FILL_UNIFORM)
            + same<double, s2s::VisitPrim>(1000, s2s::FILL_UNIFORM);
    printf("%s %u\n", bad ? "DIFFERENT" : "SAME", std::thread::hardware_concurrency());
    return bad;
}
'''


@pytest.mark.slow
@needs_nvcc
def test_parallel_fill_gives_the_sequential_streams_values(tmp_path: Path) -> None:
    """Input sets are filled on every host core; each element must get exactly the value the single stream gives it, so
    that a seed names the same inputs whatever the machine (and results recorded before stay comparable)."""
    import subprocess

    from s2s.base.resources import templates_dir
    from s2s.mep.backends.cuda import CudaBackend

    (tmp_path / "f.cu").write_text(FILL_CHECK)
    cc = subprocess.run([*CudaBackend().compiler(), f"-I{templates_dir()}", "f.cu", "-o", "f"], cwd=tmp_path,
                        capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr
    out = subprocess.run([str(tmp_path / "f")], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.startswith("SAME"), out.stdout + out.stderr


TABLE = r'''
__constant__ float4 table[4000];  // 64000 bytes: one copy fits the 64 KiB of constant memory a module may hold, two do not

__global__ void energy(int n, float* out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float e = 0.0f;
    for (int a = 0; a < n; ++a) e += table[a].w * rsqrtf(table[a].x * table[a].x + (float)i + 1.0f);
    out[i] = e;
}
'''


@pytest.mark.slow
@needs_nvcc
def test_a_large_constant_table_is_shared_by_the_reference_and_the_variant(tmp_path: Path) -> None:
    """Parboil's cp: the reference and the variant in one translation unit each declared the 64000-byte table, and ptxas
    refused the MEP ("too much global constant data"). The variant's identical declaration is now the reference's."""
    from mep_util import ParamSpec, SymbolSpec, make_mep, manifest

    from s2s.mep.evaluate import build

    m = manifest("energy", "cuda", "kernel.cu", [ParamSpec("n", "int", "scalar", "int", value=4000),
                                                 ParamSpec("out", "float*", "out", "float", count=1024)],
                 (8, 1, 1), (128, 1, 1))
    m.symbols = [SymbolSpec(name="table", elem="float4", count=4000)]
    changed = TABLE.replace("float e = 0.0f;", "float e = 0.0f;  // a variant")
    mep = make_mep(tmp_path / "mep", TABLE, m, {"same": changed})
    for variant in (None, "same"):
        b = build(mep, variant)
        assert b.ok, b.log[-2000:]
    copy = (mep / "build" / "same" / "variant_copy" / "kernel.cu").read_text()
    assert "using ::s2s_ref::table;" in copy and "__constant__" not in copy
    assert copy.count("\n") == changed.count("\n") + 1  # the #line directive; every other line where it was
