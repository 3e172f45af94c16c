"""Issue 11's defect classes, one small application of our own each: static inference is exact or says FILL-IN.

Each fixture is the shape seen in real code (a tree of several programs, late host assignments, comments and
#ifdef lines inside parameter lists, conditional includes, names that exist but look odd, paths that share a
suffix), written here from scratch.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import tomllib
from conftest import needs_nvcc, run_cli

from s2s.base.errors import UserError
from s2s.extract.mep_writer import make_mep
from s2s.mep.manifest import FILL_IN
from s2s.scan.tree import find_kernel, scan_tree


def _tree(root: Path, files: dict[str, str], newline: str = "\n") -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(text.replace("\n", newline).encode())
    return root


def _params(m):  # type: ignore[no-untyped-def]
    return {p.name: p for p in m.params}


# -- 1. macros as the kernel's translation unit sees them -----------------------------------------------------------
SIZES_APP = {
    # another program of the same suite, first in the tree: its N must never be used
    "aaa_other/defs.h": "#define N 7\n#define REAL_T float\n",
    "aaa_other/other.cu": '#include "defs.h"\n__global__ void other(REAL_T* a) { a[0] = N; }\n',
    "stencil/sizes.h": ("#ifdef SIZE_TINY\n#define N 16\n#elif defined(SIZE_SMALL)\n#define N 64\n#else\n#define N 4096\n"
                        "#endif\n#define M 2\n"),
    "stencil/main.cu": """#include <cuda_runtime.h>
