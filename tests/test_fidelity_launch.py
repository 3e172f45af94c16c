"""Issue 29, class 1: launch values and template arguments are exact or FILL-IN, never wrong.

Spellings that once gave wrong values: grid and block set by a host helper through references or pointers (read as
the `dim3 g;` default [1, 1, 1]), a `for` whose update clause doubles the block (read as its second value), template
arguments of a host function template chosen by a run-time `if` (read as the first call's), a host variable left as
a template argument, a template kernel launched without template arguments. Written here from scratch.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from s2s.extract.mep_writer import make_mep
from s2s.mep.manifest import FILL_IN

APP = """#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#define LEN 4096
__global__ void by_ref(float* a, int n) { a[blockIdx.x * blockDim.x + threadIdx.x] = n; }
__global__ void by_ptr(float* a, int n) { a[blockIdx.x * blockDim.x + threadIdx.x] = n; }
__global__ void by_env(float* a, int n) { a[blockIdx.x * blockDim.x + threadIdx.x] = n; }
__global__ void by_ref_maybe(float* a, int n) { a[blockIdx.x * blockDim.x + threadIdx.x] = n; }
__global__ void scalar_by_ref(float* a, int n) { a[0] = n; }
__global__ void doubled(float* a, int n) { a[threadIdx.x] = n; }
__global__ void halved(float* a, int n) { a[blockIdx.x] = n; }
__global__ void merge_far(float* a, int n) { a[blockIdx.x] = n; }
__global__ void merge_near(float* a, int n) { a[blockIdx.x] = n; }
__global__ void merge_any(float* a, int n) { a[blockIdx.x] = n; }
template <int TX, int TY> __global__ void tiled(float* a) { a[blockIdx.x * TX + threadIdx.x] = TY; }
template <int B> __global__ void sized_by_host(float* a) { a[threadIdx.x] = B; }
template <int B> __global__ void sized_by_const(float* a) { a[threadIdx.x] = B; }
template <typename T> __global__ void typed(T* a, int n) { a[threadIdx.x] = n; }
template <int B> __global__ void untyped(float* a) { a[threadIdx.x] = B; }
template <int B = 32> __global__ void defaulted(float* a) { a[threadIdx.x] = B; }
template <typename T> __global__ void halve(T* a) { a[threadIdx.x] /= 2; }
enum Mode { FAST_MODE, SLOW_MODE };
template <Mode M> __global__ void moded(float* a) { a[threadIdx.x] = M == FAST_MODE ? 1.f : 2.f; }

static void layout_ref(int n, dim3& g, dim3& b) { b = dim3(128); g = dim3((n + 127) / 128, 2); }
static void layout_ptr(int n, dim3* g, dim3* b) { b->x = 256; g->x = (n + 255) / 256; }
static void layout_env(int n, dim3& g, dim3& b) { b.x = atoi(getenv("BLOCK")); g.x = n / b.x; }
static void read_size(int& n) { if (fscanf(stdin, "%d", &n) != 1) n = 1; }
static int image_width(const char* path) { FILE* f = fopen(path, "r"); int w = 0; if (f) fscanf(f, "%d", &w); return w; }

template <int TX> void run_tiled(float* d) { tiled<TX, 8><<<LEN / TX, TX>>>(d); }
template <class T> void run_halve(T* d) { halve<<<1, 64>>>(d); }
template <int B> __global__ void known(float* a) { a[blockIdx.x * B + threadIdx.x] = B; }
template <int B> void run_known(float* d) { known<B><<<LEN / B, B>>>(d); }
template <typename T> __global__ void deduced_k(T* a, int n) { a[threadIdx.x] = n; }
template <typename T> void run_deduced(const T* x, T* d, int n) { deduced_k<<<n / 64, 64>>>(d, n); }
template <typename T> __global__ void mixed_k(T* a) { a[threadIdx.x] = 1; }
template <typename T> __global__ void via_alias(T* a) { a[threadIdx.x] = 1; }
#ifndef REAL_T
#define REAL_T float
#endif
template <typename T> void run_mixed(T* d) { mixed_k<<<1, 64>>>(d); }

