"""block-scan-shuffle (issue 15: scan_blocks at 28% of the copy bandwidth, no candidate): Hillis-Steele block scans in
shared memory become warp-shuffle scans; run threaded on the CPU (tests/emulate_cuda_block.py: barriers, shuffles,
shared memory) against the originals, with mutants that must fail. Golden files: tests/golden/passes/block_scan_shuffle_*."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import ROOT
from emulate_cuda import Launch
from emulate_cuda_block import same_outputs

from s2s.optimize.registry import Applied, make_pass, run_pass

ZOO = ROOT / "bench" / "zoo"
GOLDEN = ROOT / "tests" / "golden" / "passes"


def _input(golden: str) -> bytes:
    text = (GOLDEN / f"block_scan_shuffle_{golden}.cu").read_text()
    return text.split("// ----- INPUT\n", 1)[1].split("// ----- EXPECTED\n", 1)[0].encode()


def _scan(source: bytes, kernel: str) -> bytes:
    out = run_pass(make_pass("block-scan-shuffle"), source, "cuda", kernel)
    assert isinstance(out, Applied), out
    assert out.launch is None  # the launch is unchanged: one value per thread, B threads per block
    return out.text


def test_the_zoo_scan_blocks_loses_its_shared_buffers_and_log2_barriers() -> None:
    src = (ZOO / "scan_blocks" / "scan_blocks.cu").read_bytes()
    after = _scan(src, "scan_blocks").decode()
    kernel = after[after.index("__global__"):after.index("int main")]
    assert "buf[2][B]" not in kernel and kernel.count("__syncthreads();") == 2 and kernel.count("__shfl_up_sync") == 2
    assert "out[g] = buf_v;" in kernel and "float buf_v = in[g];" in kernel
    assert after[after.index("int main"):] == src.decode()[src.decode().index("int main"):]  # the host code untouched


@pytest.mark.slow
@pytest.mark.parametrize("case", ["zoo", "gems_exclusive", "single_buffer_double"])
def test_the_shuffle_scan_computes_what_the_shared_memory_scan_did(tmp_path: Path, case: str) -> None:
    """The zoo's inclusive scan (B = 1024, 2 blocks), GPU Gems' exclusive one with its pout/pin buffers (N = 256, 3
    blocks), a single-buffered double scan with a guarded tail (BS = 128, n = 300 over 3 blocks): the same outputs
    within float rounding (the sums are added in another order)."""
    if case == "zoo":
        before, name, launch, counts, scalars = (ZOO / "scan_blocks" / "scan_blocks.cu").read_bytes(), "scan_blocks", \
            Launch((2, 1, 1), (1024, 1, 1)), {"in": 2048, "out": 2048}, {}
    elif case == "gems_exclusive":
        before, name, launch, counts, scalars = _input(case), "scan_gems", Launch((3, 1, 1), (256, 1, 1)), \
            {"g_idata": 768, "g_odata": 768}, {}
    else:
        before, name, launch, counts, scalars = _input(case), "scan_single", Launch((3, 1, 1), (128, 1, 1)), \
            {"x": 384, "y": 384}, {"n": "300"}
    after = _scan(before, name)
    assert same_outputs(tmp_path, name, before, after, (launch, launch), counts, scalars, rtol=1e-5) == "SAME"


@pytest.mark.slow
@pytest.mark.parametrize("mutant", ["no_warp_carry", "carry_own_warp", "second_level_skipped"])
def test_mutants_of_the_shuffle_scan_fail(tmp_path: Path, mutant: str) -> None:
    """The emulation tells a broken scan apart: the totals of earlier warps not added, a warp adding its own total, the
    totals not scanned."""
    before = _input("gems_exclusive")
    after = _scan(before, "scan_gems").decode()
    broken = {
        "no_warp_carry": after.replace("if (warp > 0) temp_v += temp_w[warp - 1];", ""),
        "carry_own_warp": after.replace("temp_v += temp_w[warp - 1]", "temp_v += temp_w[warp]"),
        "second_level_skipped": after.replace("            temp_w[lane] = tot;\n", ""),
    }[mutant]
    assert broken != after
    launch = Launch((3, 1, 1), (256, 1, 1))
    got = same_outputs(tmp_path, "scan_gems", before, broken.encode(), (launch, launch), {"g_idata": 768, "g_odata": 768}, {},
                       rtol=1e-5)
    assert got == "DIFF g_odata"


# ---- warp-rows{unroll=U}: a row scan whose lanes load U chunks before scanning them -----------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("cols", [100, 300])
def test_warp_rows_unrolled_scan_matches_the_zoo_scan_rows(tmp_path: Path, cols: int) -> None:
    """scan_rows with 4 chunks of 32 a trip: 100 columns (one partial trip) and 300 (two whole trips and a partial one),
    24 rows; a mutant whose carry skips the last chunk of each trip fails where a trip follows one."""
    from s2s.optimize.registry import make_pass

    before = (ZOO / "scan_rows" / "scan_rows.cu").read_bytes()
    out = run_pass(make_pass("warp-rows", {"unroll": "4"}), before, "cuda", "scan_rows")
    assert isinstance(out, Applied) and out.launch is not None and b"c0 += 128" in out.text
    rows = 24
    grid, block = out.launch.resolve((1, 1, 1), (32, 1, 1), values={"rows": rows, "cols": cols})
    launches = (Launch((1, 1, 1), (32, 1, 1)), Launch(grid, block))
    counts, scalars = {"in": rows * cols, "out": rows * cols}, {"rows": str(rows), "cols": str(cols)}
    assert same_outputs(tmp_path, "scan_rows", before, out.text, launches, counts, scalars, rtol=1e-5) == "SAME"
    text = out.text.decode()
    broken = text.replace("run += __shfl_sync(mask, inc, 32 - 1, 32);", "if (u < 3) run += __shfl_sync(mask, inc, 32 - 1, 32);")
    assert broken != text
    if cols > 128:
        assert same_outputs(tmp_path, "scan_rows", before, broken.encode(), launches, counts, scalars,
                            rtol=1e-5) == "DIFF out"


# ---- block-scan-shuffle{coarsen=F}: B / F threads scan the block's B values ------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("case", ["zoo", "gems_exclusive", "single_buffer_double"])
def test_the_coarsened_scan_computes_what_the_shared_memory_scan_did(tmp_path: Path, case: str) -> None:
    """The same three scans with 4 elements a thread (blocks of 256, 64 and 32 threads); the launch keeps the grid.
    A mutant whose chunks skip the totals of the chunks before them fails."""
    name, block, counts, scalars = {
        "zoo": ("scan_blocks", 1024, {"in": 2048, "out": 2048}, {}),
        "gems_exclusive": ("scan_gems", 256, {"g_idata": 768, "g_odata": 768}, {}),
        "single_buffer_double": ("scan_single", 128, {"x": 384, "y": 384}, {"n": "300"}),
    }[case]
    before = (ZOO / "scan_blocks" / "scan_blocks.cu").read_bytes() if case == "zoo" else _input(case)
    out = run_pass(make_pass("block-scan-shuffle", {"coarsen": "4"}), before, "cuda", name)
    assert isinstance(out, Applied) and out.launch is not None, out
    blocks = counts[next(iter(counts))] // block
    grid, new_block = out.launch.resolve((blocks, 1, 1), (block, 1, 1))
    assert (grid, new_block) == ((blocks, 1, 1), (block // 4, 1, 1))
    launches = (Launch((blocks, 1, 1), (block, 1, 1)), Launch(grid, new_block))
    assert same_outputs(tmp_path, name, before, out.text, launches, counts, scalars, rtol=1e-5) == "SAME"
    text = out.text.decode()
    broken = re.sub(r"if \((\w+) > 0\) (\w+)\[(\w+)\] \+= ", r"if (\1 > 1) \2[\3] += ", text)
    assert broken != text
    assert same_outputs(tmp_path, name, before, broken.encode(), launches, counts, scalars, rtol=1e-5).startswith("DIFF")
