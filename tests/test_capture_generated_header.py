"""A header the application's build generates (NPB's npbparams.hpp from sys/setparams) is not in the tree
before the build: `s2s capture` extracts the MEP again after the build command ran, so the header's macros
reach kernel.cu. No GPU: the run command fakes the capture runtime's dump."""
from __future__ import annotations

import shutil
import struct
import subprocess
import sys
from pathlib import Path

from s2s.capture import capture, generated_headers

KERNEL = """#include "params.h"
__global__ void scale(float* a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] *= M;
}
int main() { float* d; cudaMalloc(&d, 256); scale<<<1, 64>>>(d, 64); return 0; }
"""

FAKE_RUN = f"""import os, struct
from pathlib import Path
dump = Path(os.environ["S2S_CAPTURE_DIR"]); d = dump / "launch1"; d.mkdir(parents=True)
(dump / "summary.txt").write_text("kernel scale\\nlaunches 1\\n")
data = struct.pack("<64f", *range(64))
(d / "arg0.before.bin").write_bytes(data); (d / "arg0.after.bin").write_bytes(data)
(d / "record.txt").write_text("launch 1\\nsite k.cu:6\\nkernel scale\\nnargs 2\\ngrid 1 1 1\\nblock 64 1 1\\nshared_mem 0\\n"
  "stream 0\\narg 0 pointer 4 256 0 139800000000000 device cuMemGetAddressRange\\narg 1 value 4 {struct.pack('<i', 64).hex()}\\n"
  "done\\n")
"""


def test_generated_header_macros_reach_the_mep(tmp_path: Path) -> None:
    app = tmp_path / "app"
    app.mkdir()
    (app / "k.cu").write_text(KERNEL)
    (app / "Makefile").write_text("all:\n\tmkdir -p sub && echo '#define M 4' > params.h && touch sub/other.hpp\n")
    (tmp_path / "fake_run.py").write_text(FAKE_RUN)
    got = capture(app, "k.cu:scale", "make", f"{sys.executable} {tmp_path / 'fake_run.py'}", output=str(tmp_path / "mep"))
    text = (got.mep / "kernel.cu").read_text()
    assert "4" in text and "M" in text.split("__global__")[0], text  # M's definition comes before the kernel
    assert any("params.h" in n for n in got.notes), got.notes
    assert got.manifest.origin["tree"] == str(app.resolve())
    assert not (app / "params.h").exists()  # the user's tree is only read
    if shutil.which("nvcc"):
        proc = subprocess.run(["nvcc", "-c", str(got.mep / "kernel.cu"), "-o", str(tmp_path / "k.o")],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr


def test_generated_headers_lists_only_new_headers(tmp_path: Path) -> None:
    root, built = tmp_path / "root", tmp_path / "built"
    for d in (root, built):
        (d / "src").mkdir(parents=True)
        (d / "src" / "a.h").write_text("")
    (built / "src" / "npbparams.hpp").write_text("#define M 1\n")
    (built / "src" / "a.o").write_text("")
    (built / "s2s_capture_rt.h").write_text("")
    assert generated_headers(root, built, built / "s2s_capture_rt.h") == ["src/npbparams.hpp"]
