"""Names in a kernel's closure resolved as the compiler resolves them (NPB BT and LU): `constants_device::dssp` is
the namespace's constant, not a host global of the same name; `double r43, c1345, c34;` declares all three as locals
(none is looked for in another program of the tree); `#define lhsA(a, b) ...` inside a kernel's body is the kernel's
own macro, not a function defined nowhere. Each MEP's kernel file compiles alone with nvcc where it is installed.
Fixtures: tests/fixtures/closure_names (written for these tests)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import tomllib

from s2s.base.errors import UserError
from s2s.extract.closure import declared_names
from s2s.extract.mep_writer import make_mep
from s2s.mep.manifest import FILL_IN

FIXTURES = Path(__file__).parent / "fixtures" / "closure_names"
NVCC = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").exists() else None)


def _kernel_file(tmp_path: Path, kernel: str) -> tuple[Path, str]:
    tree = tmp_path / "app"
    shutil.copytree(FIXTURES / "app", tree)
    out, manifest, _ex = make_mep(str(tree), kernel, str(tmp_path / "mep"))
    return out / manifest.kernel_file, (out / manifest.kernel_file).read_text()


def _compiles(path: Path) -> None:
    if NVCC is None:
        return
    p = subprocess.run([NVCC, "-arch=sm_90", "-std=c++17", "-c", str(path), "-o", str(path.with_suffix(".o"))],
                       capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stderr[-2000:]


def test_declared_names_takes_every_declarator_and_the_items_own_macros() -> None:
    names = declared_names("{ double r43, c1345, c34; int a[3], *b = 0; x = y, z = w;\n#define lhsA(a, b) p[a]\n }")
    assert {"r43", "c1345", "c34", "a", "b", "lhsA"} <= names
    assert not {"y", "z", "w"} & names  # an expression with commas declares nothing
    # direct initialization with qualified and multi-word types: locals, not calls of functions defined nowhere
    direct = declared_names("{ constexpr unsigned int lanes(bx * by); unsigned int x(blockIdx.x + 1); "
                            "static const long long base(7); for (int c0(1); c0 < 4; ++c0) s += f(x, c0); }")
    assert {"lanes", "x", "base", "c0"} <= direct and "f" not in direct


@pytest.mark.slow
def test_a_qualified_constant_is_the_namespaces_not_the_host_global(tmp_path: Path) -> None:
    path, text = _kernel_file(tmp_path, "solver.cu:k_qualified")
    assert "namespace constants_device" in text and "__constant__ double dssp, scale;" in text
    assert "static double dssp;" not in text  # the host global would not give constants_device::dssp
    _compiles(path)
    manifest = tomllib.loads((path.parent / "mep.toml").read_text())  # the harness writes it qualified
    assert "constants_device::dssp" in [s["name"] for s in manifest.get("symbols", [])], manifest.get("symbols")


@pytest.mark.slow
def test_locals_several_to_a_line_are_not_taken_from_another_program(tmp_path: Path) -> None:
    path, text = _kernel_file(tmp_path, "solver.cu:k_locals")
    assert "other.cu" not in text and "__constant__ double c1345;" not in text
    _compiles(path)


@pytest.mark.slow
def test_a_macro_the_kernel_defines_in_its_body_is_not_a_missing_function(tmp_path: Path) -> None:
    path, text = _kernel_file(tmp_path, "solver.cu:k_macro")
    assert "#define lhs(a, b)" in text
    _compiles(path)


@pytest.mark.slow
def test_init_of_a_cuda_barrier_comes_from_the_header_the_unit_includes(tmp_path: Path) -> None:
    tree = tmp_path / "barrier"
    shutil.copytree(FIXTURES / "barrier", tree)
    out, manifest, _ex = make_mep(str(tree), "aw.cu:k_barrier", str(tmp_path / "mep"))
    assert not manifest.unfilled()
    _compiles(out / manifest.kernel_file)
    with pytest.raises(UserError, match="'init' is called but defined nowhere"):
        make_mep(str(tree), "plain.cu:k_plain", str(tmp_path / "mep-plain"))


def test_declared_names_takes_typedefs_template_parameters_and_local_types() -> None:
    code = ("template <typename Out, class Keep> struct S { typedef Impl<0, 0> Worker; using Other = Impl<1, 0>;\n"
            "  union view_t { unsigned a; __device__ view_t(unsigned f) noexcept : a(f) {} } view(p); };")
    names = declared_names(code)
    assert {"Out", "Keep", "Worker", "Other", "view_t", "view"} <= names
    assert "Impl" not in names


@pytest.mark.slow
def test_a_collective_tile_class_closes_over_names_mode(tmp_path: Path) -> None:
    """Top-level macro calls with no semicolon (`WIDEST_AS(float2, double)`) do not hide the device functions after
    them; a member typedef or alias called as a constructor (`Impl(tid).put(...)`), a template parameter used as a
    parameter's type (`Keep (&keep)[PER]`), a local union's constructor and declarator (`} view(p);`) and `asm` are
    not functions defined nowhere."""
    tree = tmp_path / "collective"
    shutil.copytree(FIXTURES / "collective", tree)
    out, manifest, _ex = make_mep(str(tree), "tile.cu:k_tile", str(tmp_path / "mep"), mode="names")
    text = (out / manifest.kernel_file).read_text()
    assert "int flat_thread(int nx, int ny)" in text and "unsigned lane_bits()" in text
    assert "class TileWriter" in text and "float bits_to_unit(unsigned p)" in text
    _compiles(out / manifest.kernel_file)


@pytest.mark.slow
def test_member_specializations_out_of_their_class_follow_the_class(tmp_path: Path) -> None:
    """`Gen<std::uint32_t>::draw<float>()` defined after its class is a `draw` (not a `uint32_t>`), and it comes
    after the class it specializes, the specialization it calls before it."""
    tree = tmp_path / "collective"
    shutil.copytree(FIXTURES / "collective", tree)
    out, manifest, _ex = make_mep(str(tree), "gen.cu:k_gen", str(tmp_path / "mep"), mode="names")
    text = (out / manifest.kernel_file).read_text()
    cls, word, real = (text.find(s) for s in ("class Gen", "Gen<std::uint32_t>::draw<std::uint32_t>()",
                                              "Gen<std::uint32_t>::draw<float>()"))
    assert 0 <= cls < word < real, (cls, word, real)
    _compiles(out / manifest.kernel_file)


@pytest.mark.slow
def test_aligned_types_named_only_by_the_launches_template_arguments(tmp_path: Path) -> None:
    """`typedef struct __align__(8) {...} rgba16_aligned;` is a type of the tree (not a parse error), so the instances
    `k_copy<rgba16_aligned>` and `k_copy<quad_aligned>` the kernel file names have their types in it."""
    tree = tmp_path / "collective"
    shutil.copytree(FIXTURES / "collective", tree)
    out, manifest, _ex = make_mep(str(tree), "aligned.cu:k_copy", str(tmp_path / "mep"), mode="names")
    text = (out / manifest.kernel_file).read_text()
    assert "k_copy<rgba16_aligned>" in text and "k_copy<quad_aligned>" in text
    assert "rgba16_aligned;" in text.split("k_copy<rgba16_aligned>")[0]
    assert "struct __align__(16) quad_aligned" in text
    _compiles(out / manifest.kernel_file)


@pytest.mark.slow
def test_macros_defined_after_the_kernel_and_array_typedefs(tmp_path: Path) -> None:
    """`#define P_a 3` in the file that includes the kernel's header after the include is not the kernel's parameter
    `P_a`; `typedef unsigned int tile_t[TILE_N];` defines `tile_t` (not `TILE_N`), so the struct built of it has it."""
    tree = tmp_path / "collective"
    shutil.copytree(FIXTURES / "collective", tree)
    out, manifest, _ex = make_mep(str(tree), "affine.h:k_affine", str(tmp_path / "mep"), mode="names")
    text = (out / manifest.kernel_file).read_text()
    assert "#define P_a" not in text and "#define P_b" not in text
    assert "typedef unsigned int tile_t[TILE_N];" in text
    assert [p.name for p in manifest.params] == ["P_a", "P_b", "out", "n"]
    _compiles(out / manifest.kernel_file)


@pytest.mark.slow
def test_a_local_alias_as_template_argument_is_its_type_or_fill_in(tmp_path: Path) -> None:
    """`using Cfg = tile_cfg<THREADS, 4>; k_fill<Cfg><<<...>>>`: `Cfg` exists only in the host function, so it is never
    the MEP's template argument nor an instance of the kernel file; through the alias, the launch in launch_fixed is
    `tile_cfg<64, 2>` (an instance, with tile_cfg in the file), and launch_fill's depend on which call runs (FILL-IN);
    a caller's alias (`launch_with<Narrow>` after `using Narrow = tile_cfg<32, 1>;`) is its type as well."""
    tree = tmp_path / "collective"
    shutil.copytree(FIXTURES / "collective", tree)
    out, manifest, _ex = make_mep(str(tree), "traits.cu:k_fill", str(tmp_path / "mep"), mode="names")
    text = (out / manifest.kernel_file).read_text()
    assert "<Cfg>" not in text.split("instantiations seen at launch sites")[-1]
    assert "k_fill<tile_cfg<64, 2>>" in text and "struct tile_cfg" in text
    assert "k_fill<tile_cfg<32, 1>>" in text  # launch_with<Narrow>(...) after main's `using Narrow = tile_cfg<32, 1>;`
    assert manifest.template_args in {"tile_cfg<64, 2>", FILL_IN}, manifest.template_args
    _compiles(out / manifest.kernel_file)


