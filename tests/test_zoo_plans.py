"""bench/gpu_zoo_plans.py: the zoo plans (bench/plans/*.toml) as data, a bad plan refused in one line naming the file and
line, the slice of the kernels a part takes, the reports' fields, and a dry run (extraction, rewriting, nvcc builds)."""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))
from gpu_zoo_plans import PlanError, guarded, load_plan, main, part_of, stem_of, workdir  # noqa: E402
from zoo_plan_reports import Bandwidth, Gemm, agreement  # noqa: E402

PLANS = BENCH / "plans"


# -- the committed plans -----------------------------------------------------------------------------
def test_the_bandwidth_plan() -> None:
    plan = load_plan(PLANS / "zoo_bandwidth.toml")
    assert (plan.name, plan.report, plan.capture) == ("zoo_bandwidth", "bandwidth", False) and len(plan.steps) == 23
    assert plan.steps["laplace3d"] == (("restrict-const,launch-config{block=64x4},thread-coarsen{axis=z factor=16}",) * 2,)
    assert [p for _, p in plan.steps["reduce_atomic"]] == ["atomic-accumulate,warp-reduce-atomics", "atomic-accumulate",
                                                          "warp-reduce-atomics"]


def test_the_underfill_plan_gives_every_kernel_every_block() -> None:
    plan = load_plan(PLANS / "underfill.toml")
    assert plan.capture and list(plan.steps)[0] == "trsm_cols" and len(plan.steps) == 8
    blocks = [f"launch-config{{block={b}}}" for b in (32, 64, 128, 256, 512)]
    assert all([p for _, p in steps] == blocks for steps in plan.steps.values())


def test_the_gemm_plans_put_the_opening_step_before_each_form() -> None:
    plan = load_plan(PLANS / "gemm_forms.toml")
    assert plan.name == "gpu_gemm_forms" and len(plan.forms) == 5 and len(plan.steps) == 9
    assert plan.steps["gemm_naive"][0] == ("contraction-blocking", "contraction-blocking")
    assert plan.steps["covar_cols"][0] == ("contraction-blocking", "inner-loop-threads,contraction-blocking")
    assert all(p == f"delinearize-2d,{f}" for f, p in plan.steps["gemm_colmajor"])
    every = load_plan(PLANS / "gemm_forms_all.toml")
    from s2s.optimize.registry import get_pass

    spaces = [s for n in ("contraction-blocking", "contraction-tiling", "register-blocking") for s in get_pass(n).space]
    assert list(every.forms) == list(dict.fromkeys(spaces)) and set(plan.forms) <= set(every.forms)


