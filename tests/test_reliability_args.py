"""Issue 30, bad input accepted: negative or zero times, tolerances and counts were taken as given. The parser
refuses each with one line naming the option, exit 2, before any work."""
from __future__ import annotations

import pytest
from safety_util import cli_inproc, one_line_exit_2

BAD = [
    ("reintegrate", "--cmd-timeout", "-5"), ("auto", "--cmd-timeout", "-5"), ("capture", "--timeout", "0"),
    ("auto", "--output-rtol", "-1"), ("optimize", "--workers", "0"), ("auto", "--workers", "0"),
    ("optimize", "--jobs", "0"), ("verify", "--jobs", "0"), ("scan", "--jobs", "0"),
    ("scan", "--jobs", "-2"),
    ("optimize", "--time-budget", "-5"), ("auto", "--time-budget", "0"), ("optimize", "--time-budget", "nan"),
    ("auto", "--runs", "0"), ("optimize", "--cluster-jobs", "0"), ("optimize", "--gpus-per-job", "-1"),
    ("optimize", "--max-retries", "-1"), ("capture", "--launch", "0"), ("capture", "--first", "-3"),
]
NEEDS = {"capture": ["--kernel", "k", "--build-cmd", "make", "--run-cmd", "make run"]}


@pytest.mark.parametrize(("cmd", "opt", "value"), BAD)
def test_a_bad_number_is_refused_by_the_parser_in_one_line(cmd: str, opt: str, value: str, capsys) -> None:  # type: ignore[no-untyped-def]
    rc, _o, err = cli_inproc([cmd, "somewhere", *NEEDS.get(cmd, []), opt, value], capsys)
    one_line_exit_2(rc, err)
    assert f"argument {opt}" in err and value in err, err


@pytest.mark.parametrize(("cmd", "opt", "value"), [("auto", "--output-rtol", "0"), ("scan", "--jobs", "1"),
                                                   ("optimize", "--gpus-per-job", "0"), ("optimize", "--time-budget", "0.5")])
def test_the_edge_values_that_mean_something_are_accepted(cmd: str, opt: str, value: str, capsys) -> None:  # type: ignore[no-untyped-def]
    rc, _o, err = cli_inproc([cmd, "somewhere", opt, value], capsys)
    assert f"argument {opt}" not in err, err  # it fails later, on the missing tree or MEP


@pytest.mark.parametrize("extra", [[], ["--profile", "prof.json", "--build-cmd", "make", "--run-cmd", "make run"]])
def test_auto_check_cmd_that_would_never_run_is_refused(tmp_path, extra: list[str], capsys) -> None:  # type: ignore[no-untyped-def]
    """--check-cmd without --run-cmd, or with --profile (the application is then never rerun), was ignored."""
    (tmp_path / "app").mkdir()
    rc, _o, err = cli_inproc(["auto", str(tmp_path / "app"), "--check-cmd", "false", "--work", str(tmp_path / "w"),
                              "--diff", str(tmp_path / "d.diff"), *extra], capsys)
    one_line_exit_2(rc, err)
    assert "--check-cmd" in err and sorted(p.name for p in tmp_path.iterdir()) == ["app"]
