"""Variants that try to fool the check (FIELD_NOTES, "How kernel optimizers get fooled"), on OpenCL
(runs here, on PoCL) and on CUDA (needs a GPU)."""
from __future__ import annotations

import shutil
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from mep_util import ParamSpec, make_mep, manifest

from s2s.mep.evaluate import build_many, evaluate, run_built

N = 1000

# ---- OpenCL ----------------------------------------------------------------------------------------
OCL = r'''
__kernel void scale(__global const double* x, __global double* out, __global const int* k, __global int* iout, const int n)
{
    int i = get_global_id(0);
    if (i < n) {
        out[i] = 1.5 * x[i] + sqrt(fabs(x[i]));
        iout[i] = k[i] * 3;
    }
}
'''
OCL_BODY = "        out[i] = 1.5 * x[i] + sqrt(fabs(x[i]));"
OCL_CHEATS = {
    # does nothing: hopes that the reference's result is still in the output buffer
    "stale_output": OCL.replace(OCL_BODY + "\n        iout[i] = k[i] * 3;", ""),
    # the same value everywhere
    "constant": OCL.replace("1.5 * x[i] + sqrt(fabs(x[i]))", "0.75"),
    # single precision where the reference computes in double
    "float_precision": OCL.replace("1.5 * x[i] + sqrt(fabs(x[i]))",
                                   "(double)(1.5f * (float)x[i] + sqrt(fabs((float)x[i])))"),
    # integers are exact: off by one in one element fails however small the relative error
    "int_off_by_one": OCL.replace("k[i] * 3;", "k[i] * 3 + (i == 5);"),
    # keeps what it finds in the output (a result left by an earlier launch) instead of computing it
    "keeps_old_output": OCL.replace("    if (i < n) {", "    if (i < n && out[i] == out[i] && out[i] != 0) return;\n    if (i < n) {"),
    # correct while it is being checked, skips the work once it has been launched a few times (timing)
    "counts_launches": "__global int launches[1000];\n" + OCL.replace(
        "    if (i < n) {", "    if (i < n && ++launches[i] > 8) return;\n    if (i < n) {"),
}
OCL_EXPECTED = {
    "stale_output": ("out", "left unwritten"),
    "constant": ("out", "constant (0.75)"),
    "float_precision": ("out", "differ beyond tolerance"),
    "int_off_by_one": ("iout", "differ beyond tolerance"),
    "keeps_old_output": ("out", "pre-filled with the previous set's results"),
    "counts_launches": ("out", "after timing"),
}


def ocl_manifest():  # type: ignore[no-untyped-def]
    return manifest("scale", "opencl", "kernel.cl", [
        ParamSpec("x", "__global const double*", "in", "double", count=N, space="global", low=-4.0, high=4.0),
        ParamSpec("out", "__global double*", "out", "double", count=N, space="global"),
        ParamSpec("k", "__global const int*", "in", "int", count=N, space="global", low=0, high=1_000_000),
        ParamSpec("iout", "__global int*", "out", "int", count=N, space="global"),
        ParamSpec("n", "const int", "scalar", "int", value=N),
    ], (1024, 1, 1), (64, 1, 1), flags=["-cl-std=CL2.0"], rtol=1e-12, atol=0.0, repetitions=4, warmup=1, timeout_s=30.0)


@pytest.fixture(scope="module")
def ocl_mep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("pyopencl")
    return make_mep(tmp_path_factory.mktemp("cheats") / "mep", OCL, ocl_manifest(), OCL_CHEATS)


@pytest.mark.slow
@pytest.mark.parametrize("variant", sorted(OCL_CHEATS))
def test_opencl_cheat_is_caught(ocl_mep: Path, variant: str) -> None:
    buffer, words = OCL_EXPECTED[variant]
    m = evaluate(ocl_mep, variant)
    assert m.verdict == "wrong-output", (variant, m.messages, m.outputs)
    out = {o.name: o for o in m.outputs}
    assert not out[buffer].ok and words in out[buffer].message, out[buffer]
    if variant == "int_off_by_one":
        assert out["iout"].first_bad == 5 and out["out"].ok
    if variant == "counts_launches":  # it passed every check before the timing
        assert m.ref is not None and "input set" not in out["out"].message.split("after timing")[0]


@pytest.mark.slow
def test_opencl_loose_tolerance_is_what_lets_a_precision_downgrade_pass(ocl_mep: Path, tmp_path: Path) -> None:
    loose = make_mep(tmp_path / "loose", OCL, replace(ocl_manifest(), rtol=1e-3, atol=1e-4),
                     {"float_precision": OCL_CHEATS["float_precision"]})
    assert evaluate(loose, "float_precision", time=False).verdict == "ok"


