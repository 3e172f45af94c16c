"""A kernel template launched with its template arguments deduced (`scale<<<g, b>>>(d_out, d_in, a, n)`): the capture
runtime records the launch's argument types, and collect solves the template arguments from them (capture/deduce.py),
so the captured MEP names the instance (`scale<float>`) instead of leaving template_args empty or FILL-IN. No GPU needed:
the instrumented fixture is built and run here (its CUDA calls fail, the record of its launch is still written), and
collect reads hand-written dumps."""
from __future__ import annotations

import re
import struct
import subprocess
from pathlib import Path

import pytest
from capture_util import first_record
from conftest import ROOT, needs_nvcc

from s2s.base.errors import UserError
from s2s.capture.collect import collect, read_record
from s2s.capture.deduce import Unsolvable, parse_type, solve
from s2s.capture.instrument import instrument
from s2s.extract.mep_writer import make_mep
from s2s.mep.backends.base import check_manifest
from s2s.mep.manifest import FILL_IN, load, save

FIXTURE = ROOT / "tests" / "fixtures" / "deduced_scale"


@pytest.mark.parametrize("decls, params, args, want", [
    (["typename T"], ["T*", "const T*", "int"], ["float*", "const float*", "int"], "float"),
    (["class T"], ["const T*", "const T *", "T*", "size_t"], ["float*", "float*", "float*", "long unsigned int"], "float"),
    (["typename T"], ["T* __restrict__", "const T* __restrict__", "T", "int"], ["double*", "double*", "double", "int"],
     "double"),
    (["typename T"], ["T*"], ["const float*"], "const float"),  # deduction keeps the pointee's const
    (["typename T"], ["const T"], ["double"], "double"),
    (["typename T"], ["const T&"], ["int"], "int"),
    (["typename T"], ["T"], ["float*"], "float*"),
    (["typename T"], ["const T*"], ["float**"], "float*"),
    (["typename T"], ["T**"], ["unsigned char**"], "unsigned char"),
    (["typename T"], ["T*"], ["long unsigned int*"], "unsigned long int"),
    (["typename T", "typename I"], ["T*", "const I*", "I", "T"], ["float*", "long long int*", "long long int", "float"],
     "float, long long int"),
    (["typename T", "int N"], ["Vec<T, N>*", "int"], ["ns::Vec<double, 4>*", "int"], "double, 4"),
    (["typename T", "int N"], ["geom::Vec<T, N>*", "const T", "size_t"],
     ["geom::Vec<double, 3>*", "double", "long unsigned int"], "double, 3"),
    (["typename T"], ["Pair<Vec<T, 2>, T>"], ["Pair<Vec<float, 2>, float>"], "float"),
    (["typename T"], ["T*"], ["_GLOBAL__N__8548b09d_5_pf_cu_main::Cell*"], "Cell"),  # nvcc's anonymous namespace
    (["typename T"], ["T*"], ["{anonymous}::Cell*"], "Cell"),  # gcc's
    (["typename T"], ["T*"], ["(anonymous namespace)::Cell *"], "Cell"),  # clang's
    (["typename T", "typename Acc = double"], ["const T*"], ["const float*"], "float"),  # the default is left out
    (["typename Acc = double", "typename T"], ["const T*"], ["const float*"], "double, float"),  # spelled out before T
    (["typename T", "bool Flag"], ["Opt<T, Flag>"], ["Opt<int, true>"], "int, true"),
    (["template <class> class C", "typename T"], ["C<T>*"], ["Box<float>*"], "Box, float"),
])
def test_template_arguments_are_solved_from_argument_types(decls: list[str], params: list[str], args: list[str],
                                                           want: str) -> None:
    assert solve(decls, params, args) == want


@pytest.mark.parametrize("decls, params, args, why", [
    (["int BS", "typename T"], ["T*", "int"], ["float*", "int"], "BS: not deduced"),  # a block size between <>
    (["typename T", "int N"], ["T*", "int"], ["float*", "int"], "N: not deduced"),
    (["typename T"], ["T*", "T*"], ["float*", "double*"], "T would be both float and double"),
    (["typename T"], ["T*"], ["float"], "does not fit"),
    (["typename... Ts"], ["Ts..."], ["int"], "parameter pack"),
    (["typename T"], ["T*", "int"], ["float*"], "2 parameters and the launch 1 arguments"),
])
def test_unsolvable_template_arguments_say_why(decls: list[str], params: list[str], args: list[str], why: str) -> None:
    with pytest.raises(Unsolvable, match=why):
        solve(decls, params, args)


