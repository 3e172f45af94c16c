"""What the two-poison comparison, the size scalars and the bounds probe decide (issue 12, "Verification"):
the OpenCL runner's functions on numpy arrays, the CUDA harness's on the host (nvcc, no GPU), and on PoCL."""
from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from mep_util import ParamSpec, make_mep, manifest

from s2s.base.errors import UserError
from s2s.mep.backends.opencl_runner import POISON, POISON2, Check, compare, written_mask
from s2s.mep.backends.opencl_types import size_scalars
from s2s.mep.evaluate import evaluate

I4 = np.dtype("i4")


def runs(values: list[int | None], poison: int) -> bytes:
    """An int buffer after a run over `poison`: None elements were not written."""
    raw = bytearray(np.array([0 if v is None else v for v in values], dtype=I4).tobytes())
    for i, v in enumerate(values):
        if v is None:
            raw[4 * i:4 * i + 4] = bytes([poison]) * 4
    return bytes(raw)


def test_a_written_minus_one_is_written_and_an_unwritten_element_is_known_exactly() -> None:
    vals = [-1, 7, None, -1, 0]
    w = written_mask(runs(vals, POISON), runs(vals, POISON2), I4, 5)
    assert w.tolist() == [True, True, False, True, True]


def test_a_variant_that_overwrites_the_minus_one_sentinel_fails() -> None:
    ref = [-1, 7, None, -1]
    var = [0, 7, None, 42]
    w = written_mask(runs(ref, POISON), runs(ref, POISON2), I4, 4)
    vw = written_mask(runs(var, POISON), runs(var, POISON2), I4, 4)
    c = Check("iout", "out")
    compare(c, "", I4, runs(ref, POISON), runs(var, POISON), 4, 0.0, 0.0, w, vw)
    assert not c.ok and "2 value(s) differ" in c.message and c.first_bad == 0


def test_writing_where_the_reference_does_not_and_leaving_unwritten_both_fail() -> None:
    ref = [1, None, 3]
    w = written_mask(runs(ref, POISON), runs(ref, POISON2), I4, 3)
    extra = [1, 5, 3]
    c = Check("o", "out")
    compare(c, "", I4, runs(ref, POISON), runs(extra, POISON), 3, 0.0, 0.0, w,
            written_mask(runs(extra, POISON), runs(extra, POISON2), I4, 3))
    assert not c.ok and "leaves untouched (first at index 1)" in c.message
    missing = [1, None, None]
    c = Check("o", "out")
    compare(c, "", I4, runs(ref, POISON), runs(missing, POISON), 3, 0.0, 0.0, w,
            written_mask(runs(missing, POISON), runs(missing, POISON2), I4, 3))
    assert not c.ok and "left unwritten (first at index 2)" in c.message and c.unwritten == 1


def test_a_stale_prefill_kept_counts_as_unwritten() -> None:
    prev = np.array([9, 9, 9], dtype=I4).tobytes()
    var1 = np.array([9, 4, 9], dtype=I4).tobytes()  # kept the prefill at 0 and 2 in the first run
    var2 = runs([None, 4, None], POISON2)
    assert written_mask(var1, var2, I4, 3, prev).tolist() == [False, True, False]


def test_size_scalars_are_integers_that_divide_a_buffer_count() -> None:
    p = [{"name": "a", "role": "in", "count": 4096 * 4096}, {"name": "y", "role": "out", "count": 4096},
         {"name": "n", "role": "scalar", "elem": "int", "value": 4096}, {"name": "m", "role": "scalar", "elem": "const int", "value": 3000},
         {"name": "steps", "role": "scalar", "elem": "int", "value": 8}, {"name": "alpha", "role": "scalar", "elem": "float", "value": 4096},
         {"name": "k", "role": "scalar", "elem": "unsigned long long", "value": 64}]
    assert size_scalars(p) == {2: 2048, 6: 32}