# ---- CUDA (GPU) -------------------------------------------------------------------------------------
CU = r'''
#include <cuda_runtime.h>
#include <math.h>
__global__ void scale(const double* x, double* out, const int* k, int* iout, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = 1.5 * x[i] + sqrt(fabs(x[i]));
        iout[i] = k[i] * 3;
    }
}
'''
CU_BODY = "        out[i] = 1.5 * x[i] + sqrt(fabs(x[i]));"
CU_CHEATS = {
    "stale_output": CU.replace(CU_BODY + "\n        iout[i] = k[i] * 3;", ""),
    "constant": CU.replace("1.5 * x[i] + sqrt(fabs(x[i]))", "0.75"),
    "float_precision": CU.replace("1.5 * x[i] + sqrt(fabs(x[i]))", "(double)(1.5f * (float)x[i] + sqrtf(fabsf((float)x[i])))"),
    "int_off_by_one": CU.replace("k[i] * 3;", "k[i] * 3 + (i == 5);"),
    "keeps_old_output": CU.replace("    if (i < n) {", "    if (i < n && out[i] == out[i] && out[i] != 0) return;\n    if (i < n) {"),
    "counts_launches": CU.replace("__global__", "__device__ int launches[1000];\n__global__").replace(
        "    if (i < n) {", "    if (i < n && ++launches[i] > 8) return;\n    if (i < n) {"),
}


@pytest.fixture(scope="module")
def cu_builds(tmp_path_factory: pytest.TempPathFactory) -> dict:
    m = replace(ocl_manifest(), backend="cuda", kernel_file="kernel.cu", flags=[], launch=replace(ocl_manifest().launch, grid=(4, 1, 1), block=(256, 1, 1)))
    mep = make_mep(tmp_path_factory.mktemp("cucheats") / "mep", CU, m, CU_CHEATS)
    return dict(zip(CU_CHEATS, build_many(mep, list(CU_CHEATS))))


@pytest.mark.gpu
@pytest.mark.skipif(shutil.which("nvidia-smi") is None or shutil.which("nvcc") is None, reason="needs nvcc and an NVIDIA GPU")
@pytest.mark.parametrize("variant", sorted(CU_CHEATS))
def test_cuda_cheat_is_caught(cu_builds: dict, variant: str) -> None:
    buffer, words = OCL_EXPECTED[variant]
    m = run_built(cu_builds[variant])
    assert m.verdict == "wrong-output", (variant, m.messages, m.outputs)
    out = {o.name: o for o in m.outputs}
    assert not out[buffer].ok and words in out[buffer].message, out[buffer]


# ---- the catalogue (bench/cheat_catalogue.py): every entry caught on PoCL ----------------------------------
def _catalogue():  # type: ignore[no-untyped-def]
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "bench" / "cheat_catalogue.py"
    spec = importlib.util.spec_from_file_location("cheat_catalogue", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


CAT = _catalogue()


def test_catalogue_has_every_case_of_the_issue_and_spells_both_dialects() -> None:
    names = {c.name for c in CAT.CASES}
    assert len([c for c in CAT.CASES if c.verdict != "ok"]) >= 20
    assert {"sentinel_overwritten", "writes_nothing", "size_specialized", "skip_last", "keeps_stale_output", "constant",
            "zeros", "nan", "caches_between_launches", "writes_input", "precision_downgrade", "out_of_bounds_write",
            "count_too_small_read", "detects_warmup", "reference_writes_nothing"} <= names
    for c in CAT.CASES:
        if c.edit is not None:
            assert c.edit(CAT.BASE) != CAT.BASE, c.name
        for dialect in ("opencl", "cuda"):
            text = CAT.spell(c.edit(CAT.BASE) if c.edit else CAT.BASE, dialect)
            assert not any(w in text for w in ("KERNEL", "GLOBAL ", "GID", "DEVGLOBAL")), (c.name, dialect)


@pytest.fixture(scope="module")
def catalogue_meps(tmp_path_factory: pytest.TempPathFactory) -> dict:
    pytest.importorskip("pyopencl")
    return CAT.write_meps(tmp_path_factory.mktemp("catalogue"), "opencl")


@pytest.mark.slow
@pytest.mark.parametrize("name", [c.name for c in CAT.CASES])
def test_catalogue_entry_is_caught_on_pocl(catalogue_meps: dict, name: str) -> None:
    case = next(c for c in CAT.CASES if c.name == name)
    r = CAT.run_case(case, catalogue_meps[name])
    assert r["verdict"] == case.verdict and r["caught"], r
    if case.verdict == CAT.BAD_INPUT and case.buffer != "params":
        assert f"params.{case.buffer}.count" in r["message"], r
