"""stencil-registers{cols=C} (issue 15: conv2d_5x5 at 51% of the copy bandwidth after stencil-registers, its window
loads misaligned scalars): C adjacent x outputs per thread as well, each window row read once as float4/float2 words
where it lies inside the guards and starts aligned.

The CUDA rewrites run on the CPU thread after thread (tests/emulate_cuda.py) against the originals, byte for byte (each
output's additions in the same order), on buffers that start aligned (the word path) and one element off (the element
path), at widths that are and are not multiples of C. Each has a mutant (a word one column off) the check must catch."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import ROOT
from emulate_cuda import Launch, same_outputs

from s2s.optimize.registry import Applied, build_pipeline, make_pass, run_pass, search_space

ZOO = ROOT / "bench" / "zoo"


def _zoo(name: str, sizes: tuple[tuple[str, int], ...]) -> bytes:
    text = (ZOO / name / f"{name}.cu").read_text()
    for macro, value in sizes:
        text = re.sub(rf"#define {macro} \d+", f"#define {macro} {value}", text)
    return text.encode()


def _apply(data: bytes, name: str, pipeline: str, grid: tuple[int, int, int], block: tuple[int, int, int],
           values: dict[str, object] | None = None) -> tuple[bytes, Launch, list[str]]:
    notes = []
    for p in build_pipeline(pipeline):
        res = run_pass(p, data, "cuda", name)
        assert isinstance(res, Applied), (pipeline, res)
        if res.launch is not None:
            grid, block = res.launch.resolve(grid, block, values=values or {})
        data = res.text
        notes.append(res.note)
    return data, Launch(grid, block), notes


def test_the_zoo_conv2d_5x5_takes_quads_of_columns() -> None:
    """8 rows x 4 columns a thread from a 12x8 window, each row a float2, a float4 and a float2 when aligned; the grid
    shrinks 4-fold along x and 8-fold along y."""
    data = (ZOO / "conv2d_5x5" / "conv2d_5x5.cu").read_bytes()
    out, launch, notes = _apply(data, "conv2d_5x5", "delinearize-2d,stencil-registers{factor=8 cols=4}", (65536, 1, 1),
                                (256, 1, 1), {"W": 4096, "H": 4096})
    text = out.decode()
    assert "float img_w[12][8];" in text and "const int xbase = (blockIdx.x * blockDim.x + threadIdx.x) * 4;" in text
    assert "const float4 v1 = *(const float4*)&img[W * gy + xbase];" in text and text.count("const float2 v") == 2
    assert "s_a[cy][cx] += k_r[i + 2][j + 2] * img_w[cy + i + 2][cx + j + 2];" in text and "int x = xbase + cx;" in text
    assert "const int i = wr - cy - 2;" in text and "*(float4*)o = make_float4(s_a[cy][0], s_a[cy][1], s_a[cy][2], s_a[cy][3]);" in text
    assert launch == Launch((4096 // 4 // 32, 4096 // 8 // 8, 1), (32, 8, 1)) and "8 x 4 outputs" in notes[-1]
    assert "rows streamed into the sums" in notes[-1]
    # one guard box: the row's words are decided by its first and last columns, not a test per column
    assert "(xbase - 2) >= R - 2" in text and "(xbase + 5) < W + 2" in text and "for (int wc = 0; wc < 8; wc++) {\n            const int gx = xbase + wc - 2;\n            ok = ok" not in text


def test_search_space_offers_columns_after_delinearize() -> None:
    space = search_space()
    assert "delinearize-2d,stencil-registers{factor=8 cols=4}" in space and "stencil-registers{factor=4 cols=4}" in space
    # the streamed 4 x 4 form first (H200 plan at cd64a48: conv2d_5x5 50.3 us vs 60.7 for factor=8, conv2d_3x3 38.0 vs
    # 39.3), the window-first 8 x 4 form after the plain factors (it lost on jacobi2d: 58.6 us vs 37.6)
    assert space.index("stencil-registers{factor=4 cols=4}") < space.index("stencil-registers")
    assert space.index("stencil-registers{factor=16}") < space.index("stencil-registers{factor=8 cols=4}")


BLUR = b"""__global__ void blur(const float* in, float* out, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < 1 || x >= w - 1 || y < 1 || y >= h - 1)
        return;
    out[y * w + x] = (in[y * w + x - 1] + in[(y - 1) * w + x] + in[y * w + x + 1]) * (1.0f / 3.0f);
}
"""


@pytest.mark.parametrize("src,pipeline,why", [
    (BLUR, "stencil-registers{cols=3}", "cols must be 1, 2 or 4"),
    (BLUR.replace(b"    int y = b", b"    int xx = x + 1;\n    int y = b").replace(b"x + 1]", b"xx]"), "stencil-registers{cols=2}",
     "x or the x thread index is used before"),
    (BLUR.replace(b"x >= w - 1 || ", b""), "stencil-registers{cols=4}", "not under a guard bounding x from above"),  # the cols - 1 extra points stop there
])
def test_columns_refuse(src: bytes, pipeline: str, why: str) -> None:
    (p,) = build_pipeline(pipeline)
    res = run_pass(p, src, "cuda")
    assert not isinstance(res, Applied) and why in res.reason, res


def test_opencl_refuses_columns() -> None:
    cl = BLUR.replace(b"__global__ void", b"__kernel void").replace(b"const float* in, float* out",
                                                                     b"__global const float* in, __global float* out")
    cl = cl.replace(b"blockIdx.x * blockDim.x + threadIdx.x", b"get_global_id(0)").replace(
        b"blockIdx.y * blockDim.y + threadIdx.y", b"get_global_id(1)")
    res = run_pass(make_pass("stencil-registers", {"cols": "2"}), cl, "opencl")
    assert not isinstance(res, Applied) and "float2/float4" in res.reason


@pytest.mark.slow
@pytest.mark.parametrize("w,h,cols,factor,offset", [(40, 29, 4, 8, 0), (40, 29, 4, 8, 1), (37, 29, 4, 4, 0),
                                                    (38, 31, 2, 8, 0), (37, 23, 2, 8, 1)])
def test_zoo_conv_with_columns_computes_what_the_original_does(tmp_path: Path, w: int, h: int, cols: int, factor: int,
                                                               offset: int) -> None:
    before = _zoo("conv2d_5x5", (("W", w), ("H", h)))
    grid, block = (-(-w * h // 256), 1, 1), (256, 1, 1)
    pipeline = f"delinearize-2d,stencil-registers{{factor={factor} cols={cols}}}"
    after, launch, _ = _apply(before, "conv2d_5x5", pipeline, grid, block, {"W": w, "H": h})
    counts = {"img": w * h, "k": 25, "out": w * h}
    launches = (Launch(grid, block), launch)
    assert same_outputs(tmp_path, "conv2d_5x5", before, after, launches, counts, {}, offset=offset) == "SAME"
    if offset == 0 and w % cols == 0:  # the word path is taken: a word one column off must show
        word = b"*(const float2*)&img[W * gy + xbase - 2]"
        assert word in after
        off = after.replace(word, b"*(const float2*)&img[W * gy + xbase - 1]")
        assert same_outputs(tmp_path, "conv2d_5x5", before, off, launches, counts, {}, offset=offset) != "SAME"


def test_a_body_without_a_sum_loop_keeps_the_window_first() -> None:
    """jacobi2d's one guarded store has no `acc = init; for (...)` to stream: the window is loaded before the points."""
    _, _, notes = _apply(_zoo("jacobi2d", ()), "jacobi2d", "stencil-registers{factor=8 cols=4}", (64, 256, 1), (32, 8, 1))
    assert "window loaded first: no `T acc = init;` followed by a loop" in notes[-1]


