"""A kernel named `kernel` (a development application's, and common in small programs): the harness's accessor
`s2s_types::kernel()` returned `&kernel`, its own address ("return value type does not match the function type"), so
the MEP never built. Fixture of our own, at file scope and in a namespace."""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ROOT, needs_nvcc, run_cli

FIXTURE = ROOT / "tests" / "fixtures" / "kernel_named_kernel"


@pytest.mark.slow
@needs_nvcc
@pytest.mark.parametrize("kernel", ["app.cu:kernel@5", "phys::kernel"])
def test_a_kernel_named_kernel_builds(kernel: str, tmp_path: Path) -> None:
    out = tmp_path / "mep"
    proc = run_cli("extract", str(FIXTURE), "--kernel", kernel, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    text = (out / "mep.toml").read_text()  # what extraction could not tell is not this test's matter
    (out / "mep.toml").write_text(text.replace('count = "FILL-IN"', "count = 1024").replace('value = "FILL-IN"', "value = 1024"))
    run = run_cli("run", str(out), "--no-time")
    blob = " ".join((run.stdout + run.stderr).split())
    assert "does not build" not in blob and "does not match the function type" not in blob, blob[-3000:]
    if run.returncode != 0:  # no GPU here: the MEP builds, and says so
        assert "the MEP builds here" in blob, blob[-3000:]
