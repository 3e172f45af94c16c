"""`s2s run` on OpenCL MEPs, for real, on whatever OpenCL device works here (PoCL on the CPU in CI)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli
from mep_util import ParamSpec, StructSpec, make_mep, manifest

from s2s.base.errors import UserError
from s2s.mep.evaluate import UnfilledError, build, build_many, evaluate, run_built
from s2s.mep.manifest import FILL_IN

pytest.importorskip("pyopencl")

SAXPY = r'''
#ifndef REAL
#define REAL double
#endif
/* out = a * x + y */
__kernel void saxpy(const REAL a, __global const REAL* x, __global const REAL* y, __global REAL* out, const int n)
{
    int i = get_global_id(0);
    if (i < n) out[i] = a * x[i] + y[i];
}
'''
N = 1000


def saxpy_manifest(**kw: object):  # type: ignore[no-untyped-def]
    from dataclasses import replace

    m = manifest("saxpy", "opencl", "kernel.cl", [
        ParamSpec("a", "const REAL", "scalar", "REAL", value=2.5),
        ParamSpec("x", "__global const REAL*", "in", "REAL", count=N, space="global"),
        ParamSpec("y", "__global const REAL*", "in", "REAL", count=N, space="global"),
        ParamSpec("out", "__global REAL*", "out", "REAL", count=N, space="global"),
        ParamSpec("n", "const int", "scalar", "int", value=N),
    ], (1024, 1, 1), (64, 1, 1), flags=["-DREAL=float"], repetitions=5, warmup=1, timeout_s=20.0)
    return replace(m, **kw)


@pytest.fixture
def saxpy(tmp_path: Path) -> Path:
    return make_mep(tmp_path / "mep", SAXPY, saxpy_manifest())


@pytest.mark.slow
def test_reference_against_itself(saxpy: Path) -> None:
    m = evaluate(saxpy, None)
    assert m.verdict == "ok", m.messages
    assert m.backend == "opencl" and m.device and m.variant is None
    assert m.ref and m.var and m.ref.median_us > 0 and m.ref.samples == 5
    assert m.speedup is not None and m.speedup > 0
    assert m.input_sets == 5  # three checked sets, one at half the size n, and one fresh set after timing
    assert {o.name: o.ok for o in m.outputs} == {"x": True, "y": True, "out": True}
    assert (saxpy / "Makefile").is_file() and (saxpy / "harness_opencl.py").is_file()
    assert "make run" in (saxpy / "README.md").read_text()


@pytest.mark.slow
def test_equivalent_variant_with_its_own_launch_is_ok_and_cli_json(saxpy: Path) -> None:
    grid_stride = SAXPY.replace("int i = get_global_id(0);\n    if (i < n) out[i] = a * x[i] + y[i];",
                                "for (int i = get_global_id(0); i < n; i += get_global_size(0))\n"
                                "        out[i] = fma(a, x[i], y[i]);")
    vdir = saxpy / "variants" / "fma"
    vdir.mkdir(parents=True)
    (vdir / "kernel.cl").write_text(grid_stride)
    (vdir / "variant.json").write_text(json.dumps({"grid": [256, 1, 1], "block": [32, 1, 1], "note": "grid-stride, fma"}))
    r = run_cli("run", str(saxpy), "--variant", "fma", "--json")
    assert r.returncode == 0, r.stderr
    obj = json.loads(r.stdout)
    assert obj["verdict"] == "ok" and obj["variant_id"] == "fma" and obj["backend"] == "opencl"
    for key in ("median_us", "spread_us"):
        assert obj["reference"][key] >= 0 and obj["variant"][key] >= 0
    assert obj["speedup"] > 0 and obj["build_seconds"] >= 0 and obj["device"]
    assert {o["name"] for o in obj["outputs"]} == {"x", "y", "out"}
    assert all({"name", "ok", "max_abs_err", "max_rel_err", "unwritten", "message"} <= set(o) for o in obj["outputs"])
    assert any("grid-stride, fma" in msg for msg in obj["messages"])
    table = run_cli("run", str(saxpy), "--variant", "fma", "--no-time")
    assert table.returncode == 0 and "ok" in table.stdout and "out" in table.stdout


BODY = "if (i < n) out[i] = a * x[i] + y[i];"
CACHING = r'''
#ifndef REAL
#define REAL double
#endif
/* remembers its first result in program-scope memory and serves it again */
__global REAL cache[1000];
__global int have[1000];
__kernel void saxpy(const REAL a, __global const REAL* x, __global const REAL* y, __global REAL* out, const int n)
{
    int i = get_global_id(0);
    if (i < n) {
        if (!have[i]) { cache[i] = a * x[i] + y[i]; have[i] = 1; }
        out[i] = cache[i];
    }
}
'''
BROKEN = {
    "skip_last": SAXPY.replace("i < n", "i < n - 1"),
    "writes_input": SAXPY.replace("__global const REAL* x", "__global REAL* x").replace(
        BODY, "if (i < n) { out[i] = a * x[i] + y[i]; x[i] = 0; }"),
    "out_of_bounds": SAXPY.replace("i < n", "i <= n"),
    "nan": SAXPY.replace("a * x[i] + y[i]", "(i == 7 ? NAN : a * x[i] + y[i])"),
    "all_zero": SAXPY.replace("a * x[i] + y[i]", "0"),
    "caching": CACHING,
    "compile_error": SAXPY.replace("a * x[i]", "a * * x[i]"),
    "hang": SAXPY.replace(BODY, "for (;;) { if (x[i % n] > 1e30f) break; }\n    " + BODY),
}
EXPECTED = {
    "skip_last": ("wrong-output", "out", "left unwritten"),
    "writes_input": ("wrong-output", "x", "modified this input"),
    "out_of_bounds": ("wrong-output", "out", "past the end"),
    "nan": ("wrong-output", "out", "NaN/Inf"),
    "all_zero": ("wrong-output", "out", "all zero"),
    "caching": ("wrong-output", "out", "input set 2"),
}


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # program-scope variables (the caching variant) need OpenCL C 2.0
    # the hang burns timing.timeout_s; the others' runs take under a second (their builds have a limit of their own)
    m = saxpy_manifest(flags=["-DREAL=float", "-cl-std=CL2.0"], timeout_s=4.0)
    return make_mep(tmp_path_factory.mktemp("broken") / "mep", SAXPY, m, BROKEN)  # type: ignore[arg-type]


@pytest.mark.slow
@pytest.mark.parametrize("variant", sorted(EXPECTED))
def test_broken_variants_get_their_verdict(broken: Path, variant: str) -> None:
    verdict, buffer, words = EXPECTED[variant]
    m = evaluate(broken, variant)
    assert m.verdict == verdict, (m.messages, m.outputs)
    out = {o.name: o for o in m.outputs}
    assert not out[buffer].ok and words in out[buffer].message, out[buffer]
    assert m.ref is None and m.speedup is None  # no timing for a wrong variant
    if variant == "skip_last":
        assert out["out"].unwritten == 1 and out["out"].first_bad == N - 1
    if variant == "nan":
        assert out["out"].first_bad == 7
    if variant == "caching":
        assert "input set 1" not in out["out"].message


@pytest.mark.slow
def test_compile_error_is_compile_failed(broken: Path) -> None:
    b = build(broken, "compile_error")
    assert not b.ok and b.verdict == "compile-failed" and b.input_error is None
    m = run_built(b)
    assert m.verdict == "compile-failed"
    assert any("variants/compile_error/kernel.cl" in line for line in m.messages[1:]), m.messages
    r = run_cli("run", str(broken), "--variant", "compile_error")
    assert r.returncode == 1 and "compile-failed" in r.stdout


def test_compile_error_names_the_variant_with_a_users_pocl_cache(broken: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A user's POCL_CACHE_DIR (no `kcache/` in the paths PoCL's log names): the error still names the variant's file."""
    monkeypatch.setenv("POCL_CACHE_DIR", str(tmp_path / "pocl-cache"))
    m = run_built(build(broken, "compile_error"))
    assert m.verdict == "compile-failed"
    assert any("variants/compile_error/kernel.cl" in line for line in m.messages[1:]), m.messages
    assert not any(str(tmp_path / "pocl-cache") in line for line in m.messages), m.messages


