"""allpairs-lanes: smem-allpairs' tiled pair loop shared by `lanes` threads a body, partial sums added by shuffles
(issue 15: the zoo's n-body kernels ran latency-limited at 12% occupancy, one thread a body)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import ROOT, needs_nvcc
from session_builds import nvcc_checks

from s2s.lang.edits import Refused
from s2s.optimize.registry import Applied, make_pass, run_pass

POTENTIAL = """\
__global__ void pot(const float* x, const float* m, float* phi, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float p = 0.0f, q = 0.0f;
    for (int j = 0; j < n; ++j) {
        if (j == i) continue;
        float d = x[j] - x[i];
        p -= m[j] / (d * d + 0.01f);
        q += d;
    }
    phi[i] = p + q;
}
"""


def _tiled(src: str, tile: int = 256) -> bytes:
    out = run_pass(make_pass("smem-allpairs", {"tile": str(tile)}), src.encode(), "cuda", "pot")
    assert isinstance(out, Applied), out
    return out.text


def test_lanes_share_each_body_and_sum_by_shuffles() -> None:
    out = run_pass(make_pass("allpairs-lanes", {"lanes": "8"}), _tiled(POTENTIAL), "cuda", "pot")
    assert isinstance(out, Applied), out
    text = out.text.decode()
    assert "int i = (blockIdx.x * blockDim.x + threadIdx.x) / 8;\n    const int sub = threadIdx.x % 8;" in text
    assert "for (int j = t + sub; j < n && j - t < 256; j += 8) {" in text
    assert text.count("__shfl_down_sync(0xffffffffu, p, off, 8)") == 1 and text.count("__shfl_down_sync(0xffffffffu, q, off, 8)") == 1
    assert text.index("__shfl_down_sync") > text.rindex("__syncthreads")  # after the last tile, before the write
    assert "if (live && sub == 0) {" in text
    assert out.launch is not None and out.launch.resolve((128, 1, 1), (256, 1, 1)) == ((1024, 1, 1), (256, 1, 1))


@pytest.mark.parametrize(("change", "why"), [
    (("q += d;", "q += d; phi[j] = d;"), "may write only its own locals"),
    (("q += d;", "q += d; if (d > 1.0f) break;"), "leave only by its end"),
    (("float p = 0.0f, q = 0.0f;", "float p = 0.0f, q = 1.0f;"), "start from 0"),
    (("q += d;", "q = q + d;"), "may write only its own locals"),
])
def test_refusals(change: tuple[str, str], why: str) -> None:
    tiled = _tiled(POTENTIAL).decode()
    assert change[0] in tiled
    out = run_pass(make_pass("allpairs-lanes"), tiled.replace(*change).encode(), "cuda", "pot")  # what smem-allpairs would refuse
    assert isinstance(out, Refused) and why in out.reason, out


def test_needs_the_tiled_form_and_a_tile_the_lanes_divide() -> None:
    out = run_pass(make_pass("allpairs-lanes"), POTENTIAL.encode(), "cuda", "pot")
    assert isinstance(out, Refused) and "smem-allpairs" in out.reason
    out = run_pass(make_pass("allpairs-lanes", {"lanes": "3"}), _tiled(POTENTIAL), "cuda", "pot")
    assert isinstance(out, Refused) and "power of two" in out.reason
    assert isinstance(run_pass(make_pass("allpairs-lanes", {"lanes": "32"}), _tiled(POTENTIAL, 128), "cuda", "pot"), Applied)


@pytest.mark.slow
@needs_nvcc
def test_zoo_nbody_forms_compile_for_sm90(tmp_path: Path) -> None:
    """The zoo's nbody_aos and nbody_soa (with fast-math) through smem-allpairs and allpairs-lanes, built for sm_90."""
    from test_fast_math import _zoo_state

    from s2s.optimize.candidate import Candidate
    from s2s.optimize.proposers.builtin import apply_pipeline

    nvcc = shutil.which("nvcc")
    assert nvcc is not None
    files: dict[str, list[Path]] = {}
    pipelines: dict[str, str] = {}
    for n, (kernel, pipeline) in enumerate([("nbody_aos", "smem-allpairs{tile=256},allpairs-lanes{lanes=4}"),
                                            ("nbody_soa", "smem-allpairs{tile=256},fast-math,allpairs-lanes{lanes=8}")]):
        c = apply_pipeline(pipeline, _zoo_state(kernel, tmp_path))
        assert isinstance(c, Candidate), c
        assert c.launch is not None and c.launch.block == (256, 1, 1) and c.launch.grid[0] * 256 == 32768 * int(pipeline[-2])
        f = tmp_path / f"v{n}.cu"
        f.write_bytes(c.source)
        files.setdefault(kernel, []).append(f)
        pipelines[f.name] = pipeline
    for kernel, fs in files.items():  # one check per zoo kernel's include directory; a failure names the v{n}.cu
        r = nvcc_checks(nvcc, ["-arch=sm_90", "-c", "-I", str(ROOT / "bench" / "zoo" / kernel)], fs, tmp_path, 900)
        assert r.returncode == 0, f"{pipelines}: {r.stderr[-2000:]}"