#include "sizes.h"
#ifndef REAL_T
#define REAL_T double
#endif
__global__ void scale(REAL_T* a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] *= 2; }
int main() {
  REAL_T* d_a;
  cudaMalloc((void **)&d_a, sizeof(REAL_T) * N * M);
  scale<<<N * M / 256, 256>>>(d_a, N * M);
  return 0;
}
""",
}


def test_macros_come_from_the_unit_and_its_default_branch(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "app", SIZES_APP)
    _, m, _ = make_mep(str(tree), "scale", str(tmp_path / "mep"))
    p = _params(m)
    assert p["n"].value == 4096 * 2, p["n"].source  # the #else branch the default build takes, not 16 nor aaa_other's 7
    assert p["a"].elem == "double" and p["a"].count == 4096 * 2, p["a"].source  # sizeof(REAL_T) with REAL_T a macro
    assert m.launch.grid == (32, 1, 1)
    assert "stencil/sizes.h" in m.sizes["N"]["from"] and "aaa_other" not in str(m.sizes)  # type: ignore[operator]


def test_macros_follow_the_units_flags(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "app", SIZES_APP)
    entry = {"directory": str(tree), "file": "stencil/main.cu", "arguments": ["nvcc", "-DSIZE_SMALL", "-c", "stencil/main.cu"]}
    (tree / "compile_commands.json").write_text(json.dumps([entry]))
    _, m, _ = make_mep(str(tree), "scale", str(tmp_path / "mep"), mode="names")
    assert _params(m)["n"].value == 64 * 2, _params(m)["n"].source


def test_launch_of_another_programs_kernel_of_the_same_name_is_not_used(tmp_path: Path) -> None:
    kernel = "__global__ void testKernel(float* a) { a[threadIdx.x] = 1; }\n"
    tree = _tree(tmp_path / "suite", {
        "aaa/main.cu": kernel + "int main() { float* d; cudaMalloc((void**)&d, 7 * sizeof(float)); testKernel<<<1, 7>>>(d); }\n",
        "bbb/main.cu": kernel + "int main() { float* d; cudaMalloc((void**)&d, 64 * sizeof(float)); testKernel<<<2, 32>>>(d); }\n",
    })
    _, m, _ = make_mep(str(tree), "bbb/main.cu:testKernel", str(tmp_path / "m"))
    assert m.launch.grid == (2, 1, 1) and m.launch.block == (32, 1, 1) and _params(m)["a"].count == 64, m.launch.source


# -- 2. host values follow control flow --------------------------------------------------------------------------
FLOW_APP = {"flow.cu": """#include <cuda_runtime.h>
#include <stdlib.h>
#define LEN 1000
int nblk = 0;
int nblk2 = 0;
dim3 g2(64, 64, 1);
static void init_sizes(int* nx) { *nx = atoi(getenv("NX")); }
__global__ void k_global(float* a, int n) { a[blockIdx.x] = n; }
__global__ void k_fields(float* a) { a[threadIdx.x] = 1; }
__global__ void k_loop(float* a, int b) { a[threadIdx.x] = b; }
__global__ void k_sentinel(float* a, int m) { a[0] = m; }
__global__ void k_file_dim(float* a) { extern __shared__ float s[]; s[0] = 1; a[blockIdx.y] = s[0]; }
__global__ void k_ptr_init(float* a, int nx) { a[0] = nx; }
__global__ void k_global2(float* a) { a[blockIdx.x] = 1; }
int main(int argc, char** argv) {
  int n = LEN * 32;
  float* d;
  cudaMalloc((void**)&d, sizeof(float) * n);
  nblk = n / 32;
  k_global<<<nblk, 32>>>(d, n);
  dim3 threads(32);
  threads.x = LEN / 128 + 1;
  k_fields<<<1, threads>>>(d);
  for (int b = 32; b <= 256; b *= 2) k_loop<<<1, b>>>(d, b);
  int m = -1;
  if (argc > 1) m = atoi(argv[1]);
  k_sentinel<<<1, 1>>>(d, m);
  int shm;
  init_sizes(&shm);
  k_file_dim<<<g2, 1, shm>>>(d);
  int nx = 0;
  init_sizes(&nx);
  k_ptr_init<<<1, 1>>>(d, nx);
  nblk2 = rand() % 7 + 1;
  k_global2<<<nblk2, 32>>>(d);
  return 0;
}
"""}


@pytest.fixture(scope="module")
def flow_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _tree(tmp_path_factory.mktemp("flow") / "app", FLOW_APP)


def test_assignment_in_the_launching_function_beats_the_global_initializer(flow_tree: Path, tmp_path: Path) -> None:
    _, m, _ = make_mep(str(flow_tree), "k_global", str(tmp_path / "m"))
    assert m.launch.grid == (1000, 1, 1), m.launch.source  # nblk = n / 32 before the launch, not `int nblk = 0`
    assert _params(m)["n"].value == 32000 and _params(m)["a"].count == 32000


def test_unknown_assignment_in_the_launching_function_is_fill_in_not_the_global_initializer(flow_tree: Path,
                                                                                           tmp_path: Path) -> None:
    _, m, _ = make_mep(str(flow_tree), "k_global2", str(tmp_path / "m"))
    assert m.launch.grid[0] == FILL_IN, m.launch.source  # nblk2 = rand() ... before the launch: not `int nblk2 = 0`


def test_dim3_fields_set_after_construction(flow_tree: Path, tmp_path: Path) -> None:
    _, m, _ = make_mep(str(flow_tree), "k_fields", str(tmp_path / "m"))
    assert m.launch.block == (1000 // 128 + 1, 1, 1), m.launch.source


def test_loop_variable_is_its_first_value_not_its_increment(flow_tree: Path, tmp_path: Path) -> None:
    _, m, _ = make_mep(str(flow_tree), "k_loop", str(tmp_path / "m"))
    assert _params(m)["b"].value == 32 and m.launch.block == (32, 1, 1), m.launch.source  # the first launch's b


def test_sentinel_overwritten_from_argv_is_fill_in(flow_tree: Path, tmp_path: Path) -> None:
    _, m, _ = make_mep(str(flow_tree), "k_sentinel", str(tmp_path / "m"))
    assert _params(m)["m"].value == FILL_IN, _params(m)["m"].source


def test_file_scope_dim3_and_unknown_dynamic_shared_memory(flow_tree: Path, tmp_path: Path) -> None:
    out, m, _ = make_mep(str(flow_tree), "k_file_dim", str(tmp_path / "m"))
    assert m.launch.grid == (64, 64, 1), m.launch.source
    assert m.launch.shared_mem == FILL_IN and any("shared" in u for u in m.unfilled())  # never a silent 0
    assert tomllib.loads((out / "mep.toml").read_text())["launch"]["shared_mem"] == FILL_IN


def test_scalar_set_through_a_pointer_is_fill_in_never_wrong(flow_tree: Path, tmp_path: Path) -> None:
    _, m, _ = make_mep(str(flow_tree), "k_ptr_init", str(tmp_path / "m"))
    assert _params(m)["nx"].value == FILL_IN, _params(m)["nx"].source  # not the 0 it was declared with


SETUP_APP = {"setup.cu": """#include <cuda_runtime.h>
#define P 12
static float* g_buf;
static void setup() { size_t s = sizeof(float) * 5; s *= P; cudaMalloc((void**)&g_buf, s); }
__global__ void k_setup(float* a) { a[threadIdx.x] = 0; }
__global__ void k_acc(float* a, int n) { a[0] = n; }
int main() {
  setup();
  k_setup<<<1, 60>>>(g_buf);
  int n = 1;
  for (int i = 0; i < 3; ++i) { n += 2; k_acc<<<1, 1>>>(g_buf, n); }
  return 0;
}
"""}


def test_global_buffer_allocated_in_a_setup_function_and_updates_outside_loops(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "app", SETUP_APP)
    _, m, _ = make_mep(str(tree), "k_setup", str(tmp_path / "a"))
    assert _params(m)["a"].count == 60, _params(m)["a"].source  # sizeof(float) * 5, then s *= P
    _, m, _ = make_mep(str(tree), "k_acc", str(tmp_path / "b"))
    assert _params(m)["n"].value == FILL_IN, _params(m)["n"].source  # n += 2 in the loop around the launch


# -- 3. comments and preprocessor lines inside parameter and argument lists; CRLF ------------------------------------
PARAMS_APP = {"solver.cu": """#include <cuda_runtime.h>
#define NX 256 // cells
#ifdef DOUBLE_PRECISION
typedef double real;
#else
typedef float real;
#endif
__global__ void relax(
#ifdef DOUBLE_PRECISION
    double* u,   // the field
#else
    float* u,    // the field
#endif
    const float* f, /* the source, "quoted" */
    int n)         // its length
{ int i = threadIdx.x; if (i < n) u[i] += f[i]; }
int main() {
  float *d_u, *d_f;
  cudaMalloc((void**)&d_u, NX * sizeof(float));
  cudaMalloc((void**)&d_f, NX * sizeof(float));
  relax<<<1, NX>>>(d_u,   // the field
                   d_f,   /* the source */
                   NX);   // length
  return 0;
}
"""}


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_comments_and_ifdef_lines_stay_out_of_parameter_and_argument_lists(tmp_path: Path, newline: str) -> None:
    tree = _tree(tmp_path / "app", PARAMS_APP, newline)
    out, m, _ = make_mep(str(tree), "relax", str(tmp_path / "m"))
    p = _params(m)
    assert list(p) == ["u", "f", "n"], [x.type for x in m.params]
    assert p["u"].elem == "float" and p["u"].count == 256 and p["f"].count == 256 and p["n"].value == 256
    assert "//" not in p["u"].type and "#" not in p["u"].type
    doc = tomllib.loads((out / "mep.toml").read_text())  # valid TOML whatever the line endings
    assert doc["launch"]["block"] == [256, 1, 1]


def test_parameter_list_branch_follows_the_units_flags(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "app", PARAMS_APP)
    entry = {"directory": str(tree), "file": "solver.cu", "arguments": ["nvcc", "-DDOUBLE_PRECISION", "-c", "solver.cu"]}
    (tree / "compile_commands.json").write_text(json.dumps([entry]))
    _, m, _ = make_mep(str(tree), "relax", str(tmp_path / "m"), mode="names")
    p = _params(m)
    assert p["u"].elem == "double" and p["f"].elem == "float" and p["n"].value == 256


def test_mep_toml_is_valid_whatever_the_sources_line_endings_and_characters(tmp_path: Path) -> None:
    src = ("#include <cuda_runtime.h>\n#define NX 64 // \x0c form feed, \"quotes\", back\\slash\n"
           "__global__ void wide(float* u, int n) { u[threadIdx.x] = n; }\n"
           "int main() {\n  float* d_u;\n  cudaMalloc((void**)&d_u, NX * sizeof(float));\n"
           "  wide<<<dim3(NX / 32,\n             1), 32>>>(d_u,\n       NX);\n  return 0;\n}\n")
    tree = _tree(tmp_path / "app", {"w.cu": src}, "\r\n")
    out, m, _ = make_mep(str(tree), "wide", str(tmp_path / "m"))
    doc = tomllib.loads((out / "mep.toml").read_text())
    assert doc["launch"]["grid"] == [2, 1, 1] and doc["params"][1]["value"] == 64
    assert doc["launch"]["grid_expr"].replace("\r", "") == m.launch.grid_expr.replace("\r", "")


def test_only_conditionals_inside_lists_are_reduced_to_one_branch() -> None:
    from s2s.lang.textsplit import blank_directives_in_lists

    top = b"#define CHECK(x) foo((x), \\\n  bar(\n#ifdef FOO\nint a;\n#else\nint b;\n#endif\n"
    assert blank_directives_in_lists(top) == top  # a continued #define's parentheses open no list
    inside = b"void k(\n#ifdef DP\n double* u,\n#else\n float* u,\n#endif\n int n);\n"
    out = blank_directives_in_lists(inside)
    assert len(out) == len(inside) and b"float* u" in out and b"double" not in out and b"#" not in out
    assert b"double* u" in blank_directives_in_lists(inside, lambda name: name == "DP")


# -- 4. conditional includes keep their guards ----------------------------------------------------------------------
GUARDED_APP = {"app.cu": """#ifdef USE_MPI
#include <mpi.h>
#endif
#if defined(_WIN32)
#include <windows.h>
#else
#include <unistd.h>
#endif
#include "helpers_from_elsewhere.h"
#include <cuda_runtime.h>
__global__ void axpy(float* y, const float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] += a * x[i];
}
"""}


def test_conditional_includes_keep_their_guards(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "app", GUARDED_APP)
    out, m, _ = make_mep(str(tree), "axpy", str(tmp_path / "m"))
    text = (out / m.kernel_file).read_text()
    assert "#ifdef USE_MPI\n#if __has_include(<mpi.h>)" in text or "#ifdef USE_MPI\n#include <mpi.h>\n#endif" in text
    assert "#if defined(_WIN32)\n" in text and "#else\n#include <unistd.h>" in text
    assert '#if __has_include("helpers_from_elsewhere.h")' in text


@needs_nvcc
@pytest.mark.slow
def test_guarded_kernel_file_compiles_alone(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "app", GUARDED_APP)
    out, m, _ = make_mep(str(tree), "axpy", str(tmp_path / "m"))
    p = subprocess.run(["nvcc", "-arch=sm_90", "-c", str(out / m.kernel_file), "-o", str(tmp_path / "k.o")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


# -- 6. names that exist are not refused -----------------------------------------------------------------------------
NAMES_APP = {
    "common.c": "#define CLAMP_HI 4.0f\n",
    "k.cu": """#include <cuda_fp16.h>
