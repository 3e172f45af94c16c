"""A long reference's outputs computed once per input set and reused by later evaluations (s2s/mep/reference_cache.py,
the CUDA harness's --ref-cache): when it applies and where it keeps them (no device), and on a GPU (`-m gpu`) that a
second evaluation reads every kept set, checks a variant as the first did (a wrong one still fails), keeps the set
after the timing fresh, and runs the reference again where a kept file does not match."""
from __future__ import annotations

import json
import os
import shutil
from collections import namedtuple
from pathlib import Path

import pytest
from conftest import needs_gpu, needs_nvcc
from mep_util import ParamSpec, make_mep, manifest

from s2s.mep import reference_cache
from s2s.mep.evaluate import build, evaluate

KEY = "k" * 64


def test_a_long_reference_gets_a_cache_and_a_fixed_seed_once_timed(tmp_path: Path) -> None:
    assert reference_cache.harness_args(tmp_path, KEY, 1e6) == []  # never timed
    reference_cache.note_time(tmp_path, KEY, reference_cache.LONG_REFERENCE_US / 2, seed=11)
    assert reference_cache.harness_args(tmp_path, KEY, 1e6) == []  # short: its reference runs in every evaluation
    (tmp_path / "build" / reference_cache.RECORD).unlink()
    reference_cache.note_time(tmp_path, KEY, reference_cache.LONG_REFERENCE_US * 2, seed=42)
    reference_cache.note_time(tmp_path, KEY, 2.0e6, seed=43)  # the first record of a key stays
    args = reference_cache.harness_args(tmp_path, KEY, 1e6)
    assert args[0] == "--ref-cache" and args[2:] == ["--seed", "42"], args
    cache = Path(args[1])
    assert cache.is_dir() and cache.parent == tmp_path / "build"
    assert reference_cache.harness_args(tmp_path, KEY, 1e6) == args  # the same place each time
    assert reference_cache.harness_args(tmp_path, "other" * 8, 1e6) == []  # another reference: not recorded


def test_a_reference_of_a_tenth_of_a_second_is_checked_on_one_generated_set(tmp_path: Path) -> None:
    reference_cache.note_time(tmp_path, KEY, reference_cache.FEWER_SETS_US, seed=9)
    assert reference_cache.harness_args(tmp_path, KEY, 1.0)[2:] == ["--seed", "9", "--input-sets", "1"]


def test_the_cache_is_per_capture_and_old_ones_go(tmp_path: Path) -> None:
    (tmp_path / "capture").mkdir()
    data = tmp_path / "capture" / "x.npy"
    data.write_bytes(b"0" * 100)
    reference_cache.note_time(tmp_path, KEY, 1e6, seed=1)
    first = Path(reference_cache.harness_args(tmp_path, KEY, None)[1])
    (first / "seed1.bin").write_bytes(b"kept")
    data.write_bytes(b"1" * 120)  # captured again: other data, another cache; the old one is removed
    second = Path(reference_cache.harness_args(tmp_path, KEY, None)[1])
    assert second != first and second.is_dir() and not first.exists()


def test_no_cache_without_room_on_the_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reference_cache.note_time(tmp_path, KEY, 1e6, seed=1)
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(reference_cache.shutil, "disk_usage", lambda _p: usage(1 << 40, 1 << 40, 2 << 30))
    assert reference_cache.harness_args(tmp_path, KEY, float(1 << 30)) == []  # 6 GiB + 1 spare needed, 2 free
    assert reference_cache.harness_args(tmp_path, KEY, float(1 << 20))[0] == "--ref-cache"


def test_a_bad_record_is_no_record(tmp_path: Path) -> None:
    (tmp_path / "build").mkdir()
    for body in ("not json", json.dumps({"key": KEY, "ref_us": "long", "seed": 1}),
                 json.dumps({"key": KEY, "ref_us": 1e6, "seed": True}), json.dumps([KEY])):
        (tmp_path / "build" / reference_cache.RECORD).write_text(body)
        assert reference_cache.harness_args(tmp_path, KEY, 1.0) == [], body


# ---- on a GPU --------------------------------------------------------------------------------------------
# two outputs: `s` written everywhere, `m` only where x > 0 (the reference runs twice per set there: which elements
# it writes), and an input left as it is
KERNEL = r'''
#include <cuda_runtime.h>
__global__ void split(const float* x, float* s, float* m, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        s[i] = 2.0f * x[i] + 1.0f;
        if (x[i] > 0.0f) m[i] = x[i] * x[i];
    }
}
'''
N = 4096


