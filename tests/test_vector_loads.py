"""vector-loads on the OpenCL sample's matvec, run for real on PoCL: the rewrite must verify."""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import SAMPLES

from s2s.extract.mep_writer import make_mep
from s2s.lang.kernel_facts import kernel_facts
from s2s.mep.evaluate import evaluate
from s2s.mep.manifest import load
from s2s.optimize.loop import write_variant
from s2s.optimize.proposers.base import State
from s2s.optimize.proposers.builtin import apply_pipeline
from s2s.passes.reductions._unit_stride import unit_stride


def test_unit_stride_is_checked_numerically() -> None:
    assert unit_stride("((i) * (n) + (k))", "k") and unit_stride("k + 3", "k")
    assert not unit_stride("k * n + i", "k") and not unit_stride("2 * k", "k")


@pytest.mark.slow
def test_matvec_with_vector_loads_verifies_on_pocl(tmp_path: Path) -> None:
    mep = tmp_path / "mv"
    make_mep(str(SAMPLES / "ocl_solver"), "matvec", str(mep), overrides={"PROB_N": "203"})  # not a multiple of 4 or 8
    m = load(mep)
    src = (mep / m.kernel_file).read_bytes()
    state = State(manifest=m, original=src, kernel="matvec", dialect="opencl", facts=kernel_facts(src, "opencl", "matvec"))
    for width in (4, 8):
        cand = apply_pipeline(f"vector-loads{{width={width}}}", state)
        assert not isinstance(cand, str), cand
        write_variant(mep, m.kernel_file, cand)
        result = evaluate(mep, cand.id)
        assert result.verdict == "ok", result.messages
        assert all(o.ok for o in result.outputs)
