"""The one dim3 reader (s2s.lang.dim3, tree-sitter): which names a host function sees as dim3 variables, and a launch's
grid and block split into components, on the shapes a regular expression over the text got wrong."""
from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import needs_nvcc
from test_reintegrate_cuda import _plant

from s2s.extract.mep_writer import make_mep
from s2s.lang.dim3 import declared_types, is_dim3
from s2s.lang.parsing import parse
from s2s.mep.manifest import load, save
from s2s.reintegrate.splice import plan

HOST = b"""\
dim3 G(64, 64);
dim3 make_grid(int n);
struct Cfg { dim3 grid; int n; };
void run(int n, int m, const dim3& pb, dim3* pp) {
  dim3 g((n + 15) / 16, m / 16), b(16, 16);
  dim3 /* the grid */ grid2(n), // one block per row, then the rest
       blk(16);
  // dim3 threads(16, 16);
  int threads = 256;
  auto a3 = dim3(n / 4);
  const dim3 c3 = {1, 2, 3};
  dim3 d;
  int G = 3;
}
void other() {}
"""


def _scopes() -> tuple:  # type: ignore[type-arg]
    root = parse(HOST, "cuda").root_node
    fns = [c for c in root.named_children if c.type == "function_definition"]
    return root, fns[0], fns[1]


def test_declarations_are_read_from_the_tree() -> None:
    root, run, _other = _scopes()
    local = declared_types(run, HOST)
    assert {n for n, t in local.items() if t == "dim3"} == {"pb", "g", "b", "grid2", "blk", "a3", "c3", "d"}
    assert local["threads"] == "int" and local["pp"] == "dim3*"  # the commented-out dim3 declares nothing
    assert declared_types(root, HOST) == {"G": "dim3"}  # a prototype and a struct's field are no variables


def test_a_dim3_built_from_array_elements_is_a_variable() -> None:
    """`dim3 threads(local[0], local[1]);` reads as a prototype with parameters of type `local` and abstract declarators
    `[0]`: it was taken for a function, so a reintegrated launch wrote `grids.x * threads` (no operator* for dim3; a
    development application's reintegrated build failed)."""
    text = b"void f(unsigned n) { unsigned local[2] = {16, 16}; dim3 threads(local[0], local[1]); dim3 p(int k); }"
    root = parse(text, "cuda").root_node
    local = declared_types(root.named_children[0], text)
    assert local["threads"] == "dim3" and "p" not in local


def test_a_local_hides_a_file_scope_dim3() -> None:
    root, run, other = _scopes()
    assert not is_dim3("G", run, root, HOST)  # `int G = 3;` in run
    assert is_dim3("G", other, root, HOST) and is_dim3("G", None, root, HOST)
    assert not is_dim3("grid", run, root, HOST) and not is_dim3("threads", run, root, HOST)


def test_only_declarations_visible_at_the_launch_count() -> None:
    """An int launched first, then a dim3 of the same name in an inner block, then an int again after it."""
    text = b"void f(float* d) { int grid = 16; k<<<grid, 256>>>(d); { dim3 grid(16); k<<<grid, 256>>>(d); } " \
           b"k<<<grid, 256>>>(d); }"
    root = parse(text, "cuda").root_node
    fn = root.named_children[0]
    first, second, third = (i for i in range(len(text)) if text.startswith(b"<<<grid", i))
    assert [is_dim3("grid", fn, root, text, at + 3) for at in (first, second, third)] == [False, True, False]


def test_parboil_declarators_with_expressions_in_their_initializers() -> None:
    """`dim3 grid( m/TILE_SZ, n/TILE_SZ ), threads( TILE_SZ, TILE_SZ );` (Parboil sgemm): both are dim3 variables."""
    text = b"void f(int m, int n) { dim3 grid( m/TILE_SZ, n/TILE_SZ ), threads( TILE_SZ, TILE_SZ ); int bs = 3; " \
           b"dim3 g2(n / bs, 1); dim3 b3 = dim3(4, 4); }"
    root = parse(text, "cuda").root_node
    fn = root.named_children[0]
    assert {n for n, t in declared_types(fn, text).items() if t == "dim3"} == {"grid", "threads", "g2", "b3"}


