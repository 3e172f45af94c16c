"""The bounds probe once per reference (s2s/mep/probe_record.py): the first checked evaluation probes and records
the outcome, later ones of the same reference skip it (--no-probe), a recorded fault refuses every later variant, and
a changed reference or mep.toml is probed again. On PoCL, compile-level for CUDA (nvcc, no GPU), and on a GPU (`-m gpu`).
Also the phases a harness reports: probe, checks and timing held apart, and the host's own work between them."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import needs_nvcc
from mep_util import ParamSpec, make_mep, manifest

from s2s.base.errors import UserError
from s2s.mep import probe_record
from s2s.mep.backends import get_backend
from s2s.mep.backends.base import run_harness_process
from s2s.mep.evaluate import build, evaluate
from s2s.mep.manifest import save

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
CLEAN = "bounds probe: the reference reads and writes within every buffer"


def ocl_manifest(count_a: int = N * N):  # type: ignore[no-untyped-def]
    return manifest("rowsum", "opencl", "kernel.cl", [
        ParamSpec("a", "__global const float*", "in", "float", count=count_a, space="global"),
        ParamSpec("s", "__global float*", "out", "float", count=N, space="global"),
        ParamSpec("n", "const int", "scalar", "int", value=N, space="private"),
    ], (N, 1, 1), (16, 1, 1), repetitions=3, warmup=1, timeout_s=60.0)


def _record(mep: Path) -> dict:  # type: ignore[type-arg]
    return json.loads(probe_record.path_of(mep).read_text())


# ---- the record itself (no device) --------------------------------------------------------------------
def test_a_record_is_found_only_under_its_own_key(tmp_path: Path) -> None:
    (tmp_path / "k.cl").write_text("a")
    key = probe_record.key_of(["opencl", tmp_path / "k.cl"])
    assert probe_record.save(tmp_path, key, {"state": "clean", "message": "fine"}, seed=3, device="d", variant="v1")
    rec = probe_record.load(tmp_path, key)
    assert rec is not None and not rec.fault and rec.seed == 3 and "v1" in rec.note() and "fine" in rec.note()
    (tmp_path / "k.cl").write_text("b")  # the reference changed: another key, no record
    assert probe_record.key_of(["opencl", tmp_path / "k.cl"]) != key
    assert probe_record.load(tmp_path, probe_record.key_of(["opencl", tmp_path / "k.cl"])) is None
    # a skipped probe (no room on the device) is not worth keeping; a fault is
    assert probe_record.save(tmp_path, "k2", {"state": "skipped", "message": "no room"}, seed=1, device="", variant=None) is None
    assert probe_record.load(tmp_path, key) is not None
    assert probe_record.save(tmp_path, "k3", {"state": "fault", "message": "params.a.count = 16: ..."}, seed=1, device="",
                             variant=None)
    rec3 = probe_record.load(tmp_path, "k3")
    assert rec3 is not None and rec3.fault and probe_record.load(tmp_path, key) is None


def test_the_phases_keep_probe_checks_timing_and_host_work_apart(tmp_path: Path) -> None:
    script = tmp_path / "fake_harness.py"
    lines = [("host work (setup)", 0.3), ("waiting for the device (probe)", 0.1), ("device held (probe)", 0.4),
             ("host work (probe)", 0.2), ("host work (inputs)", 0.2), ("waiting for the device (checks)", 0.1),
             ("device held (checks)", 0.3), ("host work (checks)", 0.5), ("waiting for the device (timing)", 0.1),
             ("device held (timing)", 0.2)]
    script.write_text("import sys, time\n" + "".join(
        f"print('S2S_PHASE {what}', file=sys.stderr, flush=True)\ntime.sleep({s})\n" for what, s in lines)
        + "print('S2S_RESULT {\"schema\": 1, \"verdict\": \"ok\", \"messages\": []}', flush=True)\n")
    m = run_harness_process([sys.executable, str(script)], env={}, cwd=tmp_path, timeout_s=30.0, backend="cuda", kernel="k",
                            variant=None, build_seconds=0.0)
    ps = m.phase_seconds
    assert set(ps) >= {"start", "host.setup", "wait", "probe", "host.probe", "host.inputs", "checks", "host.checks", "timing"}, ps
    for k, want in (("probe", 0.4), ("host.probe", 0.2), ("checks", 0.3), ("host.checks", 0.5), ("wait", 0.3), ("timing", 0.2)):
        assert want - 0.05 <= ps[k] < want + 0.25, (k, ps)


# ---- on PoCL ------------------------------------------------------------------------------------------
@pytest.fixture()
def rowsum(tmp_path: Path) -> Path:
    pytest.importorskip("pyopencl")
    return make_mep(tmp_path / "mep", OCL, ocl_manifest(), {"unrolled": OCL.replace("acc += a[i * n + j];",
                                                                                    "acc = acc + a[i * n + j];")})


@pytest.mark.slow
def test_the_probe_runs_on_the_first_evaluation_only(rowsum: Path, tmp_path: Path) -> None:
    lock = tmp_path / "device.lock"
    first = evaluate(rowsum, None, time=False, harness_lock=lock)
    assert first.verdict == "ok", first.messages
    assert any(m.startswith(CLEAN) for m in first.messages) and "probe" in first.phase_seconds, first.phase_seconds
    assert "host.checks" in first.phase_seconds and "host.inputs" in first.phase_seconds, first.phase_seconds
    rec = _record(rowsum)
    assert rec["state"] == "clean" and rec["seed"] == first.seed
    second = evaluate(rowsum, "unrolled", harness_lock=lock)
    assert second.verdict == "ok", second.messages
    assert "probe" not in second.phase_seconds and "checks" in second.phase_seconds, second.phase_seconds
    assert second.phase_seconds.get("timing", 0.0) > 0.0, second.phase_seconds  # the fill before it is host.inputs
    assert not any(m.startswith(CLEAN) for m in second.messages)  # the harness did not probe
    assert any("not repeated (--no-probe" in m for m in second.messages)
    assert any(m.startswith("bounds probe: recorded by an earlier evaluation of the reference") for m in second.messages)


@pytest.mark.slow
def test_a_faulting_reference_is_refused_for_every_variant_without_running(tmp_path: Path) -> None:
    pytest.importorskip("pyopencl")
    mep = make_mep(tmp_path / "mep", OCL, ocl_manifest(count_a=16), {"v": OCL.replace("acc += a", "acc = acc + a")})
    with pytest.raises(UserError) as err:
        evaluate(mep, "v", time=False)
    assert "params.a.count = 16" in str(err.value) and "reads past the end" in str(err.value)
    assert _record(mep)["state"] == "fault"
    b = build(mep, None)
    m = get_backend("opencl").run(b, time=False)  # the record refuses it: the harness is not started
    assert m.verdict == "runtime-failed" and m.run_seconds == 0.0
    assert m.input_error is not None and "params.a.count = 16" in m.input_error and "reads past the end" in m.input_error
    assert any("recorded by an earlier evaluation of v" in x for x in m.messages)
    with pytest.raises(UserError) as err2:  # and every later evaluation, as the probe itself would
        evaluate(mep, None, time=False)
    assert str(err2.value) == str(err.value)


@pytest.mark.slow
def test_a_changed_manifest_or_reference_is_probed_again(rowsum: Path) -> None:
    assert evaluate(rowsum, None, time=False).verdict == "ok"
    clean_key = _record(rowsum)["key"]
    assert any("not repeated" in m for m in evaluate(rowsum, None, time=False).messages)
    # re-extracted with a count too small: the clean record is another key's, the probe runs and refuses
    save(ocl_manifest(count_a=16), rowsum)
    with pytest.raises(UserError, match="params.a.count = 16: the reference reads past the end"):
        evaluate(rowsum, "unrolled", time=False)
    assert _record(rowsum)["state"] == "fault"
    # fixed again, and the reference edited: probed again, clean under a new key
    save(ocl_manifest(), rowsum)
    (rowsum / "kernel.cl").write_text(OCL + "\n// edited\n")
    m = evaluate(rowsum, None, time=False)
    assert m.verdict == "ok" and any(x.startswith(CLEAN) for x in m.messages), m.messages
    rec = _record(rowsum)
    assert rec["state"] == "clean" and rec["key"] != clean_key


@pytest.mark.slow
def test_a_timing_only_run_neither_probes_nor_records(rowsum: Path) -> None:
    m = evaluate(rowsum, None, check=False)
    assert m.verdict == "ok" and not probe_record.path_of(rowsum).exists()


# ---- CUDA: compile-level (nvcc, no GPU) ---------------------------------------------------------------
AXPY = r'''
#include <cuda_runtime.h>
__global__ void axpy(float a, const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
'''


def axpy_manifest(n: int = 1000):  # type: ignore[no-untyped-def]
    return manifest("axpy", "cuda", "kernel.cu", [
        ParamSpec("a", "float", "scalar", "float", value=2.0),
        ParamSpec("x", "const float *", "in", "float", count=n),
        ParamSpec("y", "float *", "inout", "float", count=n),
        ParamSpec("n", "int", "scalar", "int", value=1000),
    ], (4, 1, 1), (256, 1, 1), repetitions=5, timeout_s=60.0)


@pytest.mark.slow
@needs_nvcc
def test_cuda_probe_key_is_the_references_and_the_harness_takes_no_probe(tmp_path: Path) -> None:
    mep = make_mep(tmp_path / "mep", AXPY, axpy_manifest(), {"fma": AXPY.replace("a * x[i] + y[i]", "fmaf(a, x[i], y[i])")})
    ref, var = build(mep, None), build(mep, "fma")
    assert ref.ok and var.ok, ref.log + var.log
    key = ref.extra["probe_key"]
    assert key and var.extra["probe_key"] == key  # a property of the reference, not of the variant
    save(axpy_manifest(n=512), mep)  # a count changed in mep.toml
    assert build(mep, "fma").extra["probe_key"] not in (key, "")
    save(axpy_manifest(), mep)
    (mep / "kernel.cu").write_text(AXPY + "\n// edited\n")  # the reference changed
    assert build(mep, "fma").extra["probe_key"] not in (key, "")
    (mep / "kernel.cu").write_text(AXPY)
    assert build(mep, "fma").extra["probe_key"] == key
    # the harness takes --no-probe (and says so in its usage); an unknown option is still refused
    exe = ref.run_argv[0]
    usage = subprocess.run([exe, "--help"], capture_output=True, text=True).stderr
    assert "--no-probe" in usage
    assert subprocess.run([exe, "--no-probe-x"], capture_output=True, text=True).returncode == 2
    if shutil.which("nvidia-smi") is None:  # no GPU: the harness parses its options, then fails to find a device
        out = subprocess.run([exe, "--no-probe", "--no-time"], capture_output=True, text=True, cwd=mep).stdout
        res = json.loads(out.split("S2S_RESULT ", 1)[1])
        assert res["verdict"] == "runtime-failed" and res["probe"] is None


# ---- CUDA on a GPU ----------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.skipif(shutil.which("nvidia-smi") is None, reason="no NVIDIA GPU (nvidia-smi not found)")
def test_cuda_probe_once_and_a_fault_refused_on_gpu(tmp_path: Path) -> None:
    lock = tmp_path / "device.lock"
    mep = make_mep(tmp_path / "mep", AXPY, axpy_manifest(), {"fma": AXPY.replace("a * x[i] + y[i]", "fmaf(a, x[i], y[i])")})
    first = evaluate(mep, None, harness_lock=lock)
    assert first.verdict == "ok", first.messages
    assert any(m.startswith(CLEAN) for m in first.messages) and "probe" in first.phase_seconds, first.phase_seconds
    assert _record(mep)["state"] == "clean"
    second = evaluate(mep, "fma", harness_lock=lock)
    assert second.verdict == "ok", second.messages
    assert "probe" not in second.phase_seconds and "timing" in second.phase_seconds, second.phase_seconds
    assert not any(m.startswith(CLEAN) for m in second.messages)
    # x holds fewer elements than the kernel reads: refused, recorded, refused again without running
    save(replace(axpy_manifest(), params=[replace(p, count=900) if p.name == "x" else p for p in axpy_manifest().params]), mep)
    for _ in range(2):
        with pytest.raises(UserError, match="params.x.count = 900: the reference reads past the end"):
            evaluate(mep, "fma", harness_lock=lock)
    assert _record(mep)["state"] == "fault"