FILT = b"#ifndef FILT\n#define FILT\nstatic const float filt[9] = {0.05f, 0.1f, 0.05f, 0.1f, 0.4f, 0.1f, 0.05f, 0.1f, 0.05f};\n#endif"


@pytest.mark.slow
@pytest.mark.parametrize("w,h,cols,factor,offset", [(40, 29, 4, 8, 0), (37, 23, 4, 4, 1), (38, 31, 2, 8, 0)])
def test_zoo_conv3x3_streamed_computes_what_the_original_does(tmp_path: Path, w: int, h: int, cols: int, factor: int,
                                                             offset: int) -> None:
    """Rows streamed into the sums under the original's per-point padding test (`int xx = x + dx, yy = y + dy;` inside
    the loop), the points past the right and bottom edges computed but not stored; a row's sums stored as one word
    where aligned (a word with two lanes swapped must show)."""
    before = _zoo("conv2d_3x3", (("W", w), ("H", h))).replace(b"__constant__ float filt[9];", FILT)
    grid, block = (-(-w // 16), -(-h // 16), 1), (16, 16, 1)
    after, launch, notes = _apply(before, "conv2d_3x3", f"stencil-registers{{factor={factor} cols={cols}}}", grid, block)
    assert "rows streamed into the sums" in notes[-1]
    counts = {"img": w * h, "out": w * h}
    launches = (Launch(grid, block), launch)
    assert same_outputs(tmp_path, "conv2d_3x3", before, after, launches, counts, {}, offset=offset) == "SAME"
    if offset == 0 and w % cols == 0:
        word = b"s_a[cy][0], s_a[cy][1]"
        assert word in after
        swapped = after.replace(word, b"s_a[cy][1], s_a[cy][0]")
        assert same_outputs(tmp_path, "conv2d_3x3", before, swapped, launches, counts, {}, offset=offset) != "SAME"


GATHER = b"""__global__ void wconv(const float* in, const float* wt, const int* sel, float* out, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < 1 || x >= w - 1 || y < 1 || y >= h - 1)
        return;
    float s = 0.0f;
    for (int i = -1; i <= 1; i++)
        s += wt[sel[x] + i] * in[(y + i) * w + x];
    out[y * w + x] = s;
}
"""


@pytest.mark.parametrize("src,note", [
    (GATHER, "window loaded first: the loop reads wt[sel[x] + i] at a point's own index"),  # sel[x] past the guards
    (GATHER.replace(b"wt[sel[x] + i]", b"wt[i + 1]"), "wt in registers, rows as words where aligned; rows streamed"),
    (GATHER.replace(b"s += wt[sel[x] + i] * in[(y + i) * w + x];", b"{ s += wt[i + 1] * in[(y + i) * w + x]; out[y * w + x] = s; }"),
     "window loaded first: the loop writes out[y * w + x]"),
])
def test_streaming_only_where_the_sums_touch_registers_alone(src: bytes, note: str) -> None:
    res = run_pass(make_pass("stencil-registers", {"cols": "4"}), src, "cuda")
    assert isinstance(res, Applied) and note in res.note, res
