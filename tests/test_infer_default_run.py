"""Values of the application's default run (no command-line arguments, no input files) that NPB-style codes compute
before the launch: a size read from an input file when one exists, else a compile-time default (`if ((fp =
fopen("input.data", "r")) != NULL) fscanf(..., &nx) else nx = ISIZ`), kept in an array (`grid_points[0]`), checked by
an early `return` that does not run, rounded up by a helper with a local variable; each value says it is the default
run's. What cannot be followed stays FILL-IN with the reason: the input file is in the tree, an array handed on as a
whole, an element written at an index known only in a loop or in two functions, a file opened for writing, a `return`
that runs before the write. Fixtures: tests/fixtures/default_run (written for these tests)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import tomllib

from s2s.extract.infer import pointer_offset
from s2s.extract.mep_writer import make_mep
from s2s.lang.cexpr import try_evaluate
from s2s.mep.manifest import FILL_IN

FIXTURES = Path(__file__).parent / "fixtures" / "default_run"


def _mep(tmp_path: Path, app: str, kernel: str, extra: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    tree = tmp_path / app
    shutil.copytree(FIXTURES / app, tree)
    for name, content in (extra or {}).items():
        (tree / name).write_text(content)
    out, manifest, _ex = make_mep(str(tree), kernel, str(tmp_path / f"mep-{kernel.split(':')[-1]}"))
    return out, manifest, {p.name: p for p in manifest.params}


def test_a_size_from_an_input_file_that_is_not_there_is_the_compiled_default(tmp_path: Path) -> None:
    out, m, p = _mep(tmp_path, "app", "solver.cu:k_read")
    assert p["n"].value == 24 * 12, p["n"].source  # nx = ISIZ, ny = ISIZ / 2 in read_input()'s else branch
    assert m.launch.grid == (24 * 12 // 64, 1, 1), m.launch.source
    assert 'fopen("input.data") = NULL: no file input.data in the tree' in p["n"].source, p["n"].source
    assert "default run, without input files" in p["n"].source
    assert not m.unfilled()
    assert tomllib.loads((out / "mep.toml").read_text())["launch"]["grid"] == [4, 1, 1]


def test_the_same_size_is_not_known_when_the_input_file_is_in_the_tree(tmp_path: Path) -> None:
    _out, m, p = _mep(tmp_path, "app", "solver.cu:k_read", {"input.data": "48 48\n"})
    assert p["n"].value == FILL_IN, p["n"].source
    assert FILL_IN in m.launch.grid, m.launch.source


def test_array_elements_and_an_early_return_that_does_not_run(tmp_path: Path) -> None:
    _out, m, p = _mep(tmp_path, "app", "solver.cu:k_grid")
    assert p["n"].value == 32 * 16, p["n"].source  # grid_points[0] * grid_points[2], MAXN and MAXN / 2
    assert p["v"].count == 32 * 16, p["v"].source  # cudaMalloc(&d_v, sizeof(double) * n) after the size check
    assert m.launch.grid == (16, 1, 1), m.launch.source
    assert "grid_points[0] = MAXN at solver.cu:" in p["n"].source, p["n"].source
    assert not m.unfilled()


def test_a_local_array_rounded_by_a_helper_with_a_local_variable(tmp_path: Path) -> None:
    _out, m, p = _mep(tmp_path, "app", "solver.cu:k_round")
    # work[0] = (32 - 2) * 3 = 90, rounded up to a multiple of 64 by round_up_work: 128; work[1] = grid_points[1]
    assert p["work"].value == 128, p["work"].source
    assert m.launch.grid == (2, 32, 1), m.launch.source
    assert "the one write of the global grid_points[0], in main()" in m.launch.source, m.launch.source
    assert not m.unfilled()


def test_shared_memory_per_block_and_a_loop_that_never_runs(tmp_path: Path) -> None:
    _out, m, _p = _mep(tmp_path, "app", "solver.cu:k_smem")
    # min(64 / 2, 49152 / (8 * 96)) = 32 doubles; while (64 * 64 > 1024 * 8) does not hold: tpb stays 64
    assert m.launch.shared_mem == 32 * 8, m.launch.source
    assert m.launch.block == (64, 1, 1) and m.launch.grid == (24 * 24 // 64, 1, 1), m.launch.source
    assert "sharedMemPerBlock = 49152" in m.launch.source and "does not hold when reached" in m.launch.source
    assert not m.unfilled()


def test_a_loop_run_on_known_values_and_a_buffer_that_starts_inside_its_allocation(tmp_path: Path) -> None:
    _out, m, p = _mep(tmp_path, "app", "solver.cu:k_tile")
    # side = 64; while (side * side > 1024) side = ceil(sqrt(side)): once, 8
    assert m.launch.block == (8, 8, 1), m.launch.source
    assert "runs 1 times from side = 64" in m.launch.source, m.launch.source
    # d_u + skip, skip = 2 * nx = 48: a capture records from the pointer to the end of the allocation, 576 - 48
    assert p["part"].count == 24 * 24 - 48, p["part"].source
    assert not m.unfilled()


def test_a_struct_member_pointer_is_not_an_offset() -> None:
    assert pointer_offset("workload->d_data") == ""  # the `-` of `->` is no subtraction (cuda-samples simpleCallback)
    assert pointer_offset("w->d + 4") == "4"
    assert pointer_offset("r_device + ir[k]") == "ir[k]"


@pytest.mark.parametrize(("kernel", "why"), [
    ("k_whole", "whole is used as a whole"),  # fill(whole) may write any element
    ("k_looped", "at an index not known before the run"),
    ("k_twice", "twice[0] is written at 2 places"),
    ("k_mode", "under a condition"),  # fopen(..., "w") creates the file: which branch runs is not a default
    ("k_stale", "after a return"),  # `if (N > 1024) return;` holds: the write never happens
    ("k_loop", "under a condition or by 'tpb = tpb / 2'"),  # the while loop runs
    ("k_macro", "macroed is named in a macro"),  # SET_FIRST(N / 128) writes macroed[0] after N / 64
])
def test_elements_and_files_that_are_not_followed_stay_fill_in(tmp_path: Path, kernel: str, why: str) -> None:
    _out, m, _p = _mep(tmp_path, "refused", f"cases.cu:{kernel}")
    assert FILL_IN in m.launch.grid, m.launch.source
    assert why in m.launch.source, m.launch.source


def test_subscripts_at_constant_indices_are_names_only_when_asked() -> None:
    values = {"g[1]": 7, "n": 2}
    assert try_evaluate("g[1] * n + 1", values.get, subscripts=True) == 15
    assert try_evaluate("g[n - 1] * n", values.get, subscripts=True) == 14  # the index evaluates first
    assert try_evaluate("g[1] * n", values.get) is None  # without subscripts an element cannot be read
    assert try_evaluate("g[i]", values.get, subscripts=True) is None  # an index not known


def test_a_local_pointer_that_may_be_one_of_two_buffers_of_one_size(tmp_path: Path) -> None:
    # ikey = d_buf or d_dst depending on a stage count from a loop: both hold N unsigned ints (cuda-samples mergeSort)
    _out, m, p = _mep(tmp_path, "alias", "sort.cu:k_sort")
    assert p["dst"].count == 1 << 12, p["dst"].source
    assert "every buffer it may be" in p["dst"].source, p["dst"].source
    assert not m.unfilled()


@pytest.mark.parametrize(("kernel", "why"), [
    ("k_uneven", "buffers of different sizes"),  # other = d_small or d_dst
    ("k_shifted", ""),  # moved = d_dst + 16: not a whole buffer
    ("k_swapped", ""),  # first = d_dst, then swap_pointers(first, second) by reference: d_small
])
def test_a_local_pointer_of_buffers_of_different_sizes_or_moved_is_fill_in(tmp_path: Path, kernel: str, why: str) -> None:
    _out, _m, p = _mep(tmp_path, "alias", f"sort.cu:{kernel}")
    assert p["dst"].count == FILL_IN, p["dst"].source
    assert why in p["dst"].source, p["dst"].source
