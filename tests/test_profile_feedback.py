"""Profiler feedback: where ncu is on the machine, the original and the winner are profiled once (a recorded ncu
output stands in for the GPU here, served by an `ncu` on PATH that prints it), the profile lands in the history and
the report, and the LLM prompt shows the numbers (bandwidth, FLOP rate, occupancy, limiter, roofline), not only times,
over real HTTP against the local OpenAI-compatible test server."""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from conftest import SAMPLES
from llm_server import RecordedLLM
from mep_util import ParamSpec, manifest

from s2s.mep import profile_ncu
from s2s.mep.history import History, Row
from s2s.optimize.proposers.base import State
from s2s.optimize.proposers.llm import LLMProposer, performance

FIXTURE = Path(__file__).parent / "fixtures" / "ncu" / "matvec_raw.csv"
FAKE_NCU = """#!/bin/sh
# a stand-in for Nsight Compute: records how it was called, prints a recorded output (or fails)
printf '%s\\n' "$*" >> "$FAKE_NCU_LOG"
if [ -n "$FAKE_NCU_FAIL" ]; then echo "==ERROR== the profiler could not attach" >&2; exit 1; fi
cat "$FAKE_NCU_CSV"
"""


@pytest.fixture
def fake_ncu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    ncu = bindir / "ncu"
    ncu.write_text(FAKE_NCU)
    ncu.chmod(ncu.stat().st_mode | stat.S_IXUSR)
    log = tmp_path / "ncu.log"
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_NCU_LOG", str(log))
    monkeypatch.setenv("FAKE_NCU_CSV", str(FIXTURE))
    return log


def test_the_recorded_ncu_output_gives_rates_occupancy_and_limiter() -> None:
    p = profile_ncu.parse(FIXTURE.read_text())
    assert p is not None and p.kernel.startswith("s2s_ref::matvec_rows")
    assert p.time_us == pytest.approx(212.48)
    assert p.dram_gbs == pytest.approx(67.21e6 / 212480)  # 316 GB/s
    assert p.gflops == pytest.approx((4096 + 2 * 16_777_216) / 212480)  # 158 GFLOP/s, FMAs counted twice
    assert (p.occupancy_pct, p.sm_pct, p.memory_pct, p.limiter) == (11.93, 8.42, 41.71, "latency")


PARAMS = [ParamSpec("a", "const float *", "in", "float", count=4096 * 4096), ParamSpec("x", "const float *", "in", "float", count=4096),
          ParamSpec("y", "float *", "out", "float", count=4096), ParamSpec("n", "int", "scalar", "int", value=4096)]
KERNEL = b"__global__ void matvec_rows(const float* a, const float* x, float* y, int n)\n{ int i = blockIdx.x * blockDim.x + threadIdx.x;\n" \
         b"  if (i < n) { float s = 0; for (int k = 0; k < n; k++) s += a[i * n + k] * x[k]; y[i] = s; } }\n"
ANSWER = "```cuda\n" + KERNEL.decode() + "```"


def _row(cid: str, status: str, speedup: float | None, ref: float | None, var: float | None) -> Row:
    return Row(cid, 1, f"pass:{cid}", None, cid, None, status, speedup, ref, var, 0, {"messages": []})


def test_the_llm_prompt_shows_the_profile_and_the_roofline(monkeypatch: pytest.MonkeyPatch) -> None:
    prof = profile_ncu.parse(FIXTURE.read_text())
    m = manifest("matvec_rows", "cuda", "kernel.cu", PARAMS, (16, 1, 1), (256, 1, 1))
    state = State(manifest=m, original=KERNEL, kernel="matvec_rows", dialect="cuda", facts=None, device="NVIDIA H200",
                  rows=[_row("v1", "ok", 1.5, 560.0, 373.3), _row("v2", "wrong-output", None, None, None),
                        _row("v3", "ok", 0.9, 564.0, 626.7)], feedback={"original": prof})
    with RecordedLLM([ANSWER]) as srv:
        monkeypatch.setenv("S2S_LLM_BASE_URL", srv.base_url)
        monkeypatch.setenv("S2S_LLM_MODEL", "recorded")
        monkeypatch.setenv("S2S_LLM_API_KEY", "test")
        proposer = LLMProposer(candidates_per_round=1)
        cands = proposer.propose(state)
        prompt = srv.requests[0]["messages"][-1]["content"]
    assert len(cands) == 1 and cands[0].origin == "llm:recorded"
    assert "Performance feedback" in prompt
    assert "- the original: 562.00 µs per launch (median over 2 timed evaluations); the fastest verified variant so far: " \
           "373.30 µs (1.50x, pass:v1)" in prompt
    floor = (4096 * 4096 + 2 * 4096) * 4 / 4.8e6  # µs: every buffer once at the datasheet's 4.8 TB/s
    assert f"the memory floor on NVIDIA H200 is {floor:.2f} µs, so the original reaches {floor / 562.0:.1%} of it" in prompt
    assert "- Nsight Compute, the original: 212.48 µs; DRAM 316 GB/s (7% of the device's 4800 GB/s); 158 GFLOP/s FP32; " \
           "achieved occupancy 12%; compute 8% and memory 42% of peak; neither unit is busy (latency-limited)" in prompt
    assert "- pass:v1: ok (1.50x, 373.30 µs)" in prompt  # the attempts carry their times too
    # before anything was measured or profiled, there is no feedback section at all
    bare = State(manifest=m, original=KERNEL, kernel="matvec_rows", dialect="cuda", facts=None)
    assert performance(bare) == []