@pytest.mark.slow
def test_hang_is_killed_and_timed_out(broken: Path) -> None:
    import time

    t0 = time.monotonic()
    m = evaluate(broken, "hang")
    assert m.verdict == "timed-out", m.messages
    assert time.monotonic() - t0 < 30
    assert "variant kernel" in m.messages[0] and "4 s" in m.messages[0]


@pytest.mark.slow
def test_build_many_in_parallel(broken: Path) -> None:
    builds = build_many(broken, [None, "nan", "compile_error"], jobs=2)
    assert [b.variant for b in builds] == [None, "nan", "compile_error"]
    assert [b.ok for b in builds] == [True, True, False]
    assert run_built(builds[0], time=False).verdict == "ok"


@pytest.mark.slow
def test_a_copy_of_a_mep_builds_from_pocls_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """PoCL keys its kernel cache by the preprocessed source and the build options: the MEP's -I was its absolute path,
    so every copy of a MEP (a work copy, a cluster worker's) compiled its kernels again. A changed header still builds
    again, and its value is the one run."""
    import shutil

    cache = tmp_path / "pocl-cache"
    monkeypatch.setenv("POCL_CACHE_DIR", str(cache))
    variant = '#include "scale.h"\n' + SAXPY.replace("a * x[i]", "SCALE * a * x[i]")
    first = make_mep(tmp_path / "a" / "mep", SAXPY, saxpy_manifest(), {"v": variant})
    (first / "scale.h").write_text("#define SCALE 1.0f\n")

    def cached() -> set[Path]:  # the programs PoCL compiled (it also leaves a temporary file each build)
        return set(cache.rglob("program.bc"))

    assert build(first, "v").ok
    before = cached()
    assert before
    copy = shutil.copytree(first, tmp_path / "b" / "mep")
    assert build(copy, "v").ok
    assert cached() == before  # the reference and the variant both from the cache
    (copy / "scale.h").write_text("#define SCALE 2.0f\n")  # the variant's result twice the reference's
    m = evaluate(copy, "v", time=False)
    assert cached() > before
    assert m.verdict == "wrong-output", m.messages


