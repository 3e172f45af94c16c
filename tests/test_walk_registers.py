"""walk-registers: a thread's walk along z keeps the planes it reads again in registers; emulated against the original
(heat3d_zloop at odd sizes, a 5-plane column inside an outer loop), mutants that must differ, refusals, nvcc sm_90."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, needs_nvcc
from emulate_cuda import Launch, same_outputs

from s2s.lang.edits import Refused
from s2s.optimize.registry import Applied, make_pass, run_pass, search_space

ZOO = ROOT / "bench" / "zoo"
NX, NY, NZ = 13, 11, 9


def _heat(nx: int = NX, ny: int = NY, nz: int = NZ) -> bytes:
    text = (ZOO / "heat3d_zloop" / "heat3d_zloop.cu").read_text()
    for macro, value in (("NX", nx), ("NY", ny), ("NZ", nz)):
        text = re.sub(rf"#define {macro} \d+", f"#define {macro} {value}", text)
    return text.encode()


def _apply(data: bytes, name: str, ahead: int = 0) -> bytes:
    res = run_pass(make_pass("walk-registers", {"ahead": str(ahead)}), data, "cuda", name)
    assert isinstance(res, Applied), res
    assert res.launch is None
    return res.text


def test_heat3d_zloop_reads_one_plane_a_step() -> None:
    out = _apply(_heat(512, 512, 512), "heat3d_zloop").decode()
    assert out.count("u[c + NX * NY]") == 1 and out.count("u[c - NX * NY]") == 1 and out.count("u[c]") == 1
    assert "unew[c] = c0 * w1 + c1 * (u[c - 1] + u[c + 1] + u[c - NX] + u[c + NX] + w0 + w2);" in out
    assert "w0 = w1;\n        w1 = w2;\n    }" in out


@pytest.mark.slow
@pytest.mark.parametrize("ahead", [0, 1, 2])
def test_heat3d_zloop_computes_what_the_original_does(tmp_path: Path, ahead: int) -> None:
    before = _heat()
    after = _apply(before, "heat3d_zloop", ahead)
    launch = Launch((-(-NX // 32), -(-NY // 4), 1), (32, 4, 1))
    counts = {"u": NX * NY * NZ, "unew": NX * NY * NZ}
    scalars = {"c0": "0.4f", "c1": "0.1f"}
    assert same_outputs(tmp_path, "heat3d_zloop", before, after, (launch, launch), counts, scalars) == "SAME"
    if ahead:  # the value `ahead` steps on is loaded under the loop's condition there, never past the last plane
        assert f"if (z + {ahead} < NZ - 1) w{2 + ahead} = u[(((z + {ahead}) * NY + y) * NX + x) + NX * NY];".encode() in after
    swapped = after.replace(b"w0 = w1;\n        w1 = w2;", b"w1 = w2;\n        w0 = w1;")
    assert swapped != after
    assert same_outputs(tmp_path, "heat3d_zloop", before, swapped, (launch, launch), counts, scalars) != "SAME"


FIVE = b"""#define NZ 11
__global__ void smooth(const double* u, double* v, int nx, int reps)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= nx) return;
    for (int r = 0; r < reps; ++r) {
        double s = 0.0;
        for (int z = 2; z < NZ - 2; ++z) {
            int c = z * nx + x;
            double a = u[c - 2 * nx] + u[c + nx];
            v[(r * NZ + z) * nx + x] = a + u[c] * 0.5 + u[c - nx] - u[c + 2 * nx] + s;
            s += 1.0;
        }
    }
}
"""


@pytest.mark.slow
@pytest.mark.parametrize("ahead", [0, 2])
def test_a_five_plane_column_inside_an_outer_loop(tmp_path: Path, ahead: int) -> None:
    """Offsets -2..2, double elements, the walk restarted by an outer loop (the first-step loads run again)."""
    after = _apply(FIVE, "smooth", ahead)
    regs = ", ".join(f"w{i}" for i in range(5 + ahead))
    assert f"double {regs};".encode() in after and (b"w4 = u[c + 2 * nx];" in after or ahead)
    nx, reps = 7, 3
    launch = Launch((1, 1, 1), (32, 1, 1))
    counts = {"u": nx * 11, "v": reps * 11 * nx}
    assert same_outputs(tmp_path, "smooth", FIVE, after, (launch, launch), counts, {"nx": str(nx), "reps": str(reps)}) == "SAME"
    stale = after.replace(b"bool first = true;\n", b"").replace(b"for (int r = 0;", b"bool first = true;\n    for (int r = 0;")
    assert stale != after
    out = same_outputs(tmp_path, "smooth", FIVE, stale, (launch, launch), counts, {"nx": str(nx), "reps": str(reps)})
    assert out != "SAME"


@pytest.mark.parametrize("old,new,why", [
    ("unew[c] = c0", "u[c + 1] = 0.0f; unew[c] = c0", "no array read"),
    ("unew[c] = c0 * u[c]", "if (c0 > 0.0f) unew[c] = c0 * u[c]", "branches"),
    ("for (int z = 1; z < NZ - 1; z++)", "for (int z = 1; z < NZ - 1; z += 2)", "stepping its variable by one"),
    ("int c = (z * NY + y) * NX + x;", "int c = (z * NY + y) * NX + x; x = x + 0;", "assigns"),
    ("unew[c] = c0 * u[c] + c1 * (u[c - 1] + u[c + 1] + u[c - NX] + u[c + NX] + u[c - NX * NY] + u[c + NX * NY]);",
     "unew[c] = c0 * u[c] + c1 * u[c + 2 * NX * NY];", "contiguous"),
])
def test_refusals(old: str, new: str, why: str) -> None:
    text = _heat().decode()
    assert old in text, old
    res = run_pass(make_pass("walk-registers"), text.replace(old, new).encode(), "cuda", "heat3d_zloop")
    assert isinstance(res, Refused), res
    assert why in res.reason, res.reason


def test_ahead_needs_a_plain_bound() -> None:
    text = _heat().decode().replace("z < NZ - 1; z++", "z != NZ - 1; z++")
    res = run_pass(make_pass("walk-registers", {"ahead": "1"}), text.encode(), "cuda", "heat3d_zloop")
    assert isinstance(res, Refused) and "loop condition" in res.reason, res
    assert isinstance(run_pass(make_pass("walk-registers"), text.encode(), "cuda", "heat3d_zloop"), Applied)


def test_a_read_off_the_column_stays_a_load() -> None:
    """u[c - P + (int)c0] moves with a scalar: only u[c] and u[c + P] form the column (two registers)."""
    text = _heat().decode().replace("u[c - NX * NY] + u[c + NX * NY]", "u[c - NX * NY + (int)c0] + u[c + NX * NY]")
    out = _apply(text.encode(), "heat3d_zloop").decode()
    assert "float w0, w1;" in out and "u[c - NX * NY + (int)c0]" in out and "w1 = u[c + NX * NY];" in out


def test_only_the_chunked_column_forms_are_searched() -> None:
    """Plain and ahead 1/2 measured 1.00x/0.93x/0.91x on heat3d_zloop (H200); chunks=4 cols=2 1.27x in a hand probe."""
    walks = [step for step in search_space() if "walk-registers" in step]
    assert walks == ["walk-registers{chunks=4 cols=2}", "launch-config{block=32x8},walk-registers{chunks=8 cols=4}"]


@pytest.mark.slow
@needs_nvcc
def test_nvcc_compiles_the_rewrite(tmp_path: Path) -> None:
    nvcc = shutil.which("nvcc")
    assert nvcc is not None
    f = tmp_path / "heat3d_zloop" / "k.cu"
    f.parent.mkdir()
    f.write_bytes(_apply(_heat(512, 512, 512), "heat3d_zloop"))
    shutil.copy(ZOO / "zoo.h", tmp_path / "zoo.h")
    r = subprocess.run([nvcc, "-arch=sm_90", "-c", str(f), "-o", str(tmp_path / "k.o")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]


HEAT_CL = """\
__kernel void heat(__global const float* u, __global float* v, int nx, int ny, int nz)
{
    int x = get_global_id(0);
    int y = get_global_id(1);
    if (x < 1 || x >= nx - 1 || y < 1 || y >= ny - 1) return;
    for (int z = 1; z < nz - 1; z++) {
        int c = (z * ny + y) * nx + x;
        v[c] = 0.4f * u[c] + 0.1f * (u[c - 1] + u[c + 1] + u[c - nx] + u[c + nx] + u[c - nx * ny] + u[c + nx * ny]);
    }
}
"""


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["walk-registers{ahead=0}", "walk-registers{ahead=1}", "walk-registers{chunks=4 cols=2}",
                                  "walk-registers{chunks=3 cols=4}"])
def test_opencl_heat_matches_the_original_on_pocl(tmp_path: Path, spec: str) -> None:
    pytest.importorskip("pyopencl")
    from mep_util import ParamSpec, make_mep, manifest

    from s2s.lang.kernel_facts import kernel_facts
    from s2s.mep.evaluate import evaluate
    from s2s.mep.manifest import load
    from s2s.optimize.loop import write_variant
    from s2s.optimize.proposers.base import State
    from s2s.optimize.proposers.builtin import apply_pipeline

    n = NX * NY * NZ
    params = [ParamSpec("u", "__global const float*", "in", "float", count=n, space="global"),
              ParamSpec("v", "__global float*", "out", "float", count=n, space="global"),
              ParamSpec("nx", "int", "scalar", "int", value=NX), ParamSpec("ny", "int", "scalar", "int", value=NY),
              ParamSpec("nz", "int", "scalar", "int", value=NZ)]
    mep = make_mep(tmp_path / "mep", HEAT_CL, manifest("heat", "opencl", "kernel.cl", params, (16, 16, 1), (8, 8, 1),
                                                      repetitions=3, warmup=1, timeout_s=60.0))
    state = State(manifest=load(mep), original=HEAT_CL.encode(), kernel="heat", dialect="opencl",
                  facts=kernel_facts(HEAT_CL.encode(), "opencl", "heat"))
    cand = apply_pipeline(spec, state)
    assert not isinstance(cand, str), cand
    if "cols" in spec:  # chunks over gridDim.z, the points' words as vloadN / vstoreN
        assert b"vload" in cand.source and b"vstore" in cand.source and b"get_group_id(2)" in cand.source
    else:
        assert b"w2 = u[c + nx * ny];" in cand.source or "ahead=1" in spec
    write_variant(mep, state.manifest.kernel_file, cand)
    m = evaluate(mep, cand.id)
    assert m.verdict == "ok", (m.verdict, m.messages)
    assert m.outputs and all(o.ok for o in m.outputs)
