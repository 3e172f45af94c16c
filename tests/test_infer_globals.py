"""Launch and buffer sizes computed in a setup function into file-scope globals, launched from another function
(NPB's setup_gpu()): a global written at exactly one place, unconditionally or in a branch decided before the run,
gives its value with where it came from; written twice, under a condition not known before the run, in a loop, by
`+=`, through its address, from a device property that differs between GPUs, or by another unit through `extern`: it
stays FILL-IN with the reason. Fixtures: tests/fixtures/setup_globals (written for these tests)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import tomllib

from s2s.extract.mep_writer import make_mep
from s2s.mep.manifest import FILL_IN

FIXTURES = Path(__file__).parent / "fixtures" / "setup_globals"


def _mep(tmp_path: Path, app: str, kernel: str):  # type: ignore[no-untyped-def]
    tree = tmp_path / app
    shutil.copytree(FIXTURES / app, tree)
    out, manifest, _ex = make_mep(str(tree), kernel, str(tmp_path / f"mep-{kernel.split(':')[-1]}"))
    return out, manifest, {p.name: p for p in manifest.params}


def test_globals_from_the_setup_function_with_the_header_sizes(tmp_path: Path) -> None:
    out, m, p = _mep(tmp_path, "app", "app.cu:scale")
    assert m.launch.block == (128, 1, 1), m.launch.source  # THREADS_ON_SCALE <= maxThreadsPerBlock (1024)
    assert m.launch.grid == (64 * 32 // 128, 1, 1), m.launch.source  # ceil(double(NX*NY)/double(threads))
    assert p["n"].value == 64 * 32, p["n"].source  # cfg.n, a field of a file-scope struct, written once
    assert p["x"].count == 64 * 32, p["x"].source  # size_x = cfg.n * sizeof(double), cudaMalloc in setup_gpu()
    assert "in setup_gpu() at app.cu:" in m.launch.source, m.launch.source  # the provenance says where
    assert "maxThreadsPerBlock = 1024" in m.launch.source, m.launch.source
    doc = tomllib.loads((out / "mep.toml").read_text())
    assert "the one write of the global blocks_on_scale, in setup_gpu() at app.cu:" in doc["launch"]["source"]
    assert not m.unfilled()


def test_the_else_branch_when_the_condition_is_known_not_to_hold(tmp_path: Path) -> None:
    _out, m, p = _mep(tmp_path, "app", "app.cu:reduce")
    # THREADS_ON_REDUCE = 2048 > maxThreadsPerBlock: the else branch, one warp
    assert m.launch.block == (32, 1, 1), m.launch.source
    assert m.launch.grid == (64 * 32 // 32, 1, 1), m.launch.source
    assert m.launch.shared_mem == 32 * 8, m.launch.source
    assert p["per_block"].value == 32, p["per_block"].source
    assert p["q"].count == 64 * 10, p["q"].source  # size_q = blocks_on_reduce * NQ * sizeof(double)
    assert "does not hold" in m.launch.source, m.launch.source


def test_a_global_holds_the_value_its_declared_type_gives(tmp_path: Path) -> None:
    _out, m, p = _mep(tmp_path, "app", "app.cu:thirds")
    assert p["m"].value == 682, p["m"].source  # int third = 2048 / 3.0
    assert m.launch.grid == (2046 // 64, 1, 1), m.launch.source  # (third * 3) / 64 in integers: 31, not 32


@pytest.mark.parametrize(("kernel", "why"), [
    ("k_twice", "written at 2 places"),
    ("k_chosen", "under a condition or in a loop not known before the run"),
    ("k_device", "could not be evaluated"),  # prop.multiProcessorCount: differs between GPUs
    ("k_looped", "under a condition or in a loop not known before the run"),
    ("k_bumped", "changed by 'bumped += 256'"),
    ("k_init", "written at 2 places"),  # the initializer and the write in setup()
    ("k_extern", "declared extern in grow.cu"),
    ("k_fields", "changed by 'grid_fields.x = N / 256'"),  # a file-scope dim3 whose field is set in a function
])
def test_the_rule_does_not_fire_and_the_value_stays_fill_in(tmp_path: Path, kernel: str, why: str) -> None:
    out, m, _p = _mep(tmp_path, "refused", f"flags.cu:{kernel}")
    assert FILL_IN in m.launch.grid, m.launch.source
    assert why in m.launch.source, m.launch.source
    assert any(u.startswith("launch") for u in m.unfilled())
    assert tomllib.loads((out / "mep.toml").read_text())["launch"]["grid"][0] == FILL_IN


def test_a_scalar_read_from_a_file_when_present_has_the_default_runs_value(tmp_path: Path) -> None:
    # no sizes.data / input.data in the tree: the default run takes the branch without the file, and says so
    _out, m, p = _mep(tmp_path / "a", "refused", "flags.cu:k_sized")
    assert p["n"].value == 4096, p["n"].source
    assert "no file sizes.data in the tree" in p["n"].source, p["n"].source
    _out, m, _p = _mep(tmp_path / "b", "refused", "flags.cu:k_file")
    assert m.launch.grid == (4096 // 64, 1, 1), m.launch.source
    assert "no file input.data in the tree" in m.launch.source, m.launch.source
    tree = tmp_path / "c" / "refused"
    shutil.copytree(FIXTURES / "refused", tree)
    (tree / "sizes.data").write_text("128\n")  # with the file there, the value is the file's: not known
    _out, m, _ex = make_mep(str(tree), "flags.cu:k_sized", str(tmp_path / "c" / "mep"))
    assert next(x for x in m.params if x.name == "n").value == FILL_IN


def test_dim3_declared_together_and_fields_set_by_a_chained_assignment(tmp_path: Path) -> None:
    _out, m, p = _mep(tmp_path, "chained", "step.cu:collide")
    assert m.launch.grid == (60, 7, 1), m.launch.source  # `dim3 dimBlock, dimGrid;` then dimGrid.z = 1 via a = b = 1
    assert m.launch.block == (120, 1, 1), m.launch.source
    assert p["a"].count == 120 * 60 * 7, p["a"].source
    assert p["m"].value == 119, p["m"].source  # int cells = SIZE_X / 7.0 holds 17
    assert not m.unfilled()


def test_a_call_in_another_program_of_the_tree_never_gives_a_value(tmp_path: Path) -> None:
    _out, m, p = _mep(tmp_path, "two_programs", "prog_a/a.cu:fill")
    assert p["n"].value == FILL_IN, p["n"].source  # b.cu's run(d, 128) calls b.cu's own run()
    assert FILL_IN in m.launch.grid, m.launch.source
    _out, m, p = _mep(tmp_path / "b", "two_programs", "prog_b/b.cu:scale")
    assert p["n"].value == 128 and m.launch.grid == (2, 1, 1), p["n"].source


def test_a_typedef_under_if_takes_the_branch_the_unit_compiles(tmp_path: Path) -> None:
    _out, m, p = _mep(tmp_path, "typedef_if", "keys.cu:count_keys")
    assert m.launch.shared_mem == 256 * 4, m.launch.source  # CLASS 'S': typedef int, not the first (long)
    assert p["a"].count == 1024, p["a"].source
    # `#if WIDE_KEYS > 1` with WIDE_KEYS defined nowhere: not decided here, so sizeof(KEY_T) is not known
    assert p["k"].count == FILL_IN, p["k"].source


def test_a_buffer_handed_on_by_callers_of_different_sizes_is_fill_in(tmp_path: Path) -> None:
    _out, _m, p = _mep(tmp_path, "callers", "two_calls.cu:smooth")
    assert p["x"].count == FILL_IN, p["x"].source  # was the first caller's 256
    assert "different sizes" in p["x"].source, p["x"].source
    _out, _m, p = _mep(tmp_path / "same", "callers", "two_calls.cu:sharpen")
    assert p["x"].count == 256, p["x"].source  # every caller's buffer holds 256 floats


def test_sizeof_of_an_expression_goes_through_the_variables_declaration(tmp_path: Path) -> None:
    _out, m, p = _mep(tmp_path, "sizeof_expr", "dot.cu:dot")
    assert p["a"].count == 64 * 128 * 4 and p["b"].count == 64 * 128 * 4, p["a"].source  # n * sizeof *dev[i]
    assert p["out"].count == 64, p["out"].source  # BLOCKS * sizeof(*res)
    assert p["scratch"].count == 2, p["scratch"].source  # 2 * sizeof tmp: a pointer's 8 bytes, twice
    assert not m.unfilled()


def test_cexpr_reads_sizeof_without_parentheses_and_of_expressions() -> None:
    from s2s.lang.cexpr import try_evaluate

    sizes = {"*p": 2, "q[0]": 4, "float": 4}
    assert try_evaluate("n * sizeof *p + 1", {"n": 10}.get, sizes.get) == 21
    assert try_evaluate("sizeof(q[0]) * sizeof(float)", {}.get, sizes.get) == 16
    assert try_evaluate("sizeof(*r)", {}.get, sizes.get) is None  # not known: no value, never 0


def test_a_global_also_written_by_a_header_function_is_fill_in(tmp_path: Path) -> None:
    _out, m, _p = _mep(tmp_path, "header_write", "main.cu:touch")
    assert FILL_IN in m.launch.grid, m.launch.source  # setup() writes 64, reset.h's reset_blocks() 7
    assert "reset.h:2" in m.launch.source, m.launch.source


def test_a_parameter_that_shadows_a_global_and_is_passed_offset_stays_fill_in(tmp_path: Path) -> None:
    """NPB MG's psinv_gpu(double* r_device, ...) is called with r_device + ir[k]: the count was the whole global
    allocation (46480; the H200 capture saw 128 behind the pointer), a wrong value."""
    _out, m, p = _mep(tmp_path, "shadowed", "levels.cu:smooth")
    assert p["r"].count == FILL_IN and p["u"].count == FILL_IN, (p["r"].count, p["r"].source)


def test_pointer_offsets() -> None:
    from s2s.extract.infer import pointer_offset

    assert [pointer_offset(a) for a in ("d_A", "(float*)d_A", "&v[0]", "thrust::raw_pointer_cast(&v[0])")] == ["", "", "", ""]
    assert [pointer_offset(a) for a in ("r + ir[k]", "&r[ir[k]]", "(double*)(u + 5)", "p - 1")] == ["ir[k]", "ir[k]", "5", "-1"]
