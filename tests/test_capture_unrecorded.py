"""A launch the run reached but left no record is said to be so, never "asks for a later launch" (NVIDIA's
simpleCallback on the H200 at d66f49d: 8 launches seen, --launch 1, nothing recorded)."""
from __future__ import annotations

from pathlib import Path

import pytest
from mep_util import ParamSpec, manifest

from s2s.base.errors import UserError
from s2s.capture.collect import collect


def _dump(tmp_path: Path, launches: int) -> Path:
    dump = tmp_path / "dump"
    dump.mkdir()
    (dump / "summary.txt").write_text(f"kernel incKernel\nlaunches {launches}\n")
    return dump


def _m():  # type: ignore[no-untyped-def]
    return manifest("incKernel", "cuda", "kernel.cu", [ParamSpec("g_data", "int*", "inout", "int", count=16)], (1, 1, 1), (16, 1, 1))


def test_a_reached_launch_without_a_record(tmp_path: Path) -> None:
    with pytest.raises(UserError) as err:
        collect(_dump(tmp_path, 8), tmp_path / "mep", _m(), want="--launch 1", run_cmd="./app", build_cmd="make")
    assert "launched incKernel 8 time(s), but launch 1 left no record" in err.value.message
    assert "later launch" not in err.value.message


def test_a_launch_past_the_last(tmp_path: Path) -> None:
    with pytest.raises(UserError) as err:
        collect(_dump(tmp_path, 2), tmp_path / "mep", _m(), want="--launch 5", run_cmd="./app", build_cmd="make")
    assert "asks for a later launch" in err.value.message and "at most 2" in (err.value.hint or "")
