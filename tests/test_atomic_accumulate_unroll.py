"""atomic-accumulate{unroll=U} (issue 15: reduce_atomic at 58% of the copy bandwidth): each thread loads U float4
words a grid stride apart before it adds any, while all U are in range, then one at a time, then the scalar tail.
Threaded on the CPU against the original (tests/emulate_cuda_block.py) with odd sizes, on and off a 16-byte boundary."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT
from emulate_cuda import Launch
from emulate_cuda_block import same_outputs

from s2s.lang.edits import Refused
from s2s.optimize.registry import Applied, make_pass, run_pass

REDUCE = (ROOT / "bench" / "zoo" / "reduce_atomic" / "reduce_atomic.cu").read_text()
DOT = (ROOT / "bench" / "zoo" / "dot_atomic" / "dot_atomic.cu").read_text()


def _unrolled(source: str, kernel: str, unroll: int) -> Applied:
    out = run_pass(make_pass("atomic-accumulate", {"unroll": str(unroll)}), source.encode(), "cuda", kernel)
    assert isinstance(out, Applied), out
    return out


def test_four_words_in_flight_then_one_at_a_time() -> None:
    text = _unrolled(REDUCE, "reduce_atomic", 4).text.decode()
    assert "for (; q + 3 * (blockDim.x * gridDim.x) < (n) / 4; q += 4 * (blockDim.x * gridDim.x)) {" in text
    assert "const float4 in_4_3 = reinterpret_cast<const float4*>(in)[q + 3 * (blockDim.x * gridDim.x)];" in text
    assert "acc += in_4_3.w * in_4_3.w;" in text and "for (; q < (n) / 4; q += blockDim.x * gridDim.x) {" in text
    loads = text.index("in_4_3 = reinterpret_cast"), text.index("acc += in_4_0.x")
    assert loads[0] < loads[1]  # every load of the iteration before the first add


def test_two_arrays_unrolled_keep_their_pairs() -> None:
    text = _unrolled(DOT, "dot_atomic", 2).text.decode()
    assert "x_4_1.y * y_4_1.y" in text and "x_4_0.w * y_4_0.w" in text and "x_4_1.y * y_4_0.y" not in text


def test_unroll_must_be_a_small_power_of_two() -> None:
    out = run_pass(make_pass("atomic-accumulate", {"unroll": "3"}), REDUCE.encode(), "cuda", "reduce_atomic")
    assert isinstance(out, Refused) and "1, 2, 4 or 8" in out.reason


@pytest.mark.slow
@pytest.mark.parametrize("offset", [0, 1])
@pytest.mark.parametrize("unroll", [2, 4])
def test_unrolled_sum_of_squares_matches(tmp_path: Path, offset: int, unroll: int) -> None:
    """5003 floats on 3 blocks of 64 threads (1250 quads: whole unrolled rounds, single quads, a tail of 3); a round
    that loads its first word twice is caught."""
    src = REDUCE.replace("#define N (1 << 24)", "#define N 5003").encode()
    out = _unrolled(src.decode(), "reduce_atomic", unroll)
    launches = (Launch((20, 1, 1), (256, 1, 1)), Launch((3, 1, 1), (64, 1, 1)))
    counts, scalars = {"in": 5003, "total": 1}, {"n": "5003"}
    assert same_outputs(tmp_path, "reduce_atomic", src, out.text, launches, counts, scalars, rtol=1e-5, offset=offset) == "SAME"
    if offset == 0:
        broken = out.text.replace(b"[q + 1 * (blockDim.x", b"[q + 0 * (blockDim.x")
        assert broken != out.text
        assert same_outputs(tmp_path, "reduce_atomic", src, broken, launches, counts, scalars, rtol=1e-5) != "SAME"


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_unrolled_zoo_reductions_compile_for_sm90(tmp_path: Path) -> None:
    """reduce_atomic and dot_atomic at unroll 2, 4 and 8: nvcc -arch=sm_90 -c, no local memory."""
    shutil.copy(ROOT / "bench" / "zoo" / "zoo.h", tmp_path / "zoo.h")
    (tmp_path / "k").mkdir()
    for kernel, source in (("reduce_atomic", REDUCE), ("dot_atomic", DOT)):
        for unroll in (2, 4, 8):
            f = tmp_path / "k" / f"{kernel}_{unroll}.cu"
            f.write_bytes(_unrolled(source, kernel, unroll).text)
            # -cubin: ptxas's counts of the device code as -c builds it; only the host compiler is not run (session_builds.device_only)
            proc = subprocess.run(["nvcc", "-arch=sm_90", "-cubin", "-Xptxas", "-v", str(f), "-o", str(f.with_suffix(".o"))],
                                  capture_output=True, text=True, timeout=300)
            assert proc.returncode == 0, proc.stderr[-3000:]
            assert "0 bytes stack frame" in proc.stderr, proc.stderr[-2000:]
