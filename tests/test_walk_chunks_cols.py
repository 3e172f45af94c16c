"""walk-registers{chunks=N cols=V}: heat3d_zloop's walk split over gridDim.z and V x points a thread, emulated against
the original (odd sizes: NX not a multiple of V, NZ - 2 not a multiple of N; buffers off their words), refusals, the
OpenCL form on PoCL (tests/test_walk_registers.py), nvcc sm_90."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import needs_nvcc
from emulate_cuda import Launch, same_outputs
from test_walk_registers import NX, NY, NZ, ZOO, _heat

from s2s.lang.edits import LaunchChange, Refused
from s2s.optimize.registry import Applied, make_pass, run_pass


def _apply(data: bytes, opts: dict[str, str]) -> Applied:
    res = run_pass(make_pass("walk-registers", opts), data, "cuda", "heat3d_zloop")
    assert isinstance(res, Applied), res
    return res


def test_heat_two_points_share_their_x_neighbours() -> None:
    res = _apply(_heat(512, 512, 512), {"chunks": "4", "cols": "2"})
    out = res.text.decode()
    assert res.launch == LaunchChange(None, "chunks-z:4", per_item=2)
    assert "int x0 = (blockIdx.x * blockDim.x + threadIdx.x) * 2;" in out
    assert out.count("float2 t = *(const float2*)") == 5  # the planes -P, 0 (first step), +P, -NX, +NX
    assert "unew[c_1] = c0 * wc4 + c1 * (wc3 + wc5 + wc9 + wc11 + wc1 + wc7);" in out
    assert "t.y = c0 * wc4 + c1 * (wc3 + wc5 + wc9 + wc11 + wc1 + wc7);\n            *(float2*)(unew + (c)) = t;" in out
    assert "(long long)blockIdx.z * ((NZ - 1) > (1)" in out


@pytest.mark.slow
@pytest.mark.parametrize("chunks,cols,offset", [(4, 1, 0), (3, 2, 0), (4, 2, 1), (2, 4, 0), (5, 4, 3)])
def test_heat_matches_the_original(tmp_path: Path, chunks: int, cols: int, offset: int) -> None:
    before = _heat()  # 13 x 11 x 9: NX odd, NZ - 2 = 7 not a multiple of the chunks
    res = _apply(before, {"chunks": str(chunks), "cols": str(cols)})
    assert res.launch is not None
    old = Launch((-(-NX // 32), -(-NY // 4), 1), (32, 4, 1))
    grid, block = res.launch.resolve(old.grid, old.block)
    counts = {"u": NX * NY * NZ, "unew": NX * NY * NZ}
    scalars = {"c0": "0.4f", "c1": "0.1f"}
    new = Launch(grid, block)
    assert same_outputs(tmp_path, "heat3d_zloop", before, res.text, (old, new), counts, scalars, offset) == "SAME"
    short = res.text.replace(b"/ %d);" % chunks, b"/ %d) - 1;" % chunks, 1)  # a chunk that stops one step early
    assert short != res.text
    assert same_outputs(tmp_path, "heat3d_zloop", before, short, (old, new), counts, scalars, offset) != "SAME"
    if cols > 1 and not offset:  # the word store's points swapped: the aligned rows' words show it
        swapped = res.text.replace(b"t.x = ", b"t.TMP = ").replace(b"t.y = ", b"t.x = ").replace(b"t.TMP = ", b"t.y = ")
        assert same_outputs(tmp_path, "heat3d_zloop", before, swapped, (old, new), counts, scalars, offset) != "SAME"


@pytest.mark.parametrize("old,new,opts,why", [
    ("int y = blockIdx.y * blockDim.y + threadIdx.y;", "int y = blockIdx.y * blockDim.y + threadIdx.y + blockIdx.z;",
     {"chunks": "2"}, "z of the grid"),
    ("unew[c] = c0", "unew[x] = c0", {"chunks": "2"}, "does not move"),
    ("unew[c] = c0 * u[c]", "s += 1.0f; unew[c] = c0 * u[c]", {"chunks": "2"}, "lives across"),
    ("    if (x < 1 || x >= NX - 1 || y < 1 || y >= NY - 1)\n        return;\n", "", {"cols": "2"}, "guard"),
    ("int x = blockIdx.x * blockDim.x + threadIdx.x;", "int x = threadIdx.x;", {"cols": "2"}, "blockIdx.x"),
    ("unew[c] = c0 * u[c]", "unew[c] = c0 * unew[c + 1]", {"cols": "2"}, "which the kernel writes"),
    ("        return;\n", "        return;\n    unew[0] = 1.0f;\n", {"chunks": "2"}, "outside the walked loop"),
])
def test_refusals(old: str, new: str, opts: dict[str, str], why: str) -> None:
    text = _heat().decode()
    assert old in text, old
    text = text.replace(old, new)
    if "s += 1.0f" in new:
        text = text.replace("for (int z = 1;", "float s = 0.0f;\n    for (int z = 1;")
    res = run_pass(make_pass("walk-registers", opts), text.encode(), "cuda", "heat3d_zloop")
    assert isinstance(res, Refused), res
    assert why in res.reason, res.reason


def test_a_3d_launch_is_refused_at_launch_time() -> None:
    with pytest.raises(ValueError, match="3-D"):
        LaunchChange(None, "chunks-z:4", per_item=2).resolve((4, 4, 2), (32, 4, 1))
    assert LaunchChange(None, "chunks-z:4", per_item=2).resolve((16, 128, 1), (32, 4, 1)) == ((8, 128, 4), (32, 4, 1))


@pytest.mark.slow
@needs_nvcc
@pytest.mark.parametrize("opts", [{"chunks": "4", "cols": "2"}, {"chunks": "8", "cols": "4"}, {"chunks": "8"}])
def test_nvcc_compiles(tmp_path: Path, opts: dict[str, str]) -> None:
    nvcc = shutil.which("nvcc")
    assert nvcc is not None
    f = tmp_path / "heat3d_zloop" / "k.cu"
    f.parent.mkdir()
    f.write_bytes(_apply(_heat(512, 512, 512), opts).text)
    shutil.copy(ZOO / "zoo.h", tmp_path / "zoo.h")
    r = subprocess.run([nvcc, "-arch=sm_90", "-c", str(f), "-o", str(tmp_path / "k.o")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]


@pytest.mark.parametrize("opts", [{"chunks": "2"}, {"cols": "2"}])
def test_a_nested_walk_is_refused(opts: dict[str, str]) -> None:
    """FIVE's walk restarts in an outer loop (and carries `s`): neither its chunks nor its points are independent here."""
    from test_walk_registers import FIVE
    res = run_pass(make_pass("walk-registers", opts), FIVE, "cuda", "smooth")
    assert isinstance(res, Refused) and "nested" in res.reason, res


