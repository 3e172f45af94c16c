"""A kernel template launched with an extended `__device__` lambda (`for_all(n, [=] __device__ (int i) {...})`, the
style of many C++ CUDA codes): the instance that ran is `apply_each<__nv_dl_wrapper_t<__nv_dl_tag<..., &Field<double>::
axpy, 1u>, double*, double, double*>>`, a type no MEP can name ("identifier __nv_dl_wrapper_t is undefined" when its
harness was built: a held-out result line). The capture now makes the lambda the MEP's functor: its captures as members
in nvcc's order, its body as operator(); the captured bytes of the argument replay into it. No GPU: a dump as the
runtime writes it (tests/fixtures/lambda_axpy, ours; the GPU test captures it for real)."""
from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest
from conftest import ROOT, needs_gpu, needs_nvcc, run_cli

from s2s.capture.collect import collect
from s2s.capture.lambdas import functor_for
from s2s.extract.mep_writer import make_mep
from s2s.mep.manifest import load, save

APP = ROOT / "tests" / "fixtures" / "lambda_axpy"
AXPY = ("_Z10apply_eachI17__nv_dl_wrapper_tI11__nv_dl_tagIM5FieldIdEFvdEXadL_ZNS3_4axpyEdEELj1EEJPddS7_EEEviT_")
WRAPPER = ("__nv_dl_wrapper_t<__nv_dl_tag<void (Field<double>::*)(double), &Field<double>::axpy, 1u>, "
           "double*, double, double*>")
N = 4096


def test_functor_members_follow_the_captures_first_use() -> None:
    f = functor_for(WRAPPER, {"app.cu": (APP / "app.cu").read_text()})
    assert not isinstance(f, str), f
    assert f.name == "s2s_lambda_axpy_1" and f.where == "app.cu:12"
    assert "double* y;\n  double alpha;\n  double* x;" in f.code  # y, alpha, x: the order the body first uses them
    assert "__device__ auto operator()(int i) const" in f.code and "y[i] = alpha * x[i] + y[i];" in f.code
    scale = WRAPPER.replace("axpy", "scale").replace("double*, double, double*", "double*, double")
    g = functor_for(scale, {"app.cu": (APP / "app.cu").read_text()})
    assert not isinstance(g, str) and "double* x;\n  double s;" in g.code
    wrong = functor_for(WRAPPER.replace(", double*>", ">"), {"app.cu": (APP / "app.cu").read_text()})
    assert isinstance(wrong, str) and "captures 2 values, s2s reads 3" in wrong  # never a functor of another layout
    by_ref = functor_for(WRAPPER, {"app.cu": (APP / "app.cu").read_text().replace("[=] __device__ (int i) { y", "[&] __device__ (int i) { y")})
    assert isinstance(by_ref, str) and "by reference" in by_ref


def _dump(dump: Path) -> None:
    d = dump / "launch1"
    d.mkdir(parents=True)
    (dump / "summary.txt").write_text("kernel apply_each\nlaunches 6\n")
    y, x = 0x7F0000000000, 0x7F0000100000
    lam = struct.pack("<QdQ", y, 0.5, x)  # y, alpha, x
    for off, vals in ((0, [1.0] * N), (16, [float(i) for i in range(N)])):
        data = struct.pack(f"<{N}d", *vals)
        (d / f"arg1.f{off}.before.bin").write_bytes(data)
        after = struct.pack(f"<{N}d", *[0.5 * i + 1.0 for i in range(N)]) if off == 0 else data
        (d / f"arg1.f{off}.after.bin").write_bytes(after)
    (d / "record.txt").write_text(
        f"launch 1\nsite app.cu:7\nkernel apply_each\nnargs 2\ngrid {N // 128} 1 1\nblock 128 1 1\nshared_mem 0\n"
        f"stream 0\nfunction {AXPY}\narg 0 value 4 {struct.pack('<i', N).hex()}\narg 1 value 24 {lam.hex()}\n"
        f"sptr 1 0 {8 * N} 0 {y} device\nsptr 1 16 {8 * N} 0 {x} device\ndone\n")


