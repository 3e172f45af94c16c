"""Issue 29, item 6: `s2s extract` ends with a one-screen summary of what is FILL-IN and why, and the MEP's README
says how to fill each value. Written here from scratch."""
from __future__ import annotations

from pathlib import Path

from conftest import run_cli

APP = """#include <cuda_runtime.h>
#include <stdlib.h>
__global__ void scaled(float* a, float s, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] *= s; }
static void shape(int n, dim3& g, dim3& b) { b.x = atoi(getenv("BLOCK")); g.x = (n + b.x - 1) / b.x; }
int main(int argc, char** argv) {
  int n = 1 << 20;
  float s = 1.0f;
  if (argc > 1) s = atof(argv[1]);
  float* d;
  cudaMalloc((void**)&d, n * sizeof(float));
  dim3 g, b;
  shape(n, g, b);
  for (int r = 0; r < 3; ++r) { s *= 0.5f; scaled<<<g, b>>>(d, s, n); }
  return 0;
}
"""


def test_extract_summarizes_fill_ins_and_the_readme_says_how_to_fill_them(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "main.cu").write_text(APP)
    res = run_cli("extract", str(tmp_path / "app"), "--kernel", "scaled", "-o", str(tmp_path / "m"))
    assert res.returncode == 0, res.stderr
    lines = [ln for ln in res.stdout.splitlines() if ln.strip()]
    assert len(lines) <= 24, res.stdout  # one screen
    fill = {ln.split()[1].rstrip(":"): ln for ln in lines if ln.startswith("FILL-IN ")}
    assert set(fill) == {"params.s.value", "launch.grid"}, res.stdout
    assert all(len(ln) <= 80 for ln in lines), res.stdout  # a terminal's width (80 when not a terminal)
    assert "main.cu:13" in fill["params.s.value"] and "main.cu:12" in fill["launch.grid"], fill  # why: where it is set
    readme = (tmp_path / "m" / "README.md").read_text()
    for key in ("params.s.value", "launch.grid / launch.block"):
        section = readme.split(f"## `{key}`", 1)[1].split("## ", 1)[0]
        assert "- why: " in section and "- write: " in section, readme
    assert "not known before the run" in readme


def test_the_usual_readme_replaces_the_fill_in_one_once_values_are_filled(tmp_path: Path) -> None:
    from s2s.extract.mep_writer import make_mep
    from s2s.mep.backends import write_mep_files
    from s2s.mep.fill_in import awaits_fill_in
    from s2s.mep.manifest import load

    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "main.cu").write_text(APP)
    out, _m, _ = make_mep(str(tmp_path / "app"), "scaled", str(tmp_path / "m"))
    assert awaits_fill_in(out / "README.md")
    toml = (out / "mep.toml").read_text()
    toml = toml.replace('grid = ["FILL-IN", "FILL-IN", "FILL-IN"]', "grid = [4096, 1, 1]")
    toml = toml.replace('block = ["FILL-IN", "FILL-IN", "FILL-IN"]', "block = [256, 1, 1]")
    (out / "mep.toml").write_text(toml.replace('value = "FILL-IN"', "value = 0.5"))
    filled = load(out)
    assert not filled.unfilled()
    write_mep_files(out, filled, readme=False)  # what `s2s run` does before it builds
    assert not awaits_fill_in(out / "README.md") and "make run" in (out / "README.md").read_text()