def _manifest():  # type: ignore[no-untyped-def]
    return manifest("split", "cuda", "kernel.cu", [
        ParamSpec("x", "const float *", "in", "float", count=N),
        ParamSpec("s", "float *", "out", "float", count=N),
        ParamSpec("m", "float *", "out", "float", count=N),
        ParamSpec("n", "int", "scalar", "int", value=N),
    ], (N // 256, 1, 1), (256, 1, 1), repetitions=5, timeout_s=120.0)


@pytest.mark.gpu
@needs_gpu
@needs_nvcc
def test_the_second_evaluation_reads_the_kept_reference_outputs(tmp_path: Path) -> None:
    mep = make_mep(tmp_path / "mep", KERNEL, _manifest(), {
        "fast": KERNEL.replace("2.0f * x[i] + 1.0f", "fmaf(2.0f, x[i], 1.0f)"),
        "wrong": KERNEL.replace("if (x[i] > 0.0f) m[i]", "if (x[i] >= -1.0f) m[i]"),  # writes where it must not
    })
    key = build(mep, None).extra["probe_key"]
    reference_cache.note_time(mep, key, 2 * reference_cache.LONG_REFERENCE_US, seed=777)  # as a long reference would
    first = evaluate(mep, "fast")
    assert first.verdict == "ok", first.messages
    kept = first.extra.get("ref_cache")
    assert kept is not None and kept["read"] == 0 and kept["written"] >= 3, first.extra  # 3 seeds (+ the smaller size)
    assert first.seed == 777 and first.extra["reference_check_us"] > 0  # its checks' shortest reference launch
    second = evaluate(mep, "fast")
    assert second.verdict == "ok", second.messages
    assert second.extra["ref_cache"] == {"read": kept["written"], "written": 0}, second.extra
    assert any("read from --ref-cache" in m for m in second.messages), second.messages
    wrong = evaluate(mep, "wrong", time=False)  # held to the kept outputs and written elements: still caught
    assert wrong.verdict == "wrong-output" and wrong.extra["ref_cache"]["read"] == kept["written"], wrong.messages
    # a kept file that no longer matches the buffers is ignored: the reference runs for that set and writes it again
    cache = next((mep / "build").glob("refcache-*"))
    victim = sorted(cache.glob("seed*.bin"))[0]
    victim.write_bytes(victim.read_bytes()[:100])
    third = evaluate(mep, "fast", time=False)
    assert third.verdict == "ok" and third.extra["ref_cache"] == {"read": kept["written"] - 1, "written": 1}, third.extra
    assert not [p for p in os.listdir(cache) if ".tmp" in p]
    # a seed the user gives is theirs: no cache
    os.environ["S2S_SEED"] = "5"
    try:
        mine = evaluate(mep, "fast", time=False)
    finally:
        del os.environ["S2S_SEED"]
    assert mine.verdict == "ok" and "ref_cache" not in mine.extra and mine.seed == 5
    shutil.rmtree(cache)


# ---- on PoCL: the OpenCL runner keeps them the same way --------------------------------------------------
OCL = r'''
__kernel void split(__global const float* x, __global float* s, __global float* m, const int n)
{
    int i = get_global_id(0);
    if (i < n) {
        s[i] = 2.0f * x[i] + 1.0f;
        if (x[i] > 0.0f) m[i] = x[i] * x[i];
    }
}
'''


def _ocl_manifest():  # type: ignore[no-untyped-def]
    return manifest("split", "opencl", "kernel.cl", [
        ParamSpec("x", "__global const float*", "in", "float", count=N, space="global"),
        ParamSpec("s", "__global float*", "out", "float", count=N, space="global"),
        ParamSpec("m", "__global float*", "out", "float", count=N, space="global"),
        ParamSpec("n", "const int", "scalar", "int", value=N, space="private"),
    ], (N, 1, 1), (64, 1, 1), repetitions=3, warmup=1, timeout_s=120.0)


@pytest.mark.slow
def test_the_opencl_runner_keeps_and_reads_the_reference_outputs(tmp_path: Path) -> None:
    pytest.importorskip("pyopencl")
    mep = make_mep(tmp_path / "mep", OCL, _ocl_manifest(), {
        "fast": OCL.replace("2.0f * x[i] + 1.0f", "fma(2.0f, x[i], 1.0f)"),
        "wrong": OCL.replace("if (x[i] > 0.0f) m[i]", "if (x[i] >= -1.0f) m[i]"),
    })
    first = evaluate(mep, "fast", time=False)  # not yet known to be long: nothing kept, its launches timed
    assert first.verdict == "ok" and "ref_cache" not in first.extra and first.extra["reference_check_us"] > 0
    key = build(mep, None).extra["probe_key"]
    (mep / "build" / reference_cache.RECORD).unlink(missing_ok=True)  # a short kernel here: plant a long one's record
    reference_cache.note_time(mep, key, 2 * reference_cache.LONG_REFERENCE_US, seed=4242)
    kept = evaluate(mep, "fast")
    assert kept.verdict == "ok" and kept.seed == 4242, kept.messages
    written = kept.extra["ref_cache"]["written"]
    assert kept.extra["ref_cache"]["read"] == 0 and written >= 3, kept.extra
    again = evaluate(mep, "fast")
    assert again.verdict == "ok" and again.extra["ref_cache"] == {"read": written, "written": 0}, again.extra
    assert any("read from --ref-cache" in m for m in again.messages)
    assert again.input_sets == written + 1  # and the fresh set after the timing, whose reference ran
    wrong = evaluate(mep, "wrong", time=False)
    assert wrong.verdict == "wrong-output" and wrong.extra["ref_cache"]["read"] == written, wrong.messages
    cache = next((mep / "build").glob("refcache-*"))
    victim = sorted(cache.glob("seed*.bin"))[0]
    victim.write_bytes(victim.read_bytes()[:50])
    third = evaluate(mep, "fast", time=False)
    assert third.verdict == "ok" and third.extra["ref_cache"] == {"read": written - 1, "written": 1}, third.extra
