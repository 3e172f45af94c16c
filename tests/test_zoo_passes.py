"""The passes fixed from the zoo audit (bench/zoo_audit.py): PoCL runs against the original, and the audit itself."""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import ROOT
from mep_util import ParamSpec, make_mep, manifest

from s2s.lang.kernel_facts import kernel_facts
from s2s.optimize.candidate import Candidate

BATCHED_GEMV_CL = """\
#define D 12
__kernel void bgemv(__global const float* mats, __global const float* xs, __global float* ys, const int nbatch)
{
    int b = get_global_id(0);
    if (b >= nbatch)
        return;
    for (int r = 0; r < D; r++) {
        float s = 0.0f;
        for (int c = 0; c < D; c++)
            s += mats[(b * D + r) * D + c] * xs[b * D + c];
        ys[b * D + r] = s;
    }
}
"""
NB, D = 300, 12


def _state(mep: Path):  # type: ignore[no-untyped-def]
    from s2s.mep.manifest import load
    from s2s.optimize.proposers.base import State

    params = [ParamSpec("mats", "__global const float*", "in", "float", count=NB * D * D, space="global"),
              ParamSpec("xs", "__global const float*", "in", "float", count=NB * D, space="global"),
              ParamSpec("ys", "__global float*", "out", "float", count=NB * D, space="global"),
              ParamSpec("nbatch", "const int", "scalar", "int", value=NB)]
    make_mep(mep, BATCHED_GEMV_CL, manifest("bgemv", "opencl", "kernel.cl", params, (320, 1, 1), (64, 1, 1), repetitions=3,
                                            warmup=1, timeout_s=60.0))
    src = BATCHED_GEMV_CL.encode()
    return State(manifest=load(mep), original=src, kernel="bgemv", dialect="opencl", facts=kernel_facts(src, "opencl", "bgemv"))


def _evaluate(mep: Path, state, cand: Candidate):  # type: ignore[no-untyped-def]
    from s2s.mep.evaluate import evaluate
    from s2s.optimize.loop import write_variant

    write_variant(mep, state.manifest.kernel_file, cand)
    return evaluate(mep, cand.id)


@pytest.mark.slow
def test_inner_loop_threads_with_its_own_y_extent_on_pocl(tmp_path: Path) -> None:
    """A loop over a constant range (D rows per batch) becomes the y axis with an `extent:` launch: the rows are as many
    as the loop's trip count, not as the batches; the result matches the original, and without the loop's bound in
    the guard the extra y threads (16 rows of threads for 12 rows) write past the output: caught."""
    pytest.importorskip("pyopencl")
    from s2s.optimize.proposers.builtin import apply_pipeline

    state = _state(tmp_path / "mep")
    cand = apply_pipeline("inner-loop-threads", state)
    assert isinstance(cand, Candidate), cand
    assert cand.launch is not None and cand.launch_rules == ("extent:nbatch|12",)
    assert cand.launch.grid[0] >= NB and cand.launch.grid[1] == 16 and cand.launch.block[:2] == (32, 8)
    m = _evaluate(tmp_path / "mep", state, cand)
    assert m.verdict == "ok", (m.verdict, m.messages)
    broken = cand.source.replace(b" && r < D", b"")
    assert broken != cand.source
    assert _evaluate(tmp_path / "mep", state, replace(cand, source=broken)).verdict != "ok"


@pytest.mark.slow
def test_zoo_audit_lists_candidates_and_refusals(tmp_path: Path) -> None:
    """The audit's view of one zoo kernel: the CSR SpMV gets a warp per row (the row guard wraps its loop), every
    pass that gives nothing says why, and the markdown names both."""
    sys.path.insert(0, str(ROOT / "bench"))
    import zoo_audit
    from zoo_catalog import BY_NAME

    row = zoo_audit.audit_one(BY_NAME["spmv_csr"], tmp_path, compile_=False, full=False)
    pipelines = [e["pipeline"] for e in row["round1"]]
    assert "warp-rows{lanes=32}" in pipelines and "split-reduction" in pipelines
    assert row["refusals"]["smem-transpose{tile=32}"].startswith("smem-transpose: needs a 2-D thread mapping")
    assert all(step not in row["refusals"] for step in pipelines)
    assert row["round2"] and all("," in p for p in row["round2"])
    md = zoo_audit.markdown({"date": "d", "commit": "c", "compile_check": "none", "kernels": [row]})
    assert "| spmv_csr | `" in md and "smem-transpose: needs a 2-D thread mapping" in md