def test_only_heat3d_zloop_of_the_zoo_takes_the_column_form() -> None:
    """Every other zoo kernel with a loop is refused (a loop without a block, a carried sum, barriers...)."""
    taken = []
    for f in sorted(ZOO.glob("*/*.cu")):
        res = run_pass(make_pass("walk-registers", {"chunks": "4", "cols": "2"}), f.read_bytes(), "cuda", f.stem)
        if isinstance(res, Applied):
            taken.append(f.stem)
    assert taken == ["heat3d_zloop"]


@pytest.mark.slow
@pytest.mark.parametrize("cols,offset", [(2, 0), (4, 0), (4, 1)])
def test_the_hoisted_alignment_test_matches_the_original(tmp_path: Path, cols: int, offset: int) -> None:
    """NX = 12, NY = 11: a plane is 132 elements, whole words of 2 and 4, so the step's words are tested once."""
    nx, ny, nz = 12, 11, 9
    before = _heat(nx, ny, nz)
    res = _apply(before, {"chunks": "3", "cols": str(cols)})
    assert b"aligned = full && " in res.text and b"if (aligned) {" in res.text
    assert res.launch is not None
    old = Launch((1, -(-ny // 4), 1), (32, 4, 1))
    new = Launch(*res.launch.resolve(old.grid, old.block))
    counts = {"u": nx * ny * nz, "unew": nx * ny * nz}
    scalars = {"c0": "0.4f", "c1": "0.1f"}
    assert same_outputs(tmp_path, "heat3d_zloop", before, res.text, (old, new), counts, scalars, offset) == "SAME"