def test_type_spellings_compare_alike() -> None:
    assert parse_type("long unsigned int") == parse_type("unsigned long")
    assert parse_type("const float *__restrict__") == parse_type("float const*")
    assert parse_type("const ns::Vec<double, 2>*").spell() == "const ns::Vec<double, 2>*"


def _instrumented(tmp_path: Path, kernel: str, want: str = FILL_IN) -> Path:
    out, m, ex = make_mep(str(FIXTURE), kernel, str(tmp_path / "mep"))
    assert m.template_args in (FILL_IN, want)  # nothing at the launch names it; extraction deduces it where it can
    ins = instrument(FIXTURE, tmp_path / "work", m, list(ex.launches))
    assert "s2s_capture::before_deduced(" in (ins.root / "scale.cu").read_text()
    return ins.root


@pytest.mark.slow
@needs_nvcc
@pytest.mark.parametrize("kernel, argtypes, decls, params, want", [
    ("shift", ["geom::Vec<double, 3>*", "double", "long unsigned int"], ["typename T", "int N"],
     ["geom::Vec<T, N>*", "const T", "size_t"], "double, 3"),
    ("axpy", ["float", "const float*", "float*", "int"], ["typename T", "int BS = 256"], ["T", "const T*", "T*", "int"],
     "float"),
])
def test_the_runtime_records_deduced_argument_types(tmp_path: Path, kernel: str, argtypes: list[str], decls: list[str],
                                                    params: list[str], want: str) -> None:
    """The instrumented fixture builds with nvcc -arch=sm_90; run here without a GPU, its CUDA calls fail, yet the record
    of launch 1 holds the argument types as the host compiler names them, and they solve the kernel's template. axpy:
    `__global__ void __launch_bounds__(BS) axpy(` was not seen as a kernel template (`before(&axpy, ...)`)."""
    root = _instrumented(tmp_path, kernel, want)
    build = subprocess.run(["make"], cwd=root, capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stdout + build.stderr
    dump = tmp_path / "dump"
    subprocess.run([str(root / "app")], cwd=root, env={"S2S_CAPTURE_DIR": str(dump), "PATH": "/usr/bin:/bin"},
                   capture_output=True, text=True, timeout=60)
    rec = read_record(dump / "launch1" / "record.txt")
    assert rec.argtypes == argtypes
    assert solve(decls, params, rec.argtypes) == want


def _scale_dump(dump: Path, n: int, argtypes: str | None, launch: int = 2, fmt: str = "f") -> None:
    """What the runtime writes for a launch of the fixture's `scale` (as on a GPU); `fmt`: the element type's format."""
    d = dump / f"launch{launch}"
    d.mkdir(parents=True)
    (dump / "summary.txt").write_text(f"kernel scale\nlaunches {launch}\n")
    esz = struct.calcsize(fmt)
    num = (lambda x: x) if fmt in "fd" else int
    src = struct.pack(f"<{n}{fmt}", *[num(0.25 * i) for i in range(n)])
    (d / "arg0.before.bin").write_bytes(bytes(esz * n))
    (d / "arg0.after.bin").write_bytes(struct.pack(f"<{n}{fmt}", *[num(0.5 * i) for i in range(n)]))
    (d / "arg1.before.bin").write_bytes(src)
    (d / "arg1.after.bin").write_bytes(src)
    (d / "record.txt").write_text(
        f"launch {launch}\nsite scale.cu:39\nkernel scale\nnargs 4\n"
        + (f"argtypes {argtypes}\n" if argtypes is not None else "") + "grid 1 1 1\nblock 64 1 1\nshared_mem 0\nstream 0\n"
        f"arg 0 pointer {esz} {esz * n} 0 139800000000000 device cuMemGetAddressRange\n"
        f"arg 1 pointer {esz} {esz * n} 0 139800100000000 device cuMemGetAddressRange\n"
        f"arg 2 value {esz} {struct.pack('<' + fmt, num(2.0)).hex()}\narg 3 value 4 {struct.pack('<i', n).hex()}\ndone\n")


def test_a_recorded_launch_of_another_instance_is_not_replayed(tmp_path: Path) -> None:
    """A launch site inside a template (`run<T>()` called for int, then unsigned int: the same bytes) records two
    instances of the kernel: the first one's types make the MEP; the other's launch is kept, not replayed."""
    mep, m, _ex = make_mep(str(FIXTURE), "scale", str(tmp_path / "mep"))
    _scale_dump(tmp_path / "dump", 16, "int*|const int*|int|int", launch=2, fmt="i")
    _scale_dump(tmp_path / "dump", 16, "unsigned int*|const unsigned int*|unsigned int|int", launch=3, fmt="I")
    got = collect(tmp_path / "dump", mep, m, want="--first 3", run_cmd="./app", build_cmd="make")
    assert got.manifest.template_args == "int" and got.manifest.capture["sets"] == [2]
    assert any(x.startswith("launch 3: scalars, sizes, argument types") for x in got.notes)


@pytest.mark.slow
@needs_nvcc
def test_collect_fills_template_args_and_the_harness_builds(tmp_path: Path) -> None:
    """Before: template_args = "" and the harness did not build (`cannot determine which instance of function template
    "s2s_ref::scale" is intended`); the scalar `T a` was not decoded."""
    from s2s.mep.backends import write_mep_files
    from s2s.mep.evaluate import build

    mep, m, _ex = make_mep(str(FIXTURE), "scale", str(tmp_path / "mep"))
    # statically: FILL-IN, or the type the launch's declared arguments give (float); the capture says which ran
    assert m.template_args in (FILL_IN, "float")
    n = 64
    _scale_dump(tmp_path / "dump", n, "float*|const float*|float|int")
    got = collect(tmp_path / "dump", mep, m, want="--launch 2", run_cmd="./app", build_cmd="make")
    save(got.manifest, mep)
    write_mep_files(mep, got.manifest)
    m2 = load(mep)
    assert m2.template_args == "float"
    assert [p.elem for p in m2.params] == ["float", "float", "float", "int"]
    assert next(p for p in m2.params if p.name == "a").value == 2.0
    assert "deduced from the argument types of launch 2" in m2.capture["template_args_from"]
    assert any(x.startswith("template_args = 'float': deduced") for x in m2.notes)
    assert not m2.unfilled()
    check_manifest(m2, mep / "mep.toml")
    assert "scale<float>" in (mep / "harness.cu").read_text()
    b = build(mep, None)
    assert b.ok, b.log[-3000:]


def test_collect_leaves_fill_in_with_the_reason(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "k.cu").write_text(
        "template <int BS, typename T>\n__global__ void scale(T* out, const T* in, T a, int n) {\n"
        "  int i = blockIdx.x * BS + threadIdx.x;\n  if (i < n) out[i] = a * in[i];\n}\n"
        "void run(float* o, const float* i, int n) { scale<128><<<n / 128, 128>>>(o, i, 2.0f, n); }\n")
    mep, m, _ex = make_mep(str(tmp_path / "app"), "scale", str(tmp_path / "mep"))
    m = type(m)(**{**m.__dict__, "template_args": ""})  # as a launch that names no argument leaves it
    _scale_dump(tmp_path / "dump", 16, "float*|const float*|float|int")
    got = collect(tmp_path / "dump", mep, m, want="--launch 2", run_cmd="./app", build_cmd="make")
    assert got.manifest.template_args == FILL_IN
    assert any("BS: not deduced" in x for x in got.notes)
    assert any("BS: not deduced" in u for u in got.manifest.unfilled())


def test_collect_without_argument_types_leaves_fill_in(tmp_path: Path) -> None:
    mep, m, _ex = make_mep(str(FIXTURE), "scale", str(tmp_path / "mep"))
    m = type(m)(**{**m.__dict__, "template_args": FILL_IN})  # as when extraction could not read the arguments' types
    _scale_dump(tmp_path / "dump", 16, None)
    got = collect(tmp_path / "dump", mep, m, want="--launch 2", run_cmd="./app", build_cmd="make")
    assert got.manifest.template_args == FILL_IN
    assert any("recorded no argument types" in u for u in got.manifest.unfilled())


def test_a_plain_kernel_is_left_alone(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "k.cu").write_text(
        "__global__ void scale(float* out, const float* in, float a, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) out[i] = a * in[i];\n}\n"
        "void run(float* o, const float* i, int n) { scale<<<n / 64, 64>>>(o, i, 2.0f, n); }\n")
    mep, m, _ex = make_mep(str(tmp_path / "app"), "scale", str(tmp_path / "mep"))
    _scale_dump(tmp_path / "dump", 16, None)
    got = collect(tmp_path / "dump", mep, m, want="--launch 2", run_cmd="./app", build_cmd="make")
    assert got.manifest.template_args == "" and "template_args_from" not in got.manifest.capture


@pytest.mark.slow
@needs_nvcc
def test_a_launch_inside_a_class_template_records_its_instance(tmp_path: Path) -> None:
    """tests/fixtures/deduced_template (BabelStream's dot shape): `partial_dot<<<blocks, BLOCK>>>(a, b, sums, n)` in a
    member of `Stream<T>`, its `const T*` parameters given `float*` arguments: T = float."""
    tree = ROOT / "tests" / "fixtures" / "deduced_template"
    out, m, ex = make_mep(str(tree), "partial_dot", str(tmp_path / "mep"))
    ins = instrument(tree, tmp_path / "work", m, list(ex.launches))
    proc = subprocess.run(["make"], cwd=ins.root, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    dump = tmp_path / "dump"
    subprocess.run([str(ins.root / "app")], cwd=ins.root, env={"S2S_CAPTURE_DIR": str(dump), "PATH": "/usr/bin:/bin"},
                   capture_output=True, text=True, timeout=60)
    rec = read_record(dump / "launch1" / "record.txt")
    assert rec.argtypes == ["float*", "float*", "float*", "long unsigned int"]
    assert solve(["class T"], [p.type for p in m.params], rec.argtypes) == "float"


@pytest.mark.slow
@needs_nvcc
def test_template_args_fill_in_from_sites_that_disagree_is_solved_from_the_recorded_instance(tmp_path: Path) -> None:
    """Two sites name two instances (`scale<float>`, `scale<double>`): extraction cannot tell which runs (FILL-IN);
    the runtime records the launched instance's parameter types, which solve it."""
    from s2s.capture.collect import with_deduced_template_args

    app = tmp_path / "app"
    app.mkdir()
    (app / "k.cu").write_text(
        "#include <cuda_runtime.h>\n"
        "template <typename T>\n__global__ void scale(T* out, const T* in, T a, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) out[i] = a * in[i];\n}\n"
        "int main() {\n  float* f = nullptr; double* d = nullptr;\n"
        "  cudaMalloc(&f, 256 * sizeof(float)); cudaMalloc(&d, 256 * sizeof(double));\n"
        "  scale<float><<<1, 256>>>(f, f, 2.0f, 256);\n  scale<double><<<1, 256>>>(d, d, 2.0, 256);\n"
        "  return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;\n}\n")
    (app / "Makefile").write_text("app: k.cu\n\tnvcc -arch=sm_90 -o app k.cu\n")
    mep, m, ex = make_mep(str(app), "scale", str(tmp_path / "mep"))
    assert m.template_args == FILL_IN
    ins = instrument(app, tmp_path / "work", m, list(ex.launches))
    proc = subprocess.run(["make"], cwd=ins.root, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    dump = tmp_path / "dump"
    for launch in ("1", "2"):
        (dump / launch).mkdir(parents=True)
        subprocess.run([str(ins.root / "app")], cwd=ins.root, capture_output=True, text=True, timeout=60,
                       env={"S2S_CAPTURE_DIR": str(dump / launch), "S2S_CAPTURE_LAUNCH": launch, "PATH": "/usr/bin:/bin"})
    solved = [with_deduced_template_args(m, mep, read_record(dump / k / f"launch{k}" / "record.txt"))[0] for k in "12"]
    assert [s.template_args for s in solved] == ["float", "double"]
    assert [p.elem for p in solved[1].params] == ["double", "double", "double", "int"]


@pytest.mark.slow
@needs_nvcc
def test_a_launch_that_names_some_template_arguments_deduces_the_rest(tmp_path: Path) -> None:
    """`blocked<128><<<g, b>>>(d, n)` with `template <int BS, typename T>` defined in a header: BS given, T deduced.
    Before: the launch file holds no kernel template, so the copy called `before(&blocked<128>, ...)`, which names no
    single function and did not build; template_args stayed `128` (the harness: no instance)."""
    from s2s.capture.collect import with_deduced_template_args

    app = tmp_path / "app"
    app.mkdir()
    (app / "blocked.cuh").write_text(
        "template <int BS, typename T>\n__global__ void blocked(T* x, int n) {\n"
        "  int i = blockIdx.x * BS + threadIdx.x;\n  if (i < n) x[i] = x[i] * T(2);\n}\n")
    (app / "main.cu").write_text(
        '#include <cuda_runtime.h>\n#include "blocked.cuh"\n'
        "int main() {\n  float* d = nullptr;\n  cudaMalloc(&d, 1024 * sizeof(float));\n"
        "  blocked<128><<<8, 128>>>(d, 1024);\n  return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;\n}\n")
    (app / "Makefile").write_text("app: main.cu blocked.cuh\n\tnvcc -arch=sm_90 -o app main.cu\n")
    mep, m, ex = make_mep(str(app), "blocked", str(tmp_path / "mep"))
    assert m.template_args == "128"
    ins = instrument(app, tmp_path / "work", m, list(ex.launches))
    assert "s2s_capture::before_deduced(" in (ins.root / "main.cu").read_text()
    proc = subprocess.run(["make"], cwd=ins.root, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    dump = tmp_path / "dump"
    subprocess.run([str(ins.root / "app")], cwd=ins.root, env={"S2S_CAPTURE_DIR": str(dump), "PATH": "/usr/bin:/bin"},
                   capture_output=True, text=True, timeout=60)
    rec = read_record(dump / "launch1" / "record.txt")
    assert rec.argtypes == ["float*", "int"]
    solved, why = with_deduced_template_args(m, mep, rec)
    assert solved.template_args == "128, float" and "deduced" in why
    assert [p.elem for p in solved.params] == ["float", "int"]


def test_given_template_arguments_are_kept_and_the_rest_deduced() -> None:
    assert solve(["int BS", "typename T"], ["T*", "int"], ["float*", "int"], given="128") == "128, float"
    assert solve(["typename T", "typename U"], ["T*", "U"], ["float*", "int"], given="real") == "real, int"
    with pytest.raises(Unsolvable, match="BS: not deduced"):
        solve(["typename T", "int BS"], ["T*", "int"], ["float*", "int"], given="float")


def test_fidelity_compares_the_solved_template_args(tmp_path: Path) -> None:
    from s2s.capture.fidelity import compare

    mep, m, _ex = make_mep(str(FIXTURE), "scale", str(tmp_path / "mep"))
    _scale_dump(tmp_path / "dump", 16, "float*|const float*|float|int")
    got = collect(tmp_path / "dump", mep, m, want="--launch 2", run_cmd="./app", build_cmd="make")
    row = next(r for r in compare(m, got.manifest, FIXTURE)["values"] if r["value"] == "template_args")
    assert row["captured"] == "float" and row["static"] in (FILL_IN, "float")
    assert row["verdict"] == ("equal" if row["static"] == "float" else "FILL-IN")


def test_fidelity_takes_the_instance_that_ran_over_the_host_functions_names(tmp_path: Path) -> None:
    """A launch in a template host function (`cvt<Td, Ts><<<...>>>`): the truth is the instance the runtime recorded
    (`__half, __nv_bfloat16`), not the site's text, which names the host's parameters and made every right static
    value "wrong" on the H200 (6 development kernels, 2415e4d); spellings of one type are one type."""
    from dataclasses import replace

    from s2s.capture.fidelity import compare, same_template_args, tree_typedefs

    assert same_template_args("half, __nv_bfloat16", "__half, __nv_bfloat16")
    assert same_template_args("256u, unsigned", "256, unsigned int") and same_template_args("(int)4", "4")
    assert not same_template_args("float, 4", "float, 8") and not same_template_args("float", "float, 4")
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "t.h").write_text("typedef unsigned char uchar_odd;\nusing real = double;\n"
                                           "typedef float two; typedef int two;\n")
    aliases = tree_typedefs(tmp_path / "tree")
    assert aliases == {"uchar_odd": "unsigned char", "real": "double"}  # a name with two types is neither
    assert same_template_args("uchar_odd, real", "unsigned char, double", aliases)
    assert not same_template_args("uchar_odd", "char", aliases)
    mep, m, _ex = make_mep(str(FIXTURE), "scale", str(tmp_path / "mep"))
    static = replace(m, template_args="half")
    ran = replace(m, template_args="__half", capture={**m.capture, "from": "launch 2 at nowhere.cu:1, x",
                                                       "template_args_from": "template_args = '__half': named by launch 2"})
    row = next(r for r in compare(static, ran, FIXTURE)["values"] if r["value"] == "template_args")
    assert (row["captured"], row["verdict"]) == ("__half", "equal"), row
    wrong = next(r for r in compare(replace(m, template_args="float"), ran, FIXTURE)["values"] if r["value"] == "template_args")
    assert wrong["verdict"] == "wrong", wrong
    unsolved = replace(ran, capture={"from": "launch 2 at nowhere.cu:1, x"})  # collect solved nothing: the text, else unknown
    row = next(r for r in compare(static, unsolved, FIXTURE)["values"] if r["value"] == "template_args")
    assert row["verdict"] == "unknown", row


@pytest.mark.slow
@needs_nvcc
def test_template_arguments_a_template_host_function_names_are_recorded_from_its_instance(tmp_path: Path) -> None:
    """`topk<T, K, WIDE><<<g, b>>>(out, in, n)` inside `template <typename T, int K, bool WIDE> void run(...)`: the text
    names `T, K, WIDE`, which only the instance knows (float, 4, true); K names no kernel parameter's type, so the
    argument types cannot solve it. Before: template_args FILL-IN "K: not deduced from the launch's arguments". The
    runtime records each named argument as the host compiler names it (a type, a value) on the record's `targs` line."""
    from s2s.capture.collect import with_deduced_template_args

    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "k.cu").write_text(
        "#include <cuda_runtime.h>\n"
        "template <typename T, int K, bool WIDE>\n__global__ void topk(T* out, const T* in, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  T s = 0;\n"
        "  for (int k = 0; k < K; ++k) s += in[(i + k) % n];\n  if (i < n) out[i] = WIDE ? s : s / K;\n}\n"
        "template <typename T, int K, bool WIDE> void run(T* o, const T* i, int n) {\n"
        "  topk<T, K, WIDE><<<(n + 63) / 64, 64>>>(o, i, n);\n}\n"
        "int main() {\n  float* f = nullptr;\n  cudaMalloc(&f, 256 * sizeof(float));\n"
        "  run<float, 4, true>(f, f, 256);\n  return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;\n}\n")
    mep, m, rec = _first_record(tmp_path, "topk")
    assert rec.targs == ["float", "4", "true"]
    m = type(m)(**{**m.__dict__, "template_args": FILL_IN})  # as extraction leaves `T, K, WIDE` of a template host function
    solved, why = with_deduced_template_args(m, mep, rec)
    assert solved.template_args == "float, 4, true", why
    assert [p.elem for p in solved.params] == ["float", "float", "int"]


def test_the_instance_a_launch_ran_gives_template_args_extraction_left_fill_in(tmp_path: Path) -> None:
    """`k_words<C>` in a host template whose instance the run chooses: extraction leaves template_args FILL-IN, and the
    capture reads the instance from the launched function's mangled name (the runtime's `function` line), where the
    kernel file defines every name it uses; an instance of a type it lacks stays FILL-IN, saying which ran."""
    from s2s.capture.collect import with_deduced_template_args

    tree = ROOT / "tests" / "fixtures" / "closure_names" / "collective"
    out, m, _ex = make_mep(str(tree), "words.cu:k_words", str(tmp_path / "mep"), mode="names")
    assert m.template_args == FILL_IN

    def record(ordinal: int, mangled: str) -> Path:
        d = tmp_path / "dump" / f"launch{ordinal}"
        d.mkdir(parents=True)
        (d / "record.txt").write_text(f"launch {ordinal}\nsite words.cu:42\nkernel k_words\nnargs 1\nfunction {mangled}\n"
                                      "arg 0 pointer 4 512 0 139800000000000 device cuMemGetAddressRange\ndone\n")
        return d / "record.txt"

    ran, why = with_deduced_template_args(m, out, read_record(record(2, "_Z7k_wordsI4cfg2ILi128EfEEvPNT_4wordE")))
    assert ran.template_args == "cfg2<128, float>" and "the instance launch 2 ran" in why
    other, why = with_deduced_template_args(m, out, read_record(record(3, "_Z7k_wordsI9other_cfgILi1EEEvPNT_4wordE")))
    assert other.template_args == FILL_IN and "other_cfg<1>" in why and "does not define other_cfg" in why


@pytest.mark.slow
@needs_nvcc
def test_restrict_pointers_of_a_deduced_launch_are_recorded_as_pointers(tmp_path: Path) -> None:
    """`sig<<<g, b>>>(d, p, n)` in a template host function whose parameters are `const V* __restrict__ d`: std::decay
    keeps the restrict qualifier and std::is_pointer is false for it, so the runtime recorded both pointers as values
    (the bytes of their addresses) and the MEP kept their counts FILL-IN (a development application)."""
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "k.cu").write_text(
        "#include <cuda_runtime.h>\n"
        "template <typename I, typename V>\n__global__ void sig(const V* __restrict__ d, V* __restrict__ p, const I n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) p[i] = 2 * d[i];\n}\n"
        "template <typename I, typename V> void run(const V* __restrict__ d, V* __restrict__ p, const I n) {\n"
        "  sig<<<(n + 63) / 64, 64>>>(d, p, n);\n}\n"
        "int main() {\n  float* f = nullptr;\n  cudaMalloc(&f, 256 * sizeof(float));\n"
        "  run<int, float>(f, f, 256);\n  return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;\n}\n")
    _mep, _m, rec = _first_record(tmp_path, "sig")
    assert rec.argtypes is not None and rec.argtypes[:2] == ["const float*", "float*"], rec.argtypes
    assert rec.args[0].kind != "value" and rec.args[1].kind != "value" and rec.args[2].kind == "value"


@pytest.mark.slow
@needs_nvcc
def test_a_null_pointer_argument_is_replayed_as_a_null_pointer(tmp_path: Path) -> None:
    """An optional buffer the application passes as nullptr (`if (finished) ...`): the capture stopped with "is a null
    pointer in the application" (two development kernels). The MEP now passes a null pointer: count 0, fill "null", no
    captured data, and the harness builds."""
    from s2s.mep.backends import write_mep_files
    from s2s.mep.evaluate import build

    mep, m, _ex = make_mep(str(FIXTURE), "scale", str(tmp_path / "mep"))
    n = 64
    _scale_dump(tmp_path / "dump", n, "float*|const float*|float|int")
    rec = tmp_path / "dump" / "launch2" / "record.txt"
    rec.write_text(re.sub(r"arg 1 pointer .*\n", "arg 1 null 4\n", rec.read_text()))
    got = collect(tmp_path / "dump", mep, m, want="--launch 2", run_cmd="./app", build_cmd="make")
    p = got.manifest.params[1]
    assert (p.count, p.fill) == (0, "null") and any("a null pointer in the application's launch" in x for x in got.notes)
    save(got.manifest, mep)
    write_mep_files(mep, got.manifest)
    m2 = load(mep)
    assert not m2.unfilled()
    check_manifest(m2, mep / "mep.toml")
    assert build(mep, None).ok
    with pytest.raises(UserError, match="null passes a null pointer"):
        check_manifest(type(m2)(**{**m2.__dict__, "params": [m2.params[0], type(p)(**{**m2.params[1].__dict__, "count": 8}),
                                                              *m2.params[2:]]}), mep / "mep.toml")


def _first_record(tmp_path: Path, kernel: str) -> tuple:  # type: ignore[type-arg]
    """tmp_path/app/k.cu extracted for `kernel`, its copy instrumented, built with nvcc and run here (no GPU): (the MEP,
    its manifest, the record of launch 1)."""
    app = tmp_path / "app"
    (app / "Makefile").write_text("app: k.cu\n\tnvcc -arch=sm_90 -o app k.cu\n")
    return first_record(app, kernel, tmp_path)


def test_the_element_types_follow_the_instance_that_ran_not_extractions_guess(tmp_path: Path) -> None:
    """`cvt<Td, Ts>` launched for several instances: extraction put one call's types in the elements (`half`), the
    capture recorded another instance (`float`); the elements kept `half` and the harness stopped with "params.dst.elem
    = half differs in size from the kernel's element type" (a development application)."""
    from dataclasses import replace as with_

    from s2s.capture.collect import with_deduced_template_args

    mep, m, _ex = make_mep(str(FIXTURE), "scale", str(tmp_path / "mep"))
    guessed = with_(m, template_args="double", params=[with_(p, elem="double") if "T" in p.type else p for p in m.params])
    _scale_dump(tmp_path / "dump", 16, "float*|const float*|float|int")
    ran, why = with_deduced_template_args(guessed, mep, read_record(tmp_path / "dump" / "launch2" / "record.txt"))
    assert ran.template_args == "float", why
    assert [p.elem for p in ran.params] == ["float", "float", "float", "int"]
