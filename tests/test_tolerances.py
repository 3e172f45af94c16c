"""Per-output tolerances: `rtol`/`atol` on a [[params]] entry hold that output to them, the others to [check]."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli
from mep_util import ParamSpec, make_mep, manifest

from s2s.base.errors import UserError
from s2s.mep.backends.opencl import OpenCLBackend
from s2s.mep.evaluate import evaluate
from s2s.mep.manifest import dumps, load

N = 1000
TWO_OUTPUTS = r'''
__kernel void two(__global const float* x, __global float* a, __global float* b, const int n)
{
    int i = get_global_id(0);
    if (i < n) {
        a[i] = 2.0f * x[i];
        b[i] = 3.0f * x[i];
    }
}
'''
B_ONE_PERCENT_OFF = TWO_OUTPUTS.replace("b[i] = 3.0f * x[i];", "b[i] = 3.03f * x[i];")


def two_outputs(b_rtol: float | None = None):  # type: ignore[no-untyped-def]
    return manifest("two", "opencl", "kernel.cl", [
        ParamSpec("x", "__global const float*", "in", "float", count=N, space="global", low=0.5, high=2.0),
        ParamSpec("a", "__global float*", "out", "float", count=N, space="global"),
        ParamSpec("b", "__global float*", "out", "float", count=N, space="global", rtol=b_rtol),
        ParamSpec("n", "const int", "scalar", "int", value=N),
    ], (N, 1, 1), (0, 0, 0), repetitions=3, warmup=1, timeout_s=30.0)


# ---- mep.toml --------------------------------------------------------------------------------------
def test_per_output_tolerances_round_trip(tmp_path: Path) -> None:
    m = two_outputs()
    m.params[1] = ParamSpec("a", "__global float*", "out", "float", count=N, space="global", atol=1e-6)
    m.params[2] = ParamSpec("b", "__global float*", "out", "float", count=N, space="global", rtol=0.02,
                            tol_from="float sum by atomics from 16777216 threads")
    mep = make_mep(tmp_path / "mep", TWO_OUTPUTS, m)
    back = load(mep)
    assert back == m
    assert dumps(back) == (mep / "mep.toml").read_text()
    assert [back.tolerance(p) for p in back.params[1:3]] == [(1e-3, 1e-6), (0.02, 1e-4)]
    entries = (mep / "mep.toml").read_text().split("[[params]]")
    assert "rtol" not in entries[1] and "tol_from" not in entries[2]  # only where set
    assert 'rtol = 0.02\ntol_from = "float sum by atomics from 16777216 threads"' in entries[3]


@pytest.mark.parametrize(("value", "words"), [("-0.02", "-0.02 is negative"), ('"2%"', "'2%' is not a number")])
def test_bad_per_output_rtol_names_the_entry(tmp_path: Path, value: str, words: str) -> None:
    mep = make_mep(tmp_path / "mep", TWO_OUTPUTS, two_outputs(b_rtol=0.02))
    text = (mep / "mep.toml").read_text()
    (mep / "mep.toml").write_text(text.replace("rtol = 0.02", f"rtol = {value}"))
    line = text.splitlines().index("rtol = 0.02") + 1
    with pytest.raises(UserError) as err:
        evaluate(mep, None, time=False)
    assert err.value.message == f"params.b.rtol: {words}" and err.value.line == line
    r = run_cli("run", str(mep), "--no-time")
    assert r.returncode == 2, r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "params.b.rtol" in lines[0] and f"mep.toml:{line}" in lines[0]


def test_tolerance_on_an_input_is_refused(tmp_path: Path) -> None:
    m = two_outputs()
    m.params[0] = ParamSpec("x", "__global const float*", "in", "float", count=N, space="global", rtol=0.1)
    mep = make_mep(tmp_path / "mep", TWO_OUTPUTS, m)
    with pytest.raises(UserError, match=r"^params\.x\.rtol: a parameter of role in is not compared"):
        evaluate(mep, None, time=False)


# ---- the runners ------------------------------------------------------------------------------------
@pytest.mark.slow
def test_each_output_is_held_to_its_own_tolerance_on_opencl(tmp_path: Path) -> None:
    pytest.importorskip("pyopencl")
    mep = make_mep(tmp_path / "mep", TWO_OUTPUTS, two_outputs(b_rtol=0.02), {"off": B_ONE_PERCENT_OFF})
    m = evaluate(mep, "off", time=False)
    assert m.verdict == "ok", (m.messages, m.outputs)
    out = {o.name: o for o in m.outputs}
    assert 0.009 < out["b"].max_rel_err < 0.011 and out["a"].max_rel_err == 0.0
    assert (out["a"].rtol, out["b"].rtol, out["b"].atol, out["x"].rtol) == (1e-3, 0.02, 1e-4, None)

    text = (mep / "mep.toml").read_text()
    (mep / "mep.toml").write_text(text.replace("rtol = 0.02", "rtol = 0.001"))
    r = run_cli("run", str(mep), "--variant", "off", "--no-time", "--json")
    assert r.returncode == 1, r.stderr
    obj = json.loads(r.stdout)
    out_json = {o["name"]: o for o in obj["outputs"]}
    assert obj["verdict"] == "wrong-output"
    assert not out_json["b"]["ok"] and "differ beyond tolerance" in out_json["b"]["message"] and out_json["b"]["rtol"] == 0.001
    assert out_json["a"]["ok"] and out_json["x"]["ok"] and out_json["x"]["rtol"] is None
    table = run_cli("run", str(mep), "--variant", "off", "--no-time")
    assert table.returncode == 1 and "rtol" in table.stdout and "0.001" in table.stdout

    # the runner's own --rtol holds every output to it
    runner = subprocess.run([sys.executable, "-m", "s2s.mep.backends.opencl_runner", str(mep), "--variant", "off", "--no-time",
                             "--rtol", "0.05"], capture_output=True, text=True, env=OpenCLBackend()._env(), timeout=300)
    res = json.loads(runner.stdout.split("S2S_RESULT ", 1)[1])
    assert res["verdict"] == "ok" and {c["name"]: c["rtol"] for c in res["checks"]} == {"x": None, "a": 0.05, "b": 0.05}
