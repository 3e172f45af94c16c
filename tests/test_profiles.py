"""Reading nsys / ncu / rocprofv3 kernel-time CSVs and attributing their time to source kernels."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from s2s.base.errors import UserError
from s2s.scan.profiles import MatchedTime, Profile, load_profile, match_profile

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "profiles"

SOURCE_KERNELS = [
    ("src/matmul.cu:12", "matmul_naive"),
    ("src/blas.cu:40", "axpby_t"),
    ("src/linalg.cu:7", "linalg::matvec_rows"),
    ("src/scale.cu:3", "scale_kernel"),
]


def load(name: str) -> Profile:
    return load_profile(FIXTURES / name)


def by_name(profile: Profile) -> dict[str, tuple[float, int]]:
    return {e.name: (e.total_ns, e.calls) for e in profile.entries}


# -- formats ---------------------------------------------------------------------

def test_nsys_with_preamble_commas_in_names_and_a_second_report() -> None:
    profile = load("nsys_cuda_gpu_kern_sum.csv")
    assert profile.tool == "nsys"
    assert profile.path.endswith("nsys_cuda_gpu_kern_sum.csv")
    assert len(profile.entries) == 6  # the cuda_api_sum table after the blank line is not read
    first = profile.entries[0]
    assert first.name == "matmul_naive(const float *, const float *, float *, int)"
    assert (first.qualified, first.template_args, first.total_ns, first.calls) == ("matmul_naive", "", 41234567.0, 100)
    axpby = [e for e in profile.entries if e.qualified == "axpby_t"]
    assert [(e.template_args, e.calls) for e in axpby] == [("float, 256", 200), ("double, 128", 100)]
    anon = profile.entries[-1]
    assert (anon.qualified, anon.template_args) == ("(anonymous namespace)::scale_kernel", "4")
    cub = profile.entries[4]
    assert cub.qualified == "cub::DeviceReduceKernel"
    assert cub.template_args.startswith("cub::DeviceReducePolicy<float, float, int, cub::Sum>::Policy600")


def test_entries_are_sorted_by_total_time() -> None:
    for name in ("nsys_cuda_gpu_kern_sum.csv", "nsys_total_time_count.csv", "ncu_raw.csv", "ncu_details.csv",
                 "rocprofv3_kernel_stats.csv"):
        totals = [e.total_ns for e in load(name).entries]
        assert totals == sorted(totals, reverse=True), name


def test_old_nsys_gpukernsum() -> None:
    profile = load("nsys_gpukernsum_old.csv")
    assert profile.tool == "nsys"
    assert [(e.qualified, e.template_args, e.total_ns, e.calls) for e in profile.entries] == [
        ("heat3d::step", "float", 9876543.0, 40),
        ("heat3d::init", "", 4123457.0, 40),
    ]


def test_nsys_total_time_and_count_columns() -> None:
    profile = load("nsys_total_time_count.csv")
    assert by_name(profile) == {"kern_a(int*)": (3000.0, 3), "kern_b": (2000.0, 1)}
    assert profile.entries[0].qualified == "kern_a"


def test_nsys_columns_are_found_by_name_and_time_units_scaled(tmp_path: Path) -> None:
    path = tmp_path / "reordered.csv"
    path.write_text('Name,Instances,Total Time (us),Time (%)\n"k<float>(float*, int)",4,1.5,100.0\n')
    entry = load_profile(path).entries[0]
    assert (entry.qualified, entry.template_args, entry.total_ns, entry.calls) == ("k", "float", 1500.0, 4)


def test_ncu_raw_units_row_thousands_separators_and_mangled_names() -> None:
    profile = load("ncu_raw.csv")
    assert profile.tool == "ncu"
    assert by_name(profile) == {
        "_Z12matmul_naivePKfS0_Pfi": (4_000_000.0, 2),  # two launches summed
        "_ZN6linalg11matvec_rowsEPKfS1_Pfi": (245_120.0, 1),
        "_Z7axpby_tIdLi128EEvT_PKS0_S0_PS0_i": (31_872.0, 1),
        "_Z7axpby_tIfLi256EEvT_PKS0_S0_PS0_i": (18_304.0, 1),
    }
    qualified = {e.name: (e.qualified, e.template_args) for e in profile.entries}
    assert qualified["_ZN6linalg11matvec_rowsEPKfS1_Pfi"] == ("linalg::matvec_rows", "")
    assert qualified["_Z7axpby_tIfLi256EEvT_PKS0_S0_PS0_i"] == ("axpby_t", "float, 256")


def test_ncu_raw_in_microseconds() -> None:
    (entry,) = load("ncu_raw_usecond.csv").entries
    assert entry.qualified == "matmul_naive"
    assert entry.calls == 2
    assert entry.total_ns == pytest.approx(4_000_000.0)


def test_ncu_details_page_takes_one_duration_per_launch() -> None:
    profile = load("ncu_details.csv")
    assert profile.tool == "ncu"
    got = {(e.qualified, e.template_args): (e.total_ns, e.calls) for e in profile.entries}
    assert got.keys() == {("heat3d::step", "double"), ("heat3d::step", "float"), ("heat3d::init", "")}
    assert got[("heat3d::step", "float")][0] == pytest.approx(140_000.0)  # 70.27 us + 69.73 us
    assert got[("heat3d::step", "float")][1] == 2
    assert got[("heat3d::step", "double")][0] == pytest.approx(150_000.0)  # 0.15 ms
    assert got[("heat3d::step", "double")][1] == 1
    assert got[("heat3d::init", "")] == (8448.0, 1)  # Duration and gpu__time_duration.sum of one launch: once


def test_rocprofv3_kernel_stats() -> None:
    profile = load("rocprofv3_kernel_stats.csv")
    assert profile.tool == "rocprof"
    assert [(e.qualified, e.template_args, e.total_ns, e.calls) for e in profile.entries] == [
        ("matmul_naive", "", 41234567.0, 100),
        ("axpby_t", "float, 256", 21700000.0, 200),
        ("linalg::matvec_rows", "", 5650000.0, 50),
        ("__amd_rocclr_fillBufferAligned", "", 1280.0, 2),
    ]


# -- matching --------------------------------------------------------------------

def test_match_aggregates_instantiations_and_lists_unmatched() -> None:
    match = match_profile(load("nsys_cuda_gpu_kern_sum.csv"), SOURCE_KERNELS)
    axpby = match.by_kernel["src/blas.cu:40"]
    assert axpby == MatchedTime(
        total_ns=27_700_000.0, calls=300, instantiations=("float, 256", "double, 128"),
        profile_names=("void axpby_t<float, 256>(float, const float *, float, float *, int)",
                       "void axpby_t<double, 128>(double, const double *, double, double *, int)"),
    )
    assert match.by_kernel["src/matmul.cu:12"].total_ns == 41234567.0
    assert match.by_kernel["src/linalg.cu:7"].calls == 50
    assert match.by_kernel["src/scale.cu:3"].instantiations == ("4",)  # anonymous namespace ignored
    assert len(match.unmatched) == 1 and match.unmatched[0].startswith("void cub::DeviceReduceKernel<")
    assert not match.ambiguous


def test_match_mangled_ncu_names() -> None:
    match = match_profile(load("ncu_raw.csv"), SOURCE_KERNELS)
    assert match.by_kernel["src/matmul.cu:12"].calls == 2
    assert match.by_kernel["src/linalg.cu:7"].total_ns == 245_120.0
    assert match.by_kernel["src/blas.cu:40"].instantiations == ("double, 128", "float, 256")
    assert "src/scale.cu:3" not in match.by_kernel
    assert match.unmatched == ()


def test_exact_qualified_match_wins_over_namespace_free_match() -> None:
    kernels = [("plain", "matvec_rows"), ("ns", "linalg::matvec_rows"), ("other", "blas::matvec_rows")]
    match = match_profile(load("rocprofv3_kernel_stats.csv"), kernels)
    assert set(match.by_kernel) == {"ns"}
    assert match.by_kernel["ns"].total_ns == 5650000.0


def test_match_ignoring_namespaces_only_when_unambiguous() -> None:
    profile = load("nsys_gpukernsum_old.csv")  # heat3d::step, heat3d::init
    one = match_profile(profile, [("k1", "step"), ("k2", "init")])
    assert one.by_kernel["k1"].instantiations == ("float",)
    assert one.by_kernel["k2"].calls == 40
    two = match_profile(profile, [("a", "solver::step"), ("b", "mesh::step")])
    assert two.by_kernel == {}
    assert "void heat3d::step<float>(float const*, float*, int, int, int)" in two.unmatched
    assert two.ambiguous["void heat3d::step<float>(float const*, float*, int, int, int)"] == ("a", "b")


def test_unqualified_profile_name_finds_the_namespaced_source_kernel() -> None:
    profile = load("nsys_total_time_count.csv")  # kern_a, kern_b without namespaces
    match = match_profile(profile, [("x", "app::kern_a"), ("y", "(anonymous namespace)::kern_b")])
    assert match.by_kernel["x"].calls == 3
    assert match.by_kernel["y"].total_ns == 2000.0


def test_source_names_with_template_parameters_still_match() -> None:
    match = match_profile(load("ncu_raw.csv"), [("t", "axpby_t<T, N>")])
    assert match.by_kernel["t"].calls == 2


# -- bad input ---------------------------------------------------------------------

@pytest.mark.parametrize(
    ("name", "line", "words"),
    [
        ("bad_number_nsys.csv", 6, "'Total Time (ns)'"),
        ("bad_count_rocprof.csv", 3, "'Calls'"),
        ("ncu_details_bad_value.csv", 2, "'Metric Value'"),
        ("ncu_raw_bad_unit.csv", 2, "unknown time unit 'cycle'"),
        ("ncu_raw_short_row.csv", 4, "'gpu__time_duration.sum' is missing"),
        ("ncu_details_no_duration.csv", 1, "Duration"),
        ("unknown_format.csv", 3, "'Num Calls'"),
        ("empty_rocprof.csv", 1, "no kernels"),
        ("empty_file.csv", 1, "empty"),
        ("nsys_no_kernels.txt", 2, "no kernel data"),
    ],
)
def test_malformed_profiles_raise_user_error_with_file_and_line(name: str, line: int, words: str) -> None:
    with pytest.raises(UserError) as info:
        load(name)
    message = info.value.one_line()
    assert re.search(re.escape(name) + f":{line}: ", message), message
    assert words in message
    assert info.value.file is not None and info.value.file.endswith(name)
    assert info.value.line == line
    assert "\n" not in message


def test_unknown_format_says_what_is_accepted() -> None:
    with pytest.raises(UserError) as info:
        load("unknown_format.csv")
    hint = info.value.hint or ""
    for accepted in ("nsys", "ncu", "rocprofv3", "gpu__time_duration.sum", "TotalDurationNs"):
        assert accepted in hint


def test_unreadable_file(tmp_path: Path) -> None:
    for path in (tmp_path / "missing.csv", tmp_path):
        with pytest.raises(UserError) as info:
            load_profile(path)
        assert str(path) in info.value.one_line()
        assert "cannot read" in info.value.message