@pytest.mark.slow
def test_types_of_instances_a_host_template_chooses_at_run_time_are_in_the_kernel_file(tmp_path: Path) -> None:
    """`k_words<C>` with `using C = cfg2<THREADS, T>;` in a host template called with 64 or 128 as the run decides:
    template_args stays FILL-IN, but cfg2 and every specialization of the word_of it uses (`template <> struct
    word_of<4>`) are in the kernel file, so the instance the capture reads from the run (`cfg2<128, float>`) builds."""
    tree = tmp_path / "collective"
    shutil.copytree(FIXTURES / "collective", tree)
    out, manifest, _ex = make_mep(str(tree), "words.cu:k_words", str(tmp_path / "mep"), mode="names")
    assert manifest.template_args == FILL_IN
    text = (out / manifest.kernel_file).read_text()
    assert "struct cfg2" in text and "struct word_of<4>" in text and "struct word_of<8>" in text
    probe = out / "probe.cu"
    probe.write_text(text + "\nstatic void* const s2s_probe = (void*)&k_words<cfg2<128, float>>;\n")
    _compiles(probe)


@pytest.mark.slow
def test_a_field_named_like_a_function_is_no_dependency_of_its_struct(tmp_path: Path) -> None:
    """`struct Knobs { float gain; ... }` and `float gain(const Knobs k, float x)`: the field is no call of the
    function, so the struct comes before the function that takes it (they were a cycle, the function first)."""
    tree = tmp_path / "collective"
    shutil.copytree(FIXTURES / "collective", tree)
    out, manifest, _ex = make_mep(str(tree), "fields.cu:k_gain", str(tmp_path / "mep"), mode="names")
    text = (out / manifest.kernel_file).read_text()
    assert 0 <= text.find("struct Knobs") < text.find("float gain(const Knobs k")
    _compiles(out / manifest.kernel_file)
