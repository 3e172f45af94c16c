"""contraction-triangle{kgroups=2|4}: groups of threads along z splitting the k slices of a 64-wide triangle tile.

CUDA only: threaded CPU runs of the CUDA text against the original (tests/emulate_cuda_block.py: each block's threads
at once, its barriers real), the reduction shown not vacuous, the launch, the limits (tile 64, shared memory, OpenCL)
as refusals, and the zoo's forms through nvcc. OpenCL is refused: on PoCL 3.1 the text gave wrong sums (after a
block's early exit before its barriers, a test of the group was taken as uniform: group 1's threads stored as group
0's; the same text is right on the threaded CUDA runs), so it is unverified there.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, needs_nvcc
from emulate_cuda import Launch
from emulate_cuda_block import same_outputs
from test_contraction_triangle import KERNELS, SYR2K, SYRK_CU, WIDE

from s2s.lang.edits import LaunchChange, Refused
from s2s.optimize.registry import Applied, make_pass, parse_pipeline, run_pass


def _cuda(src: str) -> str:
    return src.replace("__kernel", "__global__").replace("__global const", "const").replace("__global ", "") \
        .replace("get_global_id(0)", "blockIdx.x * blockDim.x + threadIdx.x").replace("get_global_id(1)", "blockIdx.y * blockDim.y + threadIdx.y")


def _threaded(tmp: Path, kernel: str, n: int, opts: dict[str, str], edit: tuple[str, str] = ("", "")) -> str:
    """The original and the rewrite of KERNELS[kernel] (as CUDA) on the CPU, n rows over 45 terms: "SAME" when every
    buffer matches."""
    src, nk, cols = _cuda(KERNELS[kernel]), 45, WIDE.get(kernel, 1) * n
    out = run_pass(make_pass("contraction-triangle", {"tile": "64", **opts}), src.encode(), "cuda", kernel)
    assert isinstance(out, Applied), out
    after = re.sub(rb"__launch_bounds__\(\d+, \d+\) ", b"", out.text)
    if edit[0]:
        assert edit[0].encode() in after, edit
        after = after.replace(edit[0].encode(), edit[1].encode())
    launches = (Launch((-(-cols // 16), -(-n // 16), 1), (16, 16, 1)), Launch((-(-cols // 64), -(-n // 64), 1), (8, 8, int(opts["kgroups"]))))
    counts = {"a": cols * nk, "b": n * nk, "c": n * cols}
    return same_outputs(tmp, kernel, src.encode(), after, launches, {k: v for k, v in counts.items() if f"float* {k}" in src},
                        {"n": str(n), "nk": str(nk), "alpha": "1.5f", "beta": "-0.5f"}, rtol=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("kernel,n,opts", [
    ("syrk", 150, {"kgroups": "2"}), ("syrk", 150, {"kgroups": "2", "prefetch": "true"}), ("syrk", 67, {"kgroups": "2", "bk": "16"}),
    ("gram", 150, {"kgroups": "2", "prefetch": "true"}), ("lower", 150, {"kgroups": "4"}), ("upper", 100, {"kgroups": "2", "prefetch": "true"}),
    ("syr2k", 150, {"kgroups": "2"})])
def test_matches_the_original_on_threads(tmp_path: Path, kernel: str, n: int, opts: dict[str, str]) -> None:
    """Blocks past the triangle, short edge tiles, a short last slice (45 terms: the groups' last rounds short or
    empty), a triangular output's own start (group 0's), both places of a symmetric one."""
    assert _threaded(tmp_path, kernel, n, opts) == "SAME"


@pytest.mark.slow
def test_the_groups_sums_all_reach_the_store(tmp_path: Path) -> None:
    """Group 0 storing its own sum only, or every group storing (racing) its own, is caught."""
    added = ("acc[m] += red[m * 64 + tid];", "acc[m] += 0.0f * red[m * 64 + tid];")
    racing = ("if (grp == 0) {\n        #pragma unroll\n        for (int m = 0; m < 64; ++m) {",
              "if (1) {\n        #pragma unroll\n        for (int m = 0; m < 64; ++m) {")
    for edit in (added, racing):
        assert _threaded(tmp_path, "syrk", 100, {"kgroups": "2"}, edit) == "DIFF c", edit


def test_launch_bounds_and_refusals() -> None:
    out = run_pass(make_pass("contraction-triangle", {"tile": "64", "kgroups": "2"}), SYRK_CU.encode(), "cuda")
    assert isinstance(out, Applied) and out.launch == LaunchChange((8, 8, 2), "tile-coarse", per_item=64)
    assert out.text.startswith(b"__global__ void __launch_bounds__(128, 4) syrk(") and "2 groups of threads splitting k" in out.note
    four = run_pass(make_pass("contraction-triangle", {"tile": "64", "kgroups": "4"}), SYRK_CU.encode(), "cuda")
    assert isinstance(four, Applied) and four.text.startswith(b"__global__ void __launch_bounds__(256, 2) syrk(")
    for opts, why in (({"kgroups": "2"}, "kgroups needs tile=64"), ({"tile": "64", "kgroups": "3"}, "kgroups must be 1, 2 or 4"),
                      ({"tile": "64", "kgroups": "4", "prefetch": "true"}, "4 k groups need 51200 bytes of shared memory")):
        bad = run_pass(make_pass("contraction-triangle", opts), SYRK_CU.encode(), "cuda")
        assert isinstance(bad, Refused) and why in bad.reason, (opts, bad)
    rank2k = run_pass(make_pass("contraction-triangle", {"tile": "64", "prefetch": "true", "kgroups": "2"}), _cuda(SYR2K).encode(), "cuda")
    assert isinstance(rank2k, Refused) and "2 k groups need 51200 bytes" in rank2k.reason  # four tiles a group, two buffers each
    cl = run_pass(make_pass("contraction-triangle", {"tile": "64", "kgroups": "2"}), KERNELS["syrk"].encode(), "opencl")
    assert isinstance(cl, Refused) and "CUDA only" in cl.reason


ZOO = {"syrk": "", "syrk_lower": "delinearize-2d,", "covar_cols": "inner-loop-threads{block=16x16},", "syr2k": ""}


@pytest.mark.slow
@needs_nvcc
def test_zoo_forms_compile(tmp_path: Path) -> None:
    """Without prefetch no spills (128 registers); the prefetching form of syrk spills a few words at 128 (timed anyway)."""
    files = []
    for name, first in ZOO.items():
        text = (ROOT / "bench" / "zoo" / name / f"{name}.cu").read_bytes()
        for step, opts in parse_pipeline(f"{first}contraction-triangle{{tile=64 kgroups=2}}"):
            got = run_pass(make_pass(step, opts), text, "cuda", name)
            assert isinstance(got, Applied), (name, step, got)
            text = got.text
        assert b"const int grp = threadIdx.z;" in text and text.count(b"__syncthreads();") == 6, name
        files.append(tmp_path / f"{name}.cu")
        files[-1].write_bytes(text)
    nvcc = shutil.which("nvcc")
    assert nvcc is not None
    # -cubin: ptxas's counts of the device code as -c builds it; only the host compiler is not run (session_builds.device_only)
    proc = subprocess.run([nvcc, "-cubin", "-arch=sm_90", "-O3", "-Xptxas", "-v", "-I", str(ROOT / "bench" / "zoo" / "syrk"), *map(str, files),
                           "--output-directory", str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    spills = [line for line in proc.stderr.splitlines() if "spill" in line]
    assert len(spills) >= len(ZOO) and all(" 0 bytes spill stores" in line for line in spills), proc.stderr[-3000:]