@pytest.fixture
def ocl_mep(tmp_path: Path) -> Path:
    from s2s.extract.mep_writer import make_mep

    out = tmp_path / "mep-mv"
    make_mep(str(SAMPLES / "ocl_solver"), "matvec", str(out))
    return out


@pytest.mark.slow
def test_feedback_profiles_once_and_records_failures(ocl_mep: Path, fake_ncu: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    h = History(ocl_mep / "history.sqlite")
    got = profile_ncu.feedback(ocl_mep, h, None)
    again = profile_ncu.feedback(ocl_mep, h, None)  # recorded: ncu is not run twice
    assert got is not None and got == again and got.dram_gbs == pytest.approx(67.21e6 / 212480)
    calls = fake_ncu.read_text().splitlines()
    assert len(calls) == 1
    assert "--clock-control none" in calls[0] and "--launch-count 1" in calls[0] and "regex:^s2s_ref::" in calls[0]
    assert "--no-time" in calls[0] and "--input-sets 1" in calls[0]
    assert json.loads(h.meta("ncu:original") or "{}")["limiter"] == "latency"
    monkeypatch.setenv("FAKE_NCU_FAIL", "1")
    assert profile_ncu.feedback(ocl_mep, h, "v9") is None  # no such variant: the build fails, and that is recorded
    assert profile_ncu.feedback(ocl_mep, h, None) is not None
    (ocl_mep / "variants" / "v1").mkdir(parents=True)
    (ocl_mep / "variants" / "v1" / "kernel.cl").write_bytes((ocl_mep / "kernel.cl").read_bytes())
    assert profile_ncu.feedback(ocl_mep, h, "v1") is None  # ncu failed
    err = json.loads(h.meta("ncu:v1") or "{}")
    assert "no profile in ncu's output" in err["error"] and "could not attach" in err["error"]
    assert profile_ncu.feedback(ocl_mep, h, "v1") is None and len(fake_ncu.read_text().splitlines()) == 2  # not retried
    h.close()


GOOD = ("```c\n__kernel void matvec(__global const REAL* A, __global const REAL* x, __global REAL* y, const int n)\n{\n"
        "    int i = get_global_id(0);\n    if (i >= n) return;\n    REAL s0 = 0, s1 = 0;\n    int k = 0;\n"
        "    for (; k + 1 < n; k += 2) { s0 += A[IDX(i, k, n)] * x[k]; s1 += A[IDX(i, k + 1, n)] * x[k + 1]; }\n"
        "    for (; k < n; ++k) s0 += A[IDX(i, k, n)] * x[k];\n    y[i] = s0 + s1;\n}\n```\n"
        "```json\n{\"grid\": [256, 1, 1], \"block\": [64, 1, 1]}\n```")


@pytest.mark.slow
def test_optimize_profiles_the_original_feeds_the_prompt_and_records_predictions(
        ocl_mep: Path, fake_ncu: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from s2s.optimize.loop import Options, optimize

    with RecordedLLM([GOOD, "no code in this answer"]) as srv:
        monkeypatch.setenv("S2S_LLM_BASE_URL", srv.base_url)
        monkeypatch.setenv("S2S_LLM_MODEL", "recorded")
        monkeypatch.setenv("S2S_LLM_API_KEY", "test")
        out = optimize(ocl_mep, Options(proposer="llm", rounds=1, max_evals=2, use_patterns=False, jobs=1,
                                            profile=True))
        prompt = srv.requests[0]["messages"][-1]["content"]
    assert "- Nsight Compute, the original: 212.48 µs; DRAM 316 GB/s" in prompt and "latency-limited" in prompt
    calls = fake_ncu.read_text().splitlines()
    assert "regex:^s2s_ref::" in calls[0]  # the original, before the first prompt
    h = History(ocl_mep / "history.sqlite")
    rows = h.rows()
    assert h.meta("ncu:original") is not None and json.loads(h.meta("cost_model") or "{}")["predicted_us"] is None
    if out.best_id is not None:  # a winner above PoCL's noise band is profiled once too
        assert h.meta(f"ncu:{out.best_id}") is not None and "regex:^s2s_var::" in calls[-1]
    else:
        assert len(calls) == 1
    h.close()
    llm = [r for r in rows if r.origin == "llm:recorded"]
    assert len(llm) == 1 and llm[0].status == "ok"
    # its launch sets a local size, so the model predicts it (the original's NULL local size it cannot)
    assert llm[0].predicted_us is not None and llm[0].prediction and llm[0].prediction["device"] == "NVIDIA H200"


@pytest.mark.slow
def test_an_ncu_past_its_time_is_ended_with_everything_it_started(ocl_mep: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """ncu that hangs (here: a child of its own in a new session, and itself asleep) is killed whole at its timeout:
    no process of it outlives the call (it ran through subprocess.run, which killed ncu alone)."""
    import time

    bindir = tmp_path / "hang"
    bindir.mkdir()
    pids = tmp_path / "pids"
    (bindir / "ncu").write_text(f"#!/bin/sh\nsetsid sleep 60 &\necho $! >> {pids}\necho $$ >> {pids}\nexec sleep 60\n")
    (bindir / "ncu").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    got = profile_ncu.profile(ocl_mep, None, timeout_s=2.0)
    assert got == {"error": "ncu ran past 2 s"}
    time.sleep(0.2)
    for pid in map(int, pids.read_text().split()):
        assert not os.path.exists(f"/proc/{pid}") or "Z" in open(f"/proc/{pid}/stat").read().split()[2], pid
