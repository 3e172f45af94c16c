"""The target device (issue 27 item 1): one description (s2s/lang/target_device.py) read from the MEP's measurements
(s2s/optimize/target.py), the H200 only when nothing is known; passes size their grids from it, never from constants
of their own."""
from __future__ import annotations

import re
from pathlib import Path

from mep_util import ParamSpec, make_mep, manifest

from s2s.lang.kernel_facts import kernel_facts
from s2s.lang.target_device import H200, device_named
from s2s.mep.history import History
from s2s.mep.roofline import Work, measured_roof, record
from s2s.optimize.candidate import Candidate
from s2s.optimize.registry import Applied, build_pipeline, run_pass
from s2s.optimize.target import target_of

SUMSQ = """\
__global__ void sumsq(const float* in, float* total, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(total, in[i] * in[i]);
}
"""
N = 1 << 24
A100 = "NVIDIA A100-SXM4-80GB"


def test_a_device_is_described_by_its_name() -> None:
    a100 = device_named(A100)
    assert (a100.sms, a100.thread_slots, a100.bandwidth) == (108, 108 * 2048, 2.039e12)
    assert "A100" in a100.source
    unknown = device_named("pthread-cpu-0")
    assert unknown.name == "pthread-cpu-0" and unknown.sms == H200.sms and "not a device s2s describes" in unknown.source
    assert device_named("NVIDIA H200", 4.0e12).copy_bandwidth == 4.0e12


def test_a_launch_rule_follows_the_device() -> None:
    """atomic-accumulate gives its grid-stride sum a grid that fills the device: every thread slot of an H200 (132 SMs x
    2048), of an A100's 108 SMs on an A100."""
    step = build_pipeline("atomic-accumulate")[0]
    on_h200 = run_pass(step, SUMSQ.encode(), "cuda", "sumsq")
    on_a100 = run_pass(step, SUMSQ.encode(), "cuda", "sumsq", device_named(A100))
    assert isinstance(on_h200, Applied) and isinstance(on_a100, Applied)
    assert on_h200.launch is not None and on_h200.launch.grid_from == "extent:270336"
    assert on_a100.launch is not None and on_a100.launch.grid_from == "extent:221184"


def _state(tmp: Path):  # type: ignore[no-untyped-def]
    from s2s.mep.manifest import load
    from s2s.optimize.proposers.base import State

    params = [ParamSpec("in", "const float*", "in", "float", count=N, space="global"),
              ParamSpec("total", "float*", "inout", "float", count=1, space="global"),
              ParamSpec("n", "int", "scalar", "int", value=N)]
    mep = make_mep(tmp / "sumsq", SUMSQ, manifest("sumsq", "cuda", "kernel.cu", params, (N // 256, 1, 1), (256, 1, 1)))
    return mep, State(manifest=load(mep), original=SUMSQ.encode(), kernel="sumsq", dialect="cuda",
                      facts=kernel_facts(SUMSQ.encode(), "cuda", "sumsq"), patterns=[])


def test_the_mep_measured_device_sets_the_grid(tmp_path: Path) -> None:
    """The MEP's history says its evaluations ran on an A100 (and the copy bandwidth a benchmark measured there): the
    built-in proposer's candidate launches 864 blocks of 256 (108 x 2048 threads), not an H200's 1056."""
    from s2s.optimize.proposers.builtin import apply_pipeline

    mep, state = _state(tmp_path)
    fresh = apply_pipeline("atomic-accumulate", state)
    assert isinstance(fresh, Candidate) and fresh.launch is not None and fresh.launch.grid == (1056, 1, 1)

    hist = History(mep / "history.sqlite")
    try:
        assert target_of(hist) == H200  # nothing measured yet
        hist.add("v1", 1, "pass:restrict-const", None, "sha", None)
        hist.finish("v1", "ok", {"device": A100, "verdict": "ok"})
        roof = measured_roof("NVIDIA A100", 1790.0)
        assert roof is not None
        record(hist, Work(4.0 * N, 2.0 * N), roof, "stream copy")
        state.target = target_of(hist)
    finally:
        hist.close()
    assert state.target.name == "NVIDIA A100" and state.target.copy_bandwidth == 1790.0e9
    moved = apply_pipeline("atomic-accumulate", state)
    assert isinstance(moved, Candidate) and moved.launch is not None and moved.launch.grid == (864, 1, 1)


def test_no_pass_module_holds_device_constants() -> None:
    """Passes read `facts.device`; none builds a device description or imports the default."""
    passes = Path(__file__).resolve().parents[1] / "s2s" / "passes"
    for path in sorted(passes.rglob("*.py")):
        text = path.read_text()
        assert not re.search(r"\bTargetDevice\(|\bDevice\(\)|import[^\n]*\bH200\b|target_device import", text), path.name