# ---- the CUDA harness's comparison on the host -------------------------------------------------------
HOST = r'''
#include "s2s_harness_common.cuh"
using namespace s2s;
static void put(std::vector<unsigned char>& v, size_t i, int x) { memcpy(v.data() + 4 * i, &x, 4); }
static std::vector<unsigned char> after(const int* vals, const bool* wrote, unsigned char poison) {
    std::vector<unsigned char> v(16);
    for (size_t i = 0; i < 4; ++i) { if (wrote[i]) put(v, i, vals[i]); else memset(v.data() + 4 * i, poison, 4); }
    return v;
}
int main() {
    const int ref[4] = {-1, 7, 0, -1}; const bool rw[4] = {true, true, false, true};
    const int var[4] = {0, 7, 5, -1};  const bool vw_[4] = {true, true, true, true};
    auto r1 = after(ref, rw, POISON), r2 = after(ref, rw, POISON2), v1 = after(var, vw_, POISON), v2 = after(var, vw_, POISON2);
    auto w = written_mask(r1.data(), r2.data(), 4, 4), vw = written_mask(v1.data(), v2.data(), 4, 4);
    printf("%d%d%d%d\n", w[0], w[1], w[2], w[3]);
    Check c{"iout", "out"};
    compare_buffer<int, VisitPrim>(c, "", r1.data(), v1.data(), 4, w.data(), vw.data(), 0.0, 0.0);
    printf("%s\n", c.json().c_str());
}
'''


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_cuda_harness_two_poisons_on_the_host(tmp_path: Path) -> None:
    from s2s.base.resources import templates_dir
    from s2s.mep.backends.cuda import CudaBackend

    (tmp_path / "t.cu").write_text(HOST)
    cc = subprocess.run([*CudaBackend().compiler(), f"-I{templates_dir()}", "t.cu", "-o", "t"], cwd=tmp_path,
                        capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr
    mask, check = subprocess.run([str(tmp_path / "t")], capture_output=True, text=True, check=True).stdout.splitlines()
    assert mask == "1101"  # the -1 elements are written, the untouched one is not
    c = json.loads(check)
    assert not c["ok"] and "leaves untouched (first at index 2)" in c["message"]


# ---- on PoCL: seeds, the smaller size, the bounds probe ----------------------------------------------
OCL = r'''
__kernel void rowsum(__global const float* a, __global float* s, const int n)
{
    int i = get_global_id(0);
    if (i < n) {
        float acc = 0.0f;
        for (int j = 0; j < n; ++j) acc += a[i * n + j];
        s[i] = acc;
    }
}
'''
N = 64


def ocl_manifest():  # type: ignore[no-untyped-def]
    return manifest("rowsum", "opencl", "kernel.cl", [
        ParamSpec("a", "__global const float*", "in", "float", count=N * N, space="global"),
        ParamSpec("s", "__global float*", "out", "float", count=N, space="global"),
        ParamSpec("n", "const int", "scalar", "int", value=N, space="private"),
    ], (N, 1, 1), (16, 1, 1), repetitions=3, warmup=1, timeout_s=60.0)


@pytest.fixture(scope="module")
def rowsum(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("pyopencl")
    return make_mep(tmp_path_factory.mktemp("verify") / "mep", OCL, ocl_manifest(), {
        "fixed64": OCL.replace("j < n", "j < 64").replace("i * n", "i * 64"),
    })


@pytest.mark.slow
def test_fresh_seed_each_run_and_recorded(rowsum: Path) -> None:
    a, b = evaluate(rowsum, None, time=False), evaluate(rowsum, None, time=False)
    assert a.verdict == b.verdict == "ok"
    assert a.seed is not None and b.seed is not None and a.seed != b.seed
    assert a.to_json()["seed"] == a.seed
    assert any("smaller size (n = 32" in m for m in a.messages) or a.input_sets == 4


@pytest.mark.slow
def test_a_variant_specialized_to_the_one_size_fails_at_the_smaller_size(rowsum: Path) -> None:
    m = evaluate(rowsum, "fixed64", time=False)
    assert m.verdict == "wrong-output"
    s = next(o for o in m.outputs if o.name == "s")
    assert "smaller size (n = 32" in s.message


@pytest.mark.slow
def test_a_count_smaller_than_the_kernel_reads_is_bad_input_naming_it(tmp_path: Path) -> None:
    pytest.importorskip("pyopencl")
    m = ocl_manifest()
    small = replace(m, params=[replace(p, count=16) if p.name == "a" else p for p in m.params])
    mep = make_mep(tmp_path / "mep", OCL, small)
    for _ in range(2):  # the same answer every time, not a verdict that flips
        with pytest.raises(UserError) as err:
            evaluate(mep, None, time=False)
        assert "params.a.count = 16" in str(err.value) and "reads past the end" in str(err.value)


# ---- the winner: top candidates re-timed, above the original's noise band (s2s.optimize.winner) ----------------
def _history(tmp_path: Path, speedups: dict[str, float]):  # type: ignore[no-untyped-def]
    from s2s.mep.history import History

    h = History(tmp_path / "history.sqlite")
    for i, (cid, s) in enumerate(speedups.items()):
        h.add(cid, 1, "pass:x", None, f"sha{i}", None)
        h.finish(cid, "ok", {"speedup": s, "reference": {"median_us": 10.0 * s}, "variant": {"median_us": 10.0}}, "log", 0)
    return h


def _timer(retimed: dict[str | None, list[float]]):  # type: ignore[no-untyped-def]
    """An evaluate() that answers each variant's next re-timed speedup from `retimed` (None: the original)."""
    from s2s.mep.measure import Measurement, Timing

    calls: list[str | None] = []

    def evaluate(mep_dir: Path, variant: str | None = None) -> Measurement:
        calls.append(variant)
        s = retimed[variant].pop(0)
        return Measurement("ok", "opencl", "k", variant, device="dev", ref=Timing(10.0 * s, 0.1), var=Timing(10.0, 0.1),
                           speedup=s, seed=7)
    return evaluate, calls


def test_the_top_three_are_retimed_and_the_winner_is_the_retimed_speedup(tmp_path: Path) -> None:
    from s2s.optimize.winner import declare

    h = _history(tmp_path, {"a": 3.0, "b": 2.5, "c": 2.0, "d": 1.5})
    evaluate, calls = _timer({None: [1.02, 0.99, 1.01], "a": [2.1], "b": [2.4], "c": [1.9]})
    best, decision = declare(tmp_path, h, evaluate)
    assert calls == [None, None, None, "a", "b", "c"]  # the noise band first, then the top 3; d is never re-timed
    assert best is not None and best.id == "b" and best.speedup == 2.4 and decision["id"] == "b"
    a = h.get("a")
    assert a is not None and a.speedup == 2.1 and a.result is not None
    assert a.result["retimed"]["speedup"] == 2.1 and a.result["first"]["speedup"] == 3.0 and a.result["retimed"]["seed"] == 7
    band = json.loads(h.meta("noise_band") or "{}")
    assert band["runs"] == [1.02, 0.99, 1.01] and band["high"] == 1.02 and band["low"] == pytest.approx(1 / 1.02, abs=1e-4)
    again, _ = declare(tmp_path, h, _timer({"b": [2.3], "a": [2.0], "c": [1.8]})[0])  # the band is measured once
    assert again is not None and again.id == "b"


def test_a_leader_dropped_below_an_untimed_candidate_brings_that_one_in(tmp_path: Path) -> None:
    from s2s.optimize.winner import declare

    h = _history(tmp_path, {"a": 3.0, "b": 2.9, "c": 2.8, "d": 2.7})
    evaluate, calls = _timer({None: [1.0, 1.0, 1.0], "a": [1.1], "b": [1.2], "c": [1.3], "d": [2.6]})
    best, _ = declare(tmp_path, h, evaluate)
    assert calls[-1] == "d" and best is not None and best.id == "d" and best.speedup == 2.6


def test_the_noise_band_is_measured_with_the_timing_only_evaluate_where_given(tmp_path: Path) -> None:
    from s2s.optimize.winner import declare

    h = _history(tmp_path, {"a": 2.0})
    evaluate, calls = _timer({"a": [1.9]})
    noise, noise_calls = _timer({None: [1.01, 0.99, 1.0]})
    best, _ = declare(tmp_path, h, evaluate, noise=noise)
    assert noise_calls == [None, None, None] and calls == ["a"]  # the original only timed against itself, the top one checked
    assert best is not None and best.speedup == 1.9


def test_a_long_originals_noise_band_takes_two_runs(tmp_path: Path) -> None:
    from s2s.mep.measure import Measurement, Timing
    from s2s.optimize.winner import LONG_NOISE_RUNS, LONG_NOISE_US, noise_band

    h = _history(tmp_path, {})
    calls: list[str | None] = []

    def long_original(mep_dir: Path, variant: str | None = None) -> Measurement:
        calls.append(variant)
        return Measurement("ok", "cuda", "k", None, ref=Timing(LONG_NOISE_US * 17, 1.0), var=Timing(LONG_NOISE_US * 17, 1.0),
                           speedup=1.0 + 0.001 * len(calls))
    band = noise_band(tmp_path, h, long_original)
    assert calls == [None] * LONG_NOISE_RUNS and band["runs"] == [1.001, 1.002]


def test_a_timing_only_run_passes_time_only_to_the_harness(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from s2s.mep.backends import base as backend_base
    from s2s.mep.backends import get_backend
    from s2s.mep.backends.base import BuildResult
    from s2s.mep.measure import Measurement

    seen: list[list[str]] = []

    def fake_run(argv: list[str], **kw: object) -> Measurement:
        seen.append(list(argv))
        return Measurement("ok", "opencl", "k", None)

    monkeypatch.setattr(backend_base, "run_harness_process", fake_run)
    b = BuildResult(mep_dir=tmp_path, variant=None, backend="opencl", kernel="k", ok=True, seconds=0.0, build_dir=tmp_path,
                    run_argv=("runner",))
    backend = get_backend("opencl")
    backend.run(b, check=False)
    backend.run(b)
    assert seen[0][-1] == "--time-only" and "--time-only" not in seen[1]


def test_a_win_of_a_hundredth_of_a_percent_is_no_win_even_over_a_band_of_one(tmp_path: Path) -> None:
    from s2s.optimize.winner import MIN_WIN, declare

    h = _history(tmp_path, {"a": 1.0002, "b": 1.5})
    best, decision = declare(tmp_path, h, _timer({None: [1.0, 1.0, 1.0], "a": [1.0002], "b": [1.0002]})[0])
    assert best is None and f"the least win declared is {MIN_WIN}x" in decision["why"]  # the band alone would take it
    (tmp_path / "two").mkdir()
    h2 = _history(tmp_path / "two", {"a": 1.3})
    best2, _ = declare(tmp_path, h2, _timer({None: [1.0, 1.0, 1.0], "a": [1.02]})[0])
    assert best2 is not None and best2.speedup == 1.02


def test_a_win_inside_the_noise_band_is_no_win(tmp_path: Path) -> None:
    from s2s.optimize.winner import declare

    h = _history(tmp_path, {"a": 1.08})
    best, decision = declare(tmp_path, h, _timer({None: [0.96, 1.03, 1.0], "a": [1.03]})[0])
    assert best is None and decision["id"] is None and "noise band" in decision["why"]
    assert json.loads(h.meta("winner") or "{}")["id"] is None


# C[m + n*ldc] with one work-item per element and no guard: ldc is a leading dimension, never compared. Halving it under
# the same launch made work-items write each other's elements (a race in the reference itself); k bounds the loop.
STRIDED = r'''
__kernel void gemm_nt(__global const float* A, int lda, __global const float* B, int ldb, __global float* C, int ldc, int k)
{
    int m = get_global_id(0), n = get_global_id(1);
    float c = 0.0f;
    for (int i = 0; i < k; ++i) c += A[m + i * lda] * B[n + i * ldb];
    C[m + n * ldc] = c;
}
'''
S = 64


def test_only_scalars_that_bound_something_are_halved() -> None:
    from s2s.mep.backends.opencl_types import compared_names

    assert compared_names(STRIDED) >= {"k"} and not compared_names(STRIDED) & {"lda", "ldb", "ldc"}
    assert {"n", "rows"} <= compared_names("#include <x.h>\n// a < b\nif (i >= n || j > rows) return;")
    params = [{"name": n, "role": "scalar", "value": S, "elem": "int"} for n in ("lda", "ldb", "ldc", "k")]
    params.append({"name": "C", "role": "out", "count": S * S, "elem": "float"})
    assert size_scalars(params) == {0: S // 2, 1: S // 2, 2: S // 2, 3: S // 2}  # no source: every divisor, as before
    assert size_scalars(params, STRIDED) == {3: S // 2}


@pytest.mark.slow
def test_a_strided_kernel_without_guards_passes_the_smaller_size_check(tmp_path: Path) -> None:
    pytest.importorskip("pyopencl")
    m = manifest("gemm_nt", "opencl", "kernel.cl", [
        ParamSpec("A", "__global const float*", "in", "float", count=S * S, space="global"),
        ParamSpec("lda", "int", "scalar", "int", value=S, space="private"),
        ParamSpec("B", "__global const float*", "in", "float", count=S * S, space="global"),
        ParamSpec("ldb", "int", "scalar", "int", value=S, space="private"),
        ParamSpec("C", "__global float*", "out", "float", count=S * S, space="global"),
        ParamSpec("ldc", "int", "scalar", "int", value=S, space="private"),
        ParamSpec("k", "int", "scalar", "int", value=S, space="private"),
    ], (S, S, 1), (16, 16, 1), repetitions=3, warmup=1, timeout_s=60.0)
    mep = make_mep(tmp_path / "mep", STRIDED, m, {"same": STRIDED.replace("float c = 0.0f;", "float c = 0.0f;  /* same */")})
    got = evaluate(mep, "same", time=False)
    assert got.verdict == "ok", got.messages
    assert any("smaller size (k = 32" in msg for msg in got.messages) or got.input_sets == 4
