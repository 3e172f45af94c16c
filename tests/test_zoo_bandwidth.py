"""The zoo's bandwidth-bound kernels (issue 15: every one at >= 70% of the copy bandwidth): what the passes make of them.

No GPU here: the rewrites are checked for the property that should move them towards the copy bandwidth (loads that
can be in flight together), and compiled with nvcc."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT

from s2s.optimize.registry import Applied, build_pipeline, run_pass

ZOO = ROOT / "bench" / "zoo"


def _apply(name: str, pipeline: str) -> Applied:
    data = (ZOO / name / f"{name}.cu").read_bytes()
    out: Applied | None = None
    for p in build_pipeline(pipeline):
        res = run_pass(p, data, "cuda", name)
        assert isinstance(res, Applied), (pipeline, res)
        out, data = res, res.text
    assert out is not None
    return Applied(data, out.launch, out.note)


@pytest.mark.parametrize("name,pipeline", [("transpose_2d", "smem-transpose{tile=32 rows=8}"),
                                           ("transpose_gather", "delinearize-2d,smem-transpose{tile=32 rows=8}")])
def test_tiled_transpose_with_fixed_rows_unrolls_its_loads(name: str, pipeline: str) -> None:
    """With the block fixed at 32x8 each thread copies 4 elements per phase in a loop of constant trip count (4 loads in
    flight per thread); the blockDim.y-strided loop of the one-thread-per-element form is left for rows=0."""
    out = _apply(name, pipeline)
    body = out.text.decode()
    body = body[body.index("__global__"):body.index("int main")]
    assert body.count("#pragma unroll\n    for (int k = 0; k < 32; k += 8) {") == 2, body
    assert "blockDim" not in body
    assert out.launch is not None and out.launch.resolve((256, 1024, 1), (32, 8, 1)) == ((256, 256, 1), (32, 8, 1))
    plain = _apply("transpose_2d", "smem-transpose{tile=32}").text.decode()
    assert re.search(r"ty \+= blockDim\.y", plain) and "#pragma unroll" not in plain


@pytest.mark.slow
def test_zoo_transposes_compile(tmp_path: Path) -> None:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("no nvcc")
    files = []
    for name, pipeline in (("transpose_2d", "smem-transpose{tile=32 rows=8}"),
                           ("transpose_gather", "delinearize-2d,smem-transpose{tile=32 rows=8}")):
        files.append(tmp_path / f"{name}.cu")
        files[-1].write_bytes(_apply(name, pipeline).text.replace(b'"../zoo.h"', f'"{ZOO / "zoo.h"}"'.encode()))
    proc = subprocess.run([nvcc, "-c", "-arch=sm_90", "-Werror", "all-warnings", *map(str, files), "--output-directory",
                           str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
