"""Applications whose run launches nothing of the tree's, said with the cause rather than as a scan failure (no GPU
needed: nothing is built). A tree whose GPU work is library calls only (Thrust: no __global__ function of its own) was
refused with "no CUDA <<<>>> or clEnqueueNDRangeKernel launch found to time", which reads as a launch s2s could not
see; an application that stops before its GPU part (an input file missing, exit status 0) was refused with "launched
none of the N timed launch sites" and no word of what it printed."""
from __future__ import annotations

from pathlib import Path

import pytest

from s2s.base.errors import UserError
from s2s.capture.profile import measure

LIBRARY_ONLY = """#include <thrust/device_vector.h>
#include <thrust/sequence.h>
#include <thrust/reduce.h>
int main() {
  thrust::device_vector<int> v(1 << 20);
  thrust::sequence(v.begin(), v.end());
  return thrust::reduce(v.begin(), v.end()) == 0;
}
"""

EARLY_EXIT = """#include <cstdio>
#include <cstdlib>
__global__ void scale(float *x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2.0f; }
int main() {
  FILE *f = fopen("data/input.bin", "rb");
  if (!f) { printf("Bad file path data/input.bin\\n"); exit(0); }
  float *x;
  cudaMalloc(&x, 1024 * sizeof(float));
  scale<<<4, 256>>>(x, 1024);
  return 0;
}
"""


def test_a_tree_with_library_calls_only_says_so(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "main.cu").write_text(LIBRARY_ONLY)
    with pytest.raises(UserError, match="defines no kernel of its own.*library calls"):
        measure(tmp_path / "app", tmp_path / "work", "true", "true")


def test_a_run_that_stops_before_its_gpu_part_shows_what_it_printed(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "main.cu").write_text(EARLY_EXIT)
    run = "echo 'Bad file path data/input.bin'"  # what the built program prints here, without building it
    with pytest.raises(UserError) as err:
        measure(tmp_path / "app", tmp_path / "work", "true", run)
    assert "launched none of the 1 timed launch sites" in err.value.message
    assert "its output ends: Bad file path data/input.bin" in err.value.message