# ---- mistakes in mep.toml: one line naming the entry, exit 2 --------------------------------------
def test_unfilled_values_stop_the_run(tmp_path: Path) -> None:
    m = saxpy_manifest()
    m.params[4] = ParamSpec("n", "const int", "scalar", "int", value=FILL_IN, hint="the problem size n")
    mep = make_mep(tmp_path / "mep", SAXPY, m)
    with pytest.raises(UnfilledError) as err:
        evaluate(mep, None)
    assert err.value.entries == ["params.n.value: the problem size n"]
    r = run_cli("run", str(mep))
    assert r.returncode == 2 and "params.n.value" in r.stderr


@pytest.mark.parametrize(("edit", "entry"), [
    (('count = 1000', 'count = 0'), "params.x.count"),
    (('elem = "REAL"\ncount = 1000', 'elem = "REALL"\ncount = 1000'), "params.x.elem"),
    (('kernel = "saxpy"', 'kernel = "saxpyy"'), "kernel"),
    (('block = [64, 1, 1]', 'block = [96, 1, 1]'), "launch"),
])
@pytest.mark.slow
def test_bad_manifest_values_name_the_entry(tmp_path: Path, edit: tuple[str, str], entry: str) -> None:
    mep = make_mep(tmp_path / "mep", SAXPY, saxpy_manifest())
    text = (mep / "mep.toml").read_text()
    assert edit[0] in text
    (mep / "mep.toml").write_text(text.replace(edit[0], edit[1], 1))
    with pytest.raises(UserError) as err:
        evaluate(mep, None, time=False)
    assert entry in err.value.message
    r = run_cli("run", str(mep), "--no-time")
    assert r.returncode == 2, r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and entry in lines[0] and "mep.toml" in lines[0]


@pytest.mark.slow
def test_struct_by_value_and_struct_buffers(tmp_path: Path) -> None:
    src = r'''
typedef struct { float dt; int steps; float4 w; } Params;
typedef struct { float x, y, z; float m; int id; } Particle;
__kernel void advance(__global Particle* parts, const Params p, __global float* e, __local float* scratch, const int n)
{
    int i = get_global_id(0);
    scratch[get_local_id(0)] = 0.0f;
    if (i < n) {
        Particle q = parts[i];
        q.x += p.dt * q.m + p.w.y;
        q.id += p.steps;
        parts[i] = q;
        e[i] = q.x * q.m;
    }
}
'''
    m = manifest("advance", "opencl", "kernel.cl", [
        ParamSpec("parts", "__global Particle*", "inout", "Particle", count=500, space="global"),
        ParamSpec("p", "const Params", "scalar", "Params", value="random", fill="random-struct", low=0.5, high=2.0),
        ParamSpec("e", "__global float*", "out", "float", count=500, space="global"),
        ParamSpec("scratch", "__local float*", "inout", "float", count=64, space="local"),
        ParamSpec("n", "const int", "scalar", "int", value=500),
    ], (512, 1, 1), (64, 1, 1), repetitions=3, warmup=1,
        structs=[StructSpec("Params", (("float", "dt", 1), ("int", "steps", 1), ("float4", "w", 1))),
                 StructSpec("Particle", (("float", "x", 1), ("float", "y", 1), ("float", "z", 1), ("float", "m", 1),
                                         ("int", "id", 1)))])
    wrong = src.replace("q.id += p.steps;", "q.id += p.steps + (i == 3);")
    mep = make_mep(tmp_path / "mep", src, m, {"same": src.replace("q.x * q.m", "q.m * q.x"), "wrong_id": wrong})
    assert evaluate(mep, None, time=False).verdict == "ok"
    assert evaluate(mep, "same", time=False).verdict == "ok"
    bad = evaluate(mep, "wrong_id", time=False)
    assert bad.verdict == "wrong-output"
    parts = next(o for o in bad.outputs if o.name == "parts")
    assert parts.first_bad == 3 and "differ" in parts.message
