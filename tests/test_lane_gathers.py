"""Lanes that read a CSR row's column indices and values in 16-byte words and gather x at each word's four components
(issue 15: spmv_csr at 24% of the copy bandwidth; passes/reductions/_lane_quads.py's gathered factor `x[cols[k]]`). The rewrites
run threaded on the CPU against the original (tests/emulate_cuda_block.py): the emulator's index fill makes row pointers
that are not monotonic, so rows of 31 elements starting at every residue mod 4 (aligned and not) sit beside empty rows."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import ROOT
from emulate_cuda import Launch
from emulate_cuda_block import same_outputs
from session_builds import nvcc_checks

from s2s.optimize.registry import Applied, build_pipeline, run_pass

CSR = ROOT / "bench" / "zoo" / "spmv_csr" / "spmv_csr.cu"
GATHER = """\
__global__ void g(const float* v, const IDX* cols, const float* x, float* y, int n, int len)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < n) {
        float s = 0.0f;
        for (int k = 0; k < len; k++)
            s += v[row * len + k] * x[TERM];
        y[row] = s;
    }
}
"""


def _apply(pipeline: str, source: bytes, kernel: str) -> Applied:
    out = None
    for p in build_pipeline(pipeline):
        out = run_pass(p, source, "cuda", kernel)
        assert isinstance(out, Applied), (pipeline, out)
        source = out.text
    assert out is not None
    return out


def _kernel(idx: str, term: str) -> bytes:
    return GATHER.replace("IDX", idx).replace("TERM", term).encode()


def test_csr_lanes_read_index_and_value_words() -> None:
    text = _apply("warp-rows{lanes=4}", CSR.read_bytes(), "spmv_csr").text.decode()
    assert "const int4 w1 = *reinterpret_cast<const int4*>(&cols[k]);" in text and "k += 16" in text
    assert "dot += w0.x * x[w1.x];" in text and "dot += w0.w * x[w1.w];" in text
    assert "reinterpret_cast<unsigned long long>(&cols[(k_head)])" in text  # the index array's alignment checked too
    assert "for (int k = (rowptr[row]) + lane; k < k_head && k < (rowptr[row + 1]); k += 4)" in text  # the head, one a lane
    assert "int4" not in _apply("warp-rows{lanes=4 vec=1}", CSR.read_bytes(), "spmv_csr").text.decode()


@pytest.mark.parametrize("idx,term,word", [("int", "cols[row * len + k]", "int4"),
                                           ("unsigned int", "cols[row * len + k]", "uint4"),
                                           ("float", "(int)cols[row * len + k]", ""),  # not an int array's element
                                           ("int", "cols[row * len + 2 * k]", ""),  # the index does not step by one
                                           ("int", "cols[row * len + k] + 1", ""),  # not the element itself
                                           ("int", "k", "")])  # x itself steps by one: words of x, not a gather
def test_only_int_index_arrays_stepping_by_one_gather(idx: str, term: str, word: str) -> None:
    text = _apply("warp-rows{lanes=8}", _kernel(idx, term), "g").text.decode()
    if word:
        assert f"const {word} w1 = *reinterpret_cast<const {word}*>(&cols[row * len + k]);" in text and "x[w1.z]" in text
    else:
        assert "int4" not in text and "x[w1" not in text
    if term == "k":
        assert "const float4 w1 = *reinterpret_cast<const float4*>(&x[k]);" in text


def _csr(rows: int) -> bytes:
    return CSR.read_bytes().replace(b"#define NROWS 1048576", f"#define NROWS {rows}".encode())


@pytest.mark.slow
@pytest.mark.parametrize("lanes,offset", [(4, 0), (8, 0), (2, 0), (4, 1)])
def test_csr_gathered_quads_match(tmp_path: Path, lanes: int, offset: int) -> None:
    """40 rows: the same y within float rounding; rows start at every residue mod 4 (offset 1: the buffers too), their
    first elements up to a 16-byte boundary one per lane. A word whose gather takes the wrong component, a quad loop
    stepping one lane-width instead of four, and a head that stops one element short are caught."""
    src = _csr(40)
    out = _apply(f"warp-rows{{lanes={lanes}}}", src, "spmv_csr")
    assert out.launch is not None
    grid, block = (1, 1, 1), (64, 1, 1)
    g, b = out.launch.resolve(grid, block, values={"nrows": 40})
    launches = (Launch(grid, block), Launch(g, b))
    counts, scalars = {"rowptr": 41, "cols": 128, "vals": 128, "x": 128, "y": 40}, {"nrows": "40"}
    assert same_outputs(tmp_path, "spmv_csr", src, out.text, launches, counts, scalars, 1e-5, offset) == "SAME"
    if offset == 0:
        mutants = [out.text.replace(b"x[w1.y]", b"x[w1.x]"), out.text.replace(f"k += {4 * lanes}".encode(), f"k += {lanes}".encode()),
                   out.text.replace(b"k < k_head &&", b"k < k_head - 1 &&")]
        for broken in mutants:
            assert broken != out.text
            assert same_outputs(tmp_path, "spmv_csr", src, broken, launches, counts, scalars, 1e-5, offset) != "SAME"


@pytest.mark.slow
def test_csr_gathered_quads_compile(tmp_path: Path) -> None:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("no nvcc")
    files = []
    for pipeline in ("restrict-const,warp-rows{lanes=4}", "split-reduction"):
        files.append(tmp_path / f"spmv_csr_{len(files)}.cu")
        files[-1].write_bytes(_apply(pipeline, CSR.read_bytes(), "spmv_csr").text)
    proc = nvcc_checks(nvcc, ["-c", "-arch=sm_90", "-Werror", "all-warnings"], files, tmp_path, 300)
    assert proc.returncode == 0, proc.stderr[-3000:]