# -- bad plans ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("text,where,why", [
    ('name = "x"\nreport = "bandwidth"\n[kernels]\naxpy = ["vector-elementwise"]\nnot_a_kernel = ["x"]\n', ":5:",
     "no zoo kernel 'not_a_kernel'"),
    ('name = "x"\nreport = "bandwidth"\n[kernels]\naxpy = ["no-such-pass{a=1}"]\n', ":4:", "unknown pass 'no-such-pass'"),
    ('name = "x"\nreport = "bandwidth"\nkernel = ["axpy"]\n', ":3:", "unknown key 'kernel'"),
    ('name = "x"\nreport = "bandwidth"\nkernels = ["axpy"\n', ":3:", "Unclosed array"),
    ('name = "x"\nreport = "bandwidth"\nkernels = ["axpy",,]\n', ":3:", ""),
    ('name = "x"\nreport = "roofline"\nkernels = ["axpy"]\n', "", "report = one of bandwidth, gemm, underfill"),
    ('name = "x"\nreport = "gemm"\nkernels = ["axpy"]\n', ":3:", "no pipelines for 'axpy'"),
    ('name = "x"\nreport = "gemm"\nevery = ["fast-math"]\nkernels = ["axpy"]\n[before]\ngemm_naive = "delinearize-2d"\n', ":6:",
     "'gemm_naive' has a `before` step but is not in kernels"),
])
def test_a_bad_plan_is_one_line_naming_the_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str,
                                                         where: str, why: str) -> None:
    plan = tmp_path / "bad.toml"
    plan.write_text(text)
    with pytest.raises(PlanError) as exc:
        load_plan(plan)
    assert str(exc.value).startswith(str(plan)) and where in str(exc.value) and why in str(exc.value), exc.value
    assert main([str(plan), str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(plan) in err and not (tmp_path / "out").exists()


def test_only_and_part_are_checked_before_any_work(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(PLANS / "underfill.toml"), str(tmp_path / "o"), "--only", "axpy"]) == 2
    assert "no kernel axpy in the plan" in capsys.readouterr().err
    assert main([str(PLANS / "underfill.toml"), str(tmp_path / "o"), "--part", "3/2"]) == 2
    assert "--part 3/2: want I/K" in capsys.readouterr().err and not (tmp_path / "o").exists()


# -- parts, scratch folders, a kernel's failure ------------------------------------------------------
def test_parts_split_the_kernels_and_refuse_what_is_not_i_of_k(capsys: pytest.CaptureFixture[str]) -> None:
    names = ["a", "b", "c", "d", "e"]
    assert part_of(names, "1/1", "x") == names
    assert part_of(names, "1/2", "x") + part_of(names, "2/2", "x") == ["a", "c", "e", "b", "d"]  # type: ignore[operator]
    assert part_of(names, "3/2", "bench") is None and part_of(names, "x", "bench") is None
    assert capsys.readouterr().err.count("bench: --part") == 2
    assert stem_of("zoo_bandwidth", "1/1") == "zoo_bandwidth" and stem_of("underfill", "2/3") == "underfill_part2of3"


def test_a_kernel_that_fails_is_its_error_and_a_scratch_folder_goes_away(tmp_path: Path) -> None:
    def shape(name: str) -> str:
        if name == "bad":
            raise ValueError("no such shape")
        return name.upper()

    assert guarded("good", "prepare", shape, "good") == ("GOOD", None)
    assert guarded("bad", "build", shape, "bad") == (None, "build: ValueError: no such shape")
    with workdir(str(tmp_path), "p-") as given:
        assert given == tmp_path
    with workdir("", "p-") as made:
        assert made.is_dir()
    assert not made.exists()


# -- the reports' fields -----------------------------------------------------------------------------
def _timing(us: float | None) -> SimpleNamespace | None:
    return SimpleNamespace(median_us=us, spread_us=0.1 * us) if us else None


def _measured(verdict: str, ref_us: float | None, var_us: float | None) -> SimpleNamespace:
    return SimpleNamespace(verdict=verdict, ok=verdict == "ok", speedup=ref_us / var_us if ref_us and var_us else None,
                           messages=("a", "b", "c", "d", "e"), ref=_timing(ref_us), var=_timing(var_us))


def test_bandwidth_entries_carry_the_fraction_of_the_floor() -> None:
    rep, row = Bandwidth(), {"kernel": "axpy", "candidates": []}
    rep.floors["axpy"] = 40.0
    entry = rep.entry("vector-elementwise", "vector-elementwise")
    rep.timed(entry, _measured("ok", 100.0, 50.0), row)
    assert entry == {"pipeline": "vector-elementwise", "verdict": "ok", "speedup": 2.0, "messages": ["a", "b", "c"],
                     "original_us": 100.0, "variant_us": 50.0, "floor_fraction": 0.8}
    assert row["original_floor_fraction"] == 0.4


def test_gemm_entries_carry_vendor_over_ours_and_a_build_failure() -> None:
    rep = Gemm()
    row = {"kernel": "gemm_naive", "forms": [], "vendor": {"median_us": 30.0}}
    entry = rep.entry("contraction-blocking", "delinearize-2d,contraction-blocking")
    rep.timed(entry, _measured("ok", 600.0, 60.0), row)
    assert entry["us"] == 60.0 and entry["vendor_over_ours"] == 0.5 and entry["messages"] == ["b", "c", "d", "e"]
    broken = rep.entry("f", "f")
    rep.built(broken, SimpleNamespace(ok=False, seconds=3.04, failure="compile-failed", log="x" * 2000, messages=()))
    assert broken["build_ok"] is False and broken["build_s"] == 3.0 and len(broken["log"]) == 1500 and rep.build_failed(broken)


def test_underfill_agreement_counts_directions_beyond_the_noise() -> None:
    cands = [{"pipeline": "b32", "verdict": "ok", "speedup": 1.3, "predicted_speedup": 1.2},  # held
             {"pipeline": "b64", "verdict": "ok", "speedup": 1.01, "predicted_speedup": 0.8},  # within the noise: not counted
             {"pipeline": "b256", "verdict": "ok", "speedup": 1.1, "predicted_speedup": 0.9},  # wrong
             {"pipeline": "b512", "verdict": "ok", "speedup": 0.9, "predicted_speedup": 1.0},  # none predicted
             {"pipeline": "b128", "verdict": "refused"}]
    assert agreement(cands) == {"best_measured": "b32", "best_predicted": "b32", "same_best": True, "direction_held": 1,
                                "direction_wrong": 1, "no_direction_predicted": 1}


# -- a dry run: extraction, rewriting and nvcc builds, no GPU --------------------------------------------
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_a_dry_run_builds_each_report(tmp_path: Path) -> None:
    """One kernel per report, two pipelines each (one refused), through the real extraction and nvcc."""
    plans = {"underfill": 'report = "underfill"\ncapture = true\nkernels = ["gemv_rows"]\n'
                          'every = ["launch-config{block=32}", "launch-config{block=256}"]\n',
             "gemm": 'report = "gemm"\nkernels = ["gemm_naive"]\nevery = ["contraction-tiling{tile=64 rows=8}", "warp-rows"]\n',
             "bandwidth": 'report = "bandwidth"\n[kernels]\nreduce_atomic = ["atomic-accumulate,warp-reduce-atomics", '
                          '"atomic-accumulate"]\n'}
    for name, body in plans.items():
        (tmp_path / f"{name}.toml").write_text(f'name = "{name}"\n{body}')
        rc = main([str(tmp_path / f"{name}.toml"), str(tmp_path / "out"), "--dry", "--jobs", "2", "--work", str(tmp_path / "w")])
        assert rc == 0, name
        assert (tmp_path / "out" / f"{name}.md").read_text().startswith("# ")
    doc = json.loads((tmp_path / "out" / "underfill.json").read_text())
    assert doc["dry"] and doc["device"] == "none (dry)" and doc["plan"] == "underfill.toml"
    row = doc["kernels"][0]
    assert row["kernel"] == "gemv_rows" and row["block"] == [256, 1, 1] and "capture_rc" not in row  # dry: no capture
    small, same = row["candidates"]
    assert small["verdict"] == "built" and small["grid"] == [128, 1, 1] and small["predicted_speedup"] > 1
    assert same == {"pipeline": "launch-config{block=256}", "verdict": "refused", "why": "no change"}
    gemm = json.loads((tmp_path / "out" / "gemm.json").read_text())
    assert gemm["forms"] == ["contraction-tiling{tile=64 rows=8}", "warp-rows"]
    tiled, warp = gemm["kernels"][0]["forms"]
    assert tiled["build_ok"] is True and tiled["variant"] and "verdict" not in tiled
    assert "refused" in warp and gemm["kernels"][0]["vendor"] == {"skipped": "dry run"}
    bw = json.loads((tmp_path / "out" / "bandwidth.json").read_text())
    both, one = bw["kernels"][0]["candidates"]
    assert both["verdict"] == "refused" and "block already reduces" in both["why"] and one["verdict"] == "built"
    assert bw["copy_gbs"] is None and bw["kernels"][0]["floor_us"] is None
