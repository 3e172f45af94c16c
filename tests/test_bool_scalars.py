"""A `bool` kernel argument captured from an application (`value = true` in mep.toml) is a value, not bad input: the
first application benchmark (33eae77) stopped three kernels with "params.X.value: True is not a number"."""
from __future__ import annotations

from pathlib import Path

from mep_util import ParamSpec, make_mep, manifest

from s2s.mep.backends.base import check_manifest
from s2s.mep.backends.cuda import _cpp_number
from s2s.mep.manifest import dumps, load

KERNEL = """__global__ void scale(float *y, const float *x, int n, bool half) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = half ? 0.5f * x[i] : x[i];
}
"""


def test_a_bool_scalar_round_trips_and_passes_the_checks(tmp_path: Path) -> None:
    for flag in (True, False):
        m = manifest("scale", "cuda", "kernel.cu", [
            ParamSpec("y", "float*", "out", "float", count=256, space="global"),
            ParamSpec("x", "const float*", "in", "float", count=256, space="global"),
            ParamSpec("n", "int", "scalar", "int", value=256),
            ParamSpec("half", "bool", "scalar", "bool", value=flag),
        ], (1, 1, 1), (256, 1, 1))
        mep = make_mep(tmp_path / f"mep-{flag}", KERNEL, m)
        assert f"value = {'true' if flag else 'false'}" in (mep / "mep.toml").read_text()
        back = load(mep)  # the TOML types are checked here: a bool where a value belongs was refused
        assert back.params[3].value is flag and dumps(back) == (mep / "mep.toml").read_text()
        check_manifest(back, mep / "mep.toml")
        assert _cpp_number(back.params[3].value) == ("true" if flag else "false")  # the harness's literal
