"""Why every candidate of the zoo's spmv_csr and scan_rows was `wrong-output` on the H200 (f54b4c9), each cause with a
fixture that failed before its fix.

1. The stale-output check (input set 2, the variant's first run over the previous set's results) took an element for
   unwritten when the reference writes all-zero bytes there in both sets (an exclusive scan's first column, the empty
   rows of a CSR matrix): the previous result and the second run's poison (0x00) were the same fill, so a written 0.0
   could not be told from one left alone. Every candidate failed, the unchanged kernel too.
2. Generated CSR row pointers were uniform ints in [0, 16): not monotone, about half the rows empty, the rest reading
   vals[0..16) only. A row-pointer array (an `offsets` fill) is now a monotone sequence from 0 to the count it indexes.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from mep_util import ParamSpec, make_mep, manifest

from s2s.mep.backends.opencl_runner import POISON, POISON2, stale_fill, written_mask
from s2s.mep.evaluate import evaluate

F4 = np.dtype("f4")


# ---- 1. the stale prefill: a written zero is written -------------------------------------------------------------
def test_stale_fill_is_the_previous_result_except_where_it_equals_the_second_poison() -> None:
    prev = np.array([0.0, 2.5, 0.0, -1.0], dtype=F4).tobytes()
    fill = np.frombuffer(stale_fill(prev, F4, 4), dtype=np.uint8).reshape(4, 4)
    assert (fill[0] == POISON).all() and (fill[2] == POISON).all()
    assert np.frombuffer(fill[1].tobytes() + fill[3].tobytes(), dtype=F4).tolist() == [2.5, -1.0]


def test_a_zero_written_over_a_zero_previous_result_is_written() -> None:
    prev = np.array([0.0, 3.0, 0.0], dtype=F4).tobytes()
    fill = stale_fill(prev, F4, 3)
    wrote_zero = np.array([0.0, 4.0, 0.0], dtype=F4).tobytes()  # both runs write 0.0 at 0 and 2
    assert written_mask(wrote_zero, wrote_zero, F4, 3, fill).tolist() == [True, True, True]
    kept = bytearray(fill)  # a variant that leaves 0 and 2 alone: the fill there, then the second poison
    kept[4:8] = np.array([4.0], dtype=F4).tobytes()
    second = bytearray(bytes([POISON2]) * 12)
    second[4:8] = np.array([4.0], dtype=F4).tobytes()
    assert written_mask(bytes(kept), bytes(second), F4, 3, fill).tolist() == [False, True, False]


SCAN = r'''
__kernel void scan_rows(__global const float* in, __global float* out, const int rows, const int cols)
{
    int r = get_global_id(0);
    if (r >= rows)
        return;
    float run = 0.0f;
    for (int c = 0; c < cols; c++) {
        out[r * cols + c] = run;
        run += in[r * cols + c];
    }
}
'''
ROWS, COLS = 64, 48


@pytest.mark.slow
def test_an_exclusive_scan_checked_against_itself_passes_every_input_set(tmp_path: Path) -> None:
    """The fixture of scan_rows's failure: out[r][0] = 0.0 in every set. Before the fix input set 2 (stale) said
    'ROWS element(s) the reference writes were left unwritten' for the kernel unchanged."""
    pytest.importorskip("pyopencl")
    m = manifest("scan_rows", "opencl", "kernel.cl", [
        ParamSpec("in", "__global const float*", "in", "float", count=ROWS * COLS, space="global"),
        ParamSpec("out", "__global float*", "out", "float", count=ROWS * COLS, space="global"),
        ParamSpec("rows", "const int", "scalar", "int", value=ROWS, space="private"),
        ParamSpec("cols", "const int", "scalar", "int", value=COLS, space="private"),
    ], (ROWS, 1, 1), (16, 1, 1), input_sets=3, repetitions=3, warmup=1, timeout_s=60.0)
    mep = make_mep(tmp_path / "mep", SCAN, m, {
        "same": SCAN,
        "skips_first": SCAN.replace("out[r * cols + c] = run;", "if (c > 0) out[r * cols + c] = run;"),
    })
    same = evaluate(mep, "same", time=False)
    assert same.verdict == "ok", [o.message for o in same.outputs if not o.ok]
    skips = evaluate(mep, "skips_first", time=False)  # the guard still holds: a column left alone is unwritten
    out = next(o for o in skips.outputs if o.name == "out")
    assert skips.verdict == "wrong-output" and f"{ROWS} element(s) the reference writes were left unwritten" in out.message


HOST = r'''
#include "s2s_harness_common.cuh"
using namespace s2s;
int main() {
    const float prev[3] = {0.0f, 3.0f, 0.0f}, wrote[3] = {0.0f, 4.0f, 0.0f};
    std::vector<unsigned char> p(12), w(12);
    memcpy(p.data(), prev, 12); memcpy(w.data(), wrote, 12);
    const std::vector<unsigned char> fill = stale_fill(p, 4);
    auto m = written_mask(w.data(), w.data(), 3, 4, fill.data());
    printf("%d%d%d %d%d\n", m[0], m[1], m[2], fill[0], fill[4]);
}
'''


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_cuda_harness_stale_fill_on_the_host(tmp_path: Path) -> None:
    from s2s.base.resources import templates_dir
    from s2s.mep.backends.cuda import CudaBackend

    (tmp_path / "t.cu").write_text(HOST)
    cc = subprocess.run([*CudaBackend().compiler(), f"-I{templates_dir()}", "t.cu", "-o", "t"], cwd=tmp_path,
                        capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr
    out = subprocess.run([str(tmp_path / "t")], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["111", f"{POISON}0"]  # every zero written; the zero previous result became POISON, 3.0 kept