#include <cooperative_groups.h>
#include "common.c"
namespace cg = cooperative_groups;
#if defined(FAST)
#define SQR(x) __fmul_rn((x), (x))
#else
#define SQR(x) ((x) * (x))
#endif
#define UNROLL _Pragma("unroll")
__global__ void odd_names(__half* h, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  UNROLL
  for (int k = 0; k < 4; ++k) y[i] += SQR(y[i]);
  _Pragma("unroll")
  for (int k = 0; k < 2; ++k) h[i] = __hadd(h[i], __float2half(fminf(y[i], CLAMP_HI)));
  cg::thread_block block = cg::this_thread_block();
  const int unroll_by = 2;
  #pragma unroll(unroll_by)
  for (unsigned k = 0; k < umin(2u, (unsigned)n); ++k) y[i] += (uint32_t)k;
  block.sync();
}
"""}


def test_pragma_function_macros_included_c_files_and_half_intrinsics_are_found(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "app", NAMES_APP)
    res = run_cli("extract", str(tree), "--kernel", "odd_names", "-o", str(tmp_path / "m"))
    assert res.returncode == 0, res.stderr
    text = (tmp_path / "m" / "kernel.cu").read_text()
    assert "#define CLAMP_HI" in text and "#define SQR(x) ((x) * (x))" in text
    assert "namespace cg = cooperative_groups;" in text and "#include <cstdint>" in text


@needs_nvcc
@pytest.mark.slow
def test_kernel_with_odd_names_compiles_alone(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "app", NAMES_APP)
    out, m, _ = make_mep(str(tree), "odd_names", str(tmp_path / "m"))
    p = subprocess.run(["nvcc", "-arch=sm_90", "-c", str(out / m.kernel_file), "-o", str(tmp_path / "k.o")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


# -- 7. --kernel PATH:NAME by whole path components -------------------------------------------------------------------
def test_kernel_path_matches_whole_components(tmp_path: Path) -> None:
    body = "__global__ void k(float* x) { x[0] = 1; }\n"
    tree = _tree(tmp_path / "app", {"app.cu": body, "legacy_app.cu": body, "old/app.cu": body})
    index = scan_tree(tree)
    assert find_kernel(index, "old/app.cu:k").file == "old/app.cu"
    assert find_kernel(index, "app.cu:k").file == "app.cu"  # not legacy_app.cu, and old/app.cu only by its full path
    with pytest.raises(UserError) as e:
        find_kernel(index, "k")
    hint = e.value.hint or ""
    suggestion = hint.split("--kernel ")[-1].split()[0]
    assert find_kernel(index, suggestion).name == "k"  # the suggestion itself is unambiguous


# -- 5. compile flags from the build itself --------------------------------------------------------------------------
BUILD_APP = {
    "Makefile": """# NVFLAGS += -DCOMMENTED=1