template <int N, bool Z> struct lam_traits { static constexpr int n = N; static constexpr bool z = Z; };
template <class Tr> __global__ void by_lambda(float* a) { a[threadIdx.x] = Tr::z ? Tr::n : 0; }
void dispatch_lambda(float* d, bool z) {  // C++20 template lambda: the instance depends on z at run time
  auto go = [&]<bool Z>() { using Tr = lam_traits<64, Z>; by_lambda<Tr><<<1, 64>>>(d); };
  if (z) go.operator()<true>(); else go.operator()<false>();
}
int main(int argc, char** argv) {
  float* d;
  cudaMalloc((void**)&d, LEN * sizeof(float));
  dim3 g1, b1;
  layout_ref(LEN, g1, b1);
  by_ref<<<g1, b1>>>(d, LEN);
  dim3 g2, b2;
  layout_ptr(LEN, &g2, &b2);
  by_ptr<<<g2, b2>>>(d, LEN);
  dim3 g3, b3;
  layout_env(LEN, g3, b3);
  by_env<<<g3, b3>>>(d, LEN);
  dim3 g4(1), b4(64);
  if (image_width("in.pgm") > 1024) layout_ref(LEN, g4, b4);
  by_ref_maybe<<<g4, b4>>>(d, LEN);
  int n = 0;
  read_size(n);
  scalar_by_ref<<<1, 1>>>(d, n);
  int bs;
  for (bs = 64; bs <= 1024; bs = bs * 2) doubled<<<LEN / bs, bs>>>(d, bs);
  int blocks;
  for (blocks = LEN / 64; blocks > 1; blocks = blocks / 2) halved<<<blocks, 64>>>(d, blocks);
  for (unsigned s = LEN / 2; s > 0; s >>= 1) {  // a sort's merge steps: the far ones, then the near ones
    if (s >= 512) {
      merge_far<<<LEN / 256, 256>>>(d, s);
    } else {
      merge_near<<<LEN / 512, 256>>>(d, s);
      break;
    }
  }
  for (unsigned s = LEN / 2; s > 0; s >>= 1)
    if (image_width("in.pgm") > s) merge_any<<<1, 64>>>(d, s);
  if (image_width("in.pgm") > 1024) run_tiled<192>(d);
  else run_tiled<64>(d);
  int dimBlock = atoi(getenv("BLOCK"));
  sized_by_host<dimBlock><<<1, 64>>>(d);
  constexpr int FIXED_BLOCK = 128;
  sized_by_const<FIXED_BLOCK><<<1, 64>>>(d);
  moded<FAST_MODE><<<1, 64>>>(d);
  typed<<<1, 64>>>(d, LEN);
  untyped<<<1, 64>>>(d);
  defaulted<<<1, 64>>>(d);
  run_halve<float>(d);
  if (LEN > 1024) run_known<128>(d);
  else run_known<32>(d);
  double* dd;
  cudaMalloc((void**)&dd, LEN * sizeof(double));
  run_halve<double>(dd);
  run_deduced(dd, dd, LEN);  // T deduced from the arguments' declared types
  run_mixed(dd);  // the first call that runs: T is double, not the float of the explicit call below
  run_mixed<float>(d);
  dispatch_lambda(d, argc > 1);
  REAL_T* rd;  // a type macro of the host code: the kernel file need not define it
  cudaMalloc((void**)&rd, LEN * sizeof(REAL_T));
  via_alias<<<LEN / 64, 64>>>(rd);
  return 0;
}
"""


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("launch") / "app"
    root.mkdir()
    (root / "main.cu").write_text(APP)
    return root


def _mep(tree: Path, tmp_path: Path, kernel: str):  # type: ignore[no-untyped-def]
    return make_mep(str(tree), kernel, str(tmp_path / kernel))[1]


def test_grid_and_block_set_by_a_helper_through_references(tree: Path, tmp_path: Path) -> None:
    m = _mep(tree, tmp_path, "by_ref")
    assert (m.launch.grid, m.launch.block) == ((32, 2, 1), (128, 1, 1)), m.launch.source


def test_grid_and_block_set_by_a_helper_through_pointers(tree: Path, tmp_path: Path) -> None:
    m = _mep(tree, tmp_path, "by_ptr")
    assert (m.launch.grid, m.launch.block) == ((16, 1, 1), (256, 1, 1)), m.launch.source


@pytest.mark.parametrize("kernel", ["by_env", "by_ref_maybe"])
def test_helper_values_not_known_before_the_run_are_fill_in(tree: Path, tmp_path: Path, kernel: str) -> None:
    m = _mep(tree, tmp_path, kernel)
    assert FILL_IN in m.launch.grid and FILL_IN in m.launch.block, m.launch.source  # never the dim3 default


def test_scalar_passed_by_reference_to_a_helper_is_fill_in(tree: Path, tmp_path: Path) -> None:
    m = _mep(tree, tmp_path, "scalar_by_ref")
    assert {p.name: p.value for p in m.params}["n"] == FILL_IN  # not the 0 it was declared with


@pytest.mark.parametrize("kernel", ["doubled", "halved"])
def test_for_update_clause_does_not_reach_the_first_launch(tree: Path, tmp_path: Path, kernel: str) -> None:
    m = _mep(tree, tmp_path, kernel)
    value = {p.name: p.value for p in m.params}["n"]
    assert value == 64, m.launch.source  # the first launch's value (64 both times): the update runs after it
    assert m.launch.block[0] == 64 and m.launch.grid[0] == 64, m.launch.source
    assert "the first launch of the loop at main.cu:" in m.launch.source, m.launch.source


def test_a_launch_the_first_trip_does_not_reach_is_fill_in(tree: Path, tmp_path: Path) -> None:
    """`for (s = LEN / 2; ...; s >>= 1) if (s >= 512) far(s); else near(s);`: the first trip's value (2048) is far's
    first, not near's (256, three trips later: the development particles' bitonic merge read 512 for 256); a
    condition not known before the run leaves the value FILL-IN."""
    far = _mep(tree, tmp_path, "merge_far")
    assert {p.name: p.value for p in far.params}["n"] == 2048, far.launch.source
    for kernel in ("merge_near", "merge_any"):
        m = _mep(tree, tmp_path, kernel)
        assert {p.name: p.value for p in m.params}["n"] == FILL_IN, m.params


def test_template_arguments_chosen_at_run_time_are_fill_in(tree: Path, tmp_path: Path) -> None:
    m = _mep(tree, tmp_path, "tiled")
    assert m.template_args == FILL_IN, m.template_args  # not <192, 8>, the first call's
    assert any("template_args" in u for u in m.unfilled())


def test_host_variable_as_template_argument(tree: Path, tmp_path: Path) -> None:
    out, m, _ = make_mep(str(tree), "sized_by_host", str(tmp_path / "host"))
    assert m.template_args == FILL_IN
    assert "dimBlock" not in (out / m.kernel_file).read_text()  # no instantiation the kernel file cannot compile
    out, m, _ = make_mep(str(tree), "sized_by_const", str(tmp_path / "const"))
    assert m.template_args == "128" and "FIXED_BLOCK" not in (out / m.kernel_file).read_text()  # a host constexpr
    assert _mep(tree, tmp_path, "moded").template_args == "FAST_MODE"  # an enumerator is no host variable


def test_template_arguments_naming_a_template_lambdas_parameters_are_fill_in(tree: Path, tmp_path: Path) -> None:
    m = _mep(tree, tmp_path, "by_lambda")  # not the text `lam_traits<64, Z>`: Z is the lambda's, chosen at run time
    assert m.template_args == FILL_IN, m.template_args
    assert any("template lambda" in n for n in m.notes), m.notes


def test_template_kernel_launched_without_template_arguments(tree: Path, tmp_path: Path) -> None:
    m = _mep(tree, tmp_path, "typed")
    assert m.template_args == "float" and {p.name: p.count for p in m.params}["a"] == 4096
    m = _mep(tree, tmp_path, "untyped")
    assert m.template_args == FILL_IN and any("template_args" in u for u in m.unfilled())
    assert _mep(tree, tmp_path, "defaulted").template_args == ""  # its default is what the launch instantiates
    assert _mep(tree, tmp_path, "halve").template_args == "float"  # T of run_halve<float>, not the name T: both calls
    # run whenever main does, so the first is a launch that happens


def test_template_parameter_of_the_launching_function_in_the_launch_configuration(tree: Path, tmp_path: Path) -> None:
    m = _mep(tree, tmp_path, "known")  # the branch that runs is known (LEN > 1024): B is 128 in <<<LEN / B, B>>>
    assert m.template_args == "128" and (m.launch.grid, m.launch.block) == ((32, 1, 1), (128, 1, 1)), m.launch.source
    m = _mep(tree, tmp_path, "tiled")  # not known which call runs: the configuration is not known either
    assert FILL_IN in m.launch.grid and FILL_IN in m.launch.block, m.launch.source


def test_template_parameter_of_the_launching_function_deduced_at_its_call(tree: Path, tmp_path: Path) -> None:
    m = _mep(tree, tmp_path, "deduced_k")  # run_deduced(dd, dd, LEN): T is double, from dd's declared type
    assert m.template_args == "double" and {p.name: p.count for p in m.params}["a"] == 4096, m.params
    assert _mep(tree, tmp_path, "mixed_k").template_args == "double"  # not the explicit call's float: it runs second
    assert _mep(tree, tmp_path, "via_alias").template_args == "float"  # REAL_T's type: no host macro in the harness


LISTS = """#include <cuda_runtime.h>
__global__ void listed(float* a) { a[blockIdx.x * blockDim.x + threadIdx.x] = 1.f; }
__global__ void passed_on(float* a) { a[threadIdx.x] = 2.f; }
__global__ void tabled(int* s, float* r) { r[threadIdx.x] *= s[threadIdx.x]; }
static void fill_sizes(size_t* s) { s[0] = 64; }
int main() {
  size_t gws[2] = {4096, 2};
  size_t lws[2] = {256};  // lws[1] is 0... then set below
  lws[1] = 2;
  float* d;
  cudaMalloc((void**)&d, 8192 * sizeof(float));
  listed<<<dim3(gws[0] / lws[0], gws[1] / lws[1]), dim3(lws[0], lws[1])>>>(d);
  size_t other[1] = {32};
  fill_sizes(other);
  passed_on<<<1, other[0]>>>(d);
  int steps[] = {4, 8, 20, 28};
  float rates[] = {.5f, .25f,
                   .125f};
  int* ds;
  float* dr;
  cudaMalloc((void**)&ds, sizeof(steps));
  cudaMalloc((void**)&dr, sizeof(rates));
  tabled<<<1, 3>>>(ds, dr);
  return 0;
}
"""


def test_elements_of_an_array_initialized_with_a_brace_list(tmp_path: Path) -> None:
    """`size_t gws[2] = {4096, 2};` as OpenCL ports write the global and local sizes: `gws[0] / lws[0]` is known; an
    array handed to a function that may write it stays unknown (FILL-IN); `sizeof(steps)` of `int steps[] = {...}` is
    its list's length times the element's size."""
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "main.cu").write_text(LISTS)
    m = make_mep(str(tmp_path / "app"), "listed", str(tmp_path / "m"))[1]
    assert (m.launch.grid, m.launch.block) == ((16, 1, 1), (256, 2, 1)), m.launch.source
    m = make_mep(str(tmp_path / "app"), "passed_on", str(tmp_path / "m2"))[1]
    assert FILL_IN in m.launch.block, m.launch.source
    m = make_mep(str(tmp_path / "app"), "tabled", str(tmp_path / "m3"))[1]  # sizeof of `int steps[] = {...}`
    assert {p.name: p.count for p in m.params} == {"s": 4, "r": 3}, m.params