@pytest.mark.slow
@needs_nvcc
def test_captured_lambda_instance_is_the_meps_functor_and_builds(tmp_path: Path) -> None:
    from s2s.mep.backends import write_mep_files
    from s2s.mep.evaluate import build

    app = tmp_path / "app"
    shutil.copytree(APP, app)
    mep, m, _ex = make_mep(str(app), "apply_each", str(tmp_path / "mep"))
    assert m.template_args == "FILL-IN"  # no launch names the lambda's type
    _dump(tmp_path / "dump")
    got = collect(tmp_path / "dump", mep, m, want="--launch 1", run_cmd="./app", build_cmd="make")
    assert got.manifest.template_args == "s2s_lambda_axpy_1", got.notes
    save(got.manifest, mep)
    m2 = load(mep)
    assert m2.params[1].elem == "s2s_lambda_axpy_1"
    assert m2.params[1].value == {"alpha": 0.5}  # its pointers are rebuilt from the captured allocations
    (sa,) = m2.capture["struct_args"]
    assert {q["field"]: q["role"] for q in sa["pointers"]} == {"y": "inout", "x": "in"}
    assert "struct s2s_lambda_axpy_1" in (mep / m2.kernel_file).read_text()
    write_mep_files(mep, m2)
    b = build(mep, None)
    assert b.ok, b.log[-3000:]


@pytest.mark.gpu
@needs_gpu
@needs_nvcc
def test_lambda_app_captured_and_replayed_on_the_gpu(tmp_path: Path) -> None:
    app = tmp_path / "app"
    shutil.copytree(APP, app)
    out = tmp_path / "mep"
    proc = run_cli("capture", str(app), "--kernel", "apply_each", "--build-cmd", "make", "--run-cmd", "./app",
                   "--launch", "1", "-o", str(out))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert load(out).template_args == "s2s_lambda_axpy_1"
    run = run_cli("run", str(out), "--no-time", "--json")
    assert run.returncode == 0 and "reproduces the application's outputs" in run.stdout, run.stdout[-3000:] + run.stderr[-2000:]


FREE_APP = """template <typename F> __global__ void each(int n, F f) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) f(i);
}
template <typename F> void launch_each(int n, F f) { each<<<(n + 127) / 128, 128>>>(n, f); }
void halve(double* x, double s, long n) {
  launch_each((int)n, [=] __device__ (int i) { x[i] *= s; });
}
template <typename T> void damp(T* x, T s, long n) {
  launch_each((int)n, [=] __device__ (int i) { x[i] = x[i] * s + (T)1; });
}
"""


@pytest.mark.parametrize("wrapper, name", [
    ("__nv_dl_wrapper_t<__nv_dl_tag<void (*)(double*, double, long), &(halve(double*, double, long)), 1u>, double*, double>",
     "s2s_lambda_halve_1"),
    ("__nv_dl_wrapper_t<__nv_dl_tag<void (*)(float*, float, long), &(void damp<float>(float*, float, long)), 1u>, "
     "float*, float>", "s2s_lambda_damp_1"),
    ("__nv_dl_wrapper_t<__nv_dl_tag<void (*) (float*, float, long), damp<float>, 1u>, float*, float>", "s2s_lambda_damp_1"),
])
@needs_nvcc
def test_a_lambda_in_a_free_function_or_a_function_template_is_a_functor(tmp_path: Path, wrapper: str, name: str) -> None:
    """The tag of a lambda in a free function names it `&(fn(params))`, in a function template `&(void fn<T>(params))`
    (the spellings nvcc's host symbols demangle to; some demanglers drop the `&`): each read as its enclosing function,
    the template's parameters bound where the body uses them. Was: "the extended lambda's tag ... names no enclosing
    function", the MEP left with template_args to fill in."""
    import subprocess

    f = functor_for(wrapper, {"app.cu": FREE_APP})
    assert not isinstance(f, str), f
    assert f.name == name and f.wrapper == wrapper
    if "damp" in name:
        assert "typedef float T;" in f.code and "float* x;\n  float s;" in f.code
    unit = tmp_path / "unit.cu"
    unit.write_text(f.code + "template <typename F> __global__ void each(int n, F f) { if ((int)threadIdx.x < n) f(threadIdx.x); }\n"
                    f"template __global__ void each<{name}>(int, {name});\n")
    proc = subprocess.run(["nvcc", "-arch=sm_90", "-c", str(unit), "-o", str(tmp_path / "unit.o")], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