DEBUG = no
include config/make.def
NVFLAGS = -O2 -DNX=$(NX) -Iinc
ifeq ($(DEBUG),yes)
NVFLAGS += -DNX_DEBUG=7
else
NVFLAGS += -DRELEASE=1
endif
all: app
app: src/app.cu
\tnvcc $(NVFLAGS) -c src/app.cu -o app.o && nvcc app.o -o app
debug:
\tnvcc -DDEBUG_TARGET=1 -c src/app.cu
""",
    "config/make.def": "NX = 96\n",
    "inc/scale.h": "#define SCALE 2.0f\n",
    "src/app.cu": """#include <cuda_runtime.h>
#include "scale.h"
#ifndef NX
#define NX 5
#endif
__global__ void fill(float* a, int n) { int i = threadIdx.x; if (i < n) a[i] = SCALE; }
int main() { float* d; cudaMalloc((void**)&d, NX * sizeof(float)); fill<<<1, NX>>>(d, NX); return 0; }
""",
}


def test_makefile_read_only_from_active_lines_of_the_default_goal(tmp_path: Path) -> None:
    from s2s.scan.build_flags import makefile_command

    tree = _tree(tmp_path / "app", BUILD_APP)
    cmd, where = makefile_command(tree / "src" / "app.cu", tree)
    assert cmd is not None and "heuristic" in where
    assert cmd.defines == {"NX": "96", "RELEASE": "1"}  # the included fragment's NX; not commented, off-branch, debug:
    assert cmd.include_dirs == [(tree / "inc").resolve()]  # a relative -I, relative to the Makefile


@pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")
def test_flags_from_a_dry_run_of_the_build_command(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "app", BUILD_APP)
    before = sorted(p.name for p in tree.rglob("*"))
    res = run_cli("extract", str(tree), "--kernel", "fill", "-o", str(tmp_path / "m"), "--build-cmd", "make DEBUG=yes")
    assert res.returncode == 0, res.stderr
    doc = tomllib.loads((tmp_path / "m" / "mep.toml").read_text())
    assert "dry run" in doc["origin"]["flags_from"] and "-DNX_DEBUG=7" in doc["origin"]["compile_command"]
    assert doc["launch"]["block"] == [96, 1, 1]
    assert sorted(p.name for p in tree.rglob("*")) == before  # the dry run happened in a copy: nothing written here


def test_build_command_without_make_is_a_note(tmp_path: Path) -> None:
    from s2s.scan.build_capture import commands_from_build, dry_run_command, parse_log

    assert dry_run_command("cd build && make -j8 ep CLASS=S") == "cd build && make -n -B -w -j8 ep CLASS=S"
    found, why = commands_from_build(_tree(tmp_path / "app", BUILD_APP), "./build.sh")
    assert found == {} and "runs no make" in why
    log = ("make: Entering directory '/x/sub'\nnvcc -DA=1 -I../inc -c k.cu -o k.o\nmake: Leaving directory '/x/sub'\n"
           "g++ -O2 -c main.cpp && echo done\n")
    cmds = parse_log(log, Path("/x"))
    assert [(str(c.file), c.defines) for c in cmds] == [("/x/sub/k.cu", {"A": "1"}), ("/x/main.cpp", {})]


# -- dim3 sizes passed by reference into the launching function; one launch site per template argument ---------------
TILES_APP = {"tiles/tiles.cu": """#include <cuda_runtime.h>
template <int T> __global__ void tiled(float* out, const float* p, const float* q, int wp, int wq) {
  int i = blockIdx.y * T + threadIdx.y, j = blockIdx.x * T + threadIdx.x;
  out[i * wq + j] = p[i * wp] * q[j];
}
int run(int argc, char** argv, int tile, const dim3 &dp, const dim3 &dq) {
  unsigned int np = dp.x * dp.y;
  unsigned int bytes_p = sizeof(float) * np;
  unsigned int bytes_q = sizeof(float) * dq.x * dq.y;
  dim3 dout(dq.x, dp.y, 1);
  unsigned int bytes_out = dout.x * dout.y * sizeof(float);
  float *p, *q, *out;
  cudaMalloc((void**)&p, bytes_p);
  cudaMalloc((void**)&q, bytes_q);
  cudaMalloc((void**)&out, bytes_out);
  dim3 threads(tile, tile);
  dim3 grid(dq.x / threads.x, dp.y / threads.y);
  if (tile == 8) {
    tiled<8><<<grid, threads>>>(out, p, q, dp.x, dq.x);
  } else {
    tiled<16><<<grid, threads>>>(out, p, q, dp.x, dq.x);
  }
  return 0;
}
int main(int argc, char** argv) {
  int tile = 16;
  dim3 dp(3 * tile, 5 * tile, 1);
  dim3 dq(7 * tile, 3 * tile, 1);
  if (argc > 2) { dp.x = atoi(argv[1]); }
  return run(argc, argv, tile, dp, dq);
}
"""}


def test_dim3_parameters_and_launch_chosen_by_a_known_branch(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "app", TILES_APP)
    _, m, _ = make_mep(str(tree), "tiled", str(tmp_path / "m"))
    p = _params(m)
    assert p["p"].count == 48 * 80, p["p"].source  # dp.x * dp.y, dp passed by reference: never dp.x alone
    assert p["q"].count == 112 * 48, p["q"].source
    assert p["out"].count == 112 * 80, p["out"].source
    assert m.template_args == "16"  # tile == 8 is false: the else branch's launch
    assert m.launch.block == (16, 16, 1) and m.launch.grid == (7, 5, 1), m.launch.source


def test_launch_chosen_by_an_unknown_branch_is_fill_in(tmp_path: Path) -> None:
    app = {"tiles/tiles.cu": TILES_APP["tiles/tiles.cu"].replace("int tile = 16;", "int tile = atoi(argv[1]);")}
    tree = _tree(tmp_path / "app", app)
    _, m, _ = make_mep(str(tree), "tiled", str(tmp_path / "m"))
    assert m.template_args == FILL_IN
    assert FILL_IN in m.launch.block and all(s.count == FILL_IN for s in m.params if s.role != "scalar")
    assert any("template_args" in u for u in m.unfilled())
