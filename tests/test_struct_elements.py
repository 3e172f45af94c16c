"""Buffers of structs the harness must fill, check and compare: a class template's instance (`Pair<float>*` was read as
the element type "Pair float", which named nothing) and an over-aligned struct mep.toml does not list (`struct
alignas(16) Wide`: the harness stopped with a static assertion, as three held-out kernels did). Fixture of our own."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import ROOT, needs_nvcc, run_cli

from s2s.lang.params import make_param

FIXTURE = ROOT / "tests" / "fixtures" / "struct_elements"


def test_a_class_template_instance_keeps_its_arguments_as_the_element_type() -> None:
    assert make_param("Pair<float>* q", "q").base_type == "Pair<float>"
    assert make_param("const geom::Vec<double, 3>* __restrict__ v", "v").base_type == "geom::Vec<double, 3>"
    assert make_param("const float* __restrict__ x", "x").base_type == "float"


@pytest.mark.slow
@needs_nvcc
@pytest.mark.parametrize("kernel", ["aos", "nested", "tpair", "wide"])
def test_struct_element_buffers_build(kernel: str, tmp_path: Path) -> None:
    out = tmp_path / "mep"
    proc = run_cli("extract", str(FIXTURE), "--kernel", f"k.cu:{kernel}", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    text = (out / "mep.toml").read_text()
    (out / "mep.toml").write_text(re.sub(r'count = "FILL-IN"', "count = 256", text))
    run = run_cli("run", str(out), "--no-time")
    blob = " ".join((run.stdout + run.stderr).split())
    assert "static assertion" not in blob and "does not build" not in blob and "Pair float" not in blob, blob[-3000:]
    if run.returncode != 0:  # no GPU here: the MEP builds, and says so
        assert "the MEP builds here" in blob, blob[-3000:]