APP = """\
#include <cuda_runtime.h>
#define N 4096
#define MAXI(a, b) ((a) > (b) ? (a) : (b))

dim3 g_grid(N / 256);

__global__ void scale(float* x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}

void run(float* d)
{
    // dim3 threads(256);  the old launch shape
    int threads = 256;
    scale<<<g_grid, threads>>>(d, 2.0f, N);
}

void run_commented(float* d)
{
    dim3 /* the grid */ grid(N / 256), // one block per 256 elements, rounded down
         block(256);
    scale<<<grid, block>>>(d, 2.0f, N);
}

void run_nested(float* d)
{
    scale<<<dim3(MAXI(N / 256, 1), 1), 256 /* threads */>>>(d, 2.0f, N);
}

void run_scoped(float* d)
{
    {
        dim3 blocks(N / 256);
        scale<<<blocks, 256>>>(d, 2.0f, N);
    }
    int blocks = N / 256;
    scale<<<blocks, 256>>>(d, 2.0f, N);
}
"""


def _reintegrated(tmp_path: Path) -> tuple[Path, str]:
    tree = tmp_path / "app"
    tree.mkdir()
    (tree / "app.cu").write_text(APP)
    mep = tmp_path / "mep"
    make_mep(str(tree), "scale", str(mep))
    m = load(mep)  # the three sites' expressions differ, so extraction leaves the launch FILL-IN: filled as a user would
    save(replace(m, launch=replace(m.launch, grid=(16, 1, 1), block=(256, 1, 1), shared_mem=0)), mep)
    _plant(mep, "launch-config{block=128}", 1.2)
    return tree, plan(mep, "best", str(tree)).files[(tree / "app.cu").resolve()][1].decode()


def test_launch_sites_read_dim3_the_way_the_compiler_does(tmp_path: Path) -> None:
    """A file-scope dim3 (was taken for a number: `(g_grid) * ...` does not compile), an int whose name a commented-out
    dim3 declared (was read as `threads.x`), a comment between `dim3` and the name and one holding a comma (neither name
    was seen), a grid whose first argument holds a comma (was split inside MAXI), and an int of the name a dim3 had in
    an inner block before it (was read as a dim3)."""
    _tree, new = _reintegrated(tmp_path)
    assert "scale<<<dim3(((g_grid.x) * ((threads)) + 127) / 128, (g_grid.y) * (1), (g_grid.z) * (1)), dim3(128, 1, 1)>>>" in new
    assert "scale<<<dim3(((grid.x) * (block.x) + 127) / 128, (grid.y) * (block.y), (grid.z) * (block.z)), " \
           "dim3(128, 1, 1)>>>" in new
    assert "scale<<<dim3(((MAXI(N / 256, 1)) * ((256)) + 127) / 128, (1) * (1), (1) * (1)), dim3(128, 1, 1) /* threads */>>>" \
           in new
    assert "scale<<<dim3(((blocks.x) * ((256)) + 127) / 128, (blocks.y) * (1), (blocks.z) * (1)), dim3(128, 1, 1)>>>" in new
    assert "scale<<<dim3((((blocks)) * ((256)) + 127) / 128, (1) * (1), (1) * (1)), dim3(128, 1, 1)>>>" in new


@pytest.mark.slow
@needs_nvcc
def test_rewritten_launch_sites_compile(tmp_path: Path) -> None:
    tree, new = _reintegrated(tmp_path)
    (tree / "app.cu").write_text(new)
    proc = subprocess.run(["nvcc", "-c", "-arch=sm_90", "app.cu", "-o", "app.o"], cwd=tree, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
