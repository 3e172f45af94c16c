"""bench/fidelity.py --capture --kernels FILE:NAME: only the named kernels are queued for capture, from the default
programs and the extra ones (NPB SP here); without --kernels the extra programs are not captured at all."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import fidelity  # noqa: E402

KERNELS = """__global__ void k_one(double* a) { a[threadIdx.x] = 1.0; }
__global__ void k_two(double* a) { a[threadIdx.x] = 2.0; }
int main() { double* d; cudaMalloc(&d, 64 * sizeof(double)); k_one<<<1, 64>>>(d); k_two<<<1, 64>>>(d); return 0; }
"""


def test_only_the_named_kernels_are_queued(tmp_path: Path) -> None:
    sp = tmp_path / "NPB-GPU" / "CUDA" / "SP"
    sp.mkdir(parents=True)
    (sp / "sp.cu").write_text(KERNELS)
    doc = fidelity.capture_part(tmp_path, 2, 0.0, [], ["SP/sp.cu:k_two"])  # deadline 0: queued, none run
    assert [(c["program"], c["kernel"], c["rc"]) for c in doc["captures"]] == [  # type: ignore[union-attr]
        ("NPB SP", "k_two", "not run (deadline)")]
    doc = fidelity.capture_part(tmp_path, 2, 0.0, ["NPB SP"])  # not a default program
    assert doc["captures"] == []
