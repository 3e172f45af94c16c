"""The loop's stopping rules on the OpenCL sample, on PoCL (real builds and runs): by default it goes on while the
proposer has new candidates and budget remains; --rounds and --patience still bound it where given; a round whose
candidates were all evaluated before (a resumed run) is skipped, not taken for the end of the search."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import SAMPLES
from mep_util import with_noise_band

from s2s.optimize.candidate import Candidate
from s2s.optimize.loop import Options, optimize
from s2s.optimize.proposers import PROPOSERS
from s2s.optimize.proposers.base import State


class _Scripted:
    """Round r proposes the kernels of SCRIPT[r - 1] (the original with a comment: the same speed), then nothing."""

    name = "scripted"
    script: list[list[str]] = []

    def propose(self, state: State) -> list[Candidate]:
        tags = self.script[state.round - 1] if state.round <= len(self.script) else []
        return [Candidate(state.original + f"\n// {t}\n".encode(), f"scripted:{t}") for t in tags]

    def repair(self, candidate: Candidate, log: str, state: State) -> Candidate | None:
        return None


@pytest.fixture(scope="module")
def matvec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The MEP, with its noise band (the original timed against itself, three runs: 2 s of each optimize here)
    measured once and kept in a history that holds nothing else; each test's copy starts from it."""
    return with_noise_band(SAMPLES / "ocl_solver", "matvec", tmp_path_factory.mktemp("rounds") / "mep-matvec")


def _run(matvec: Path, tmp: Path, monkeypatch: pytest.MonkeyPatch, script: list[list[str]], **kw: object) -> object:
    mep = tmp / "mep"
    shutil.copytree(matvec, mep, ignore=shutil.ignore_patterns("build", "variants"))
    monkeypatch.setattr(_Scripted, "script", script)
    monkeypatch.setitem(PROPOSERS, "scripted", lambda **_: _Scripted())
    return optimize(mep, Options(proposer="scripted", use_patterns=False, jobs=2, max_evals=8, **kw))  # type: ignore[arg-type]


FOUR = [["r1"], ["r2"], ["r3"], ["r4"]]


@pytest.mark.slow
def test_by_default_it_goes_on_while_there_are_candidates(matvec: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = _run(matvec, tmp_path, monkeypatch, FOUR, min_gain=100.0)  # no round gains: the old defaults stopped at 2
    assert (out.stopped, out.rounds, out.evaluations) == ("no-new-candidates", 5, 4), out  # type: ignore[attr-defined]


@pytest.mark.slow
def test_rounds_and_patience_still_bound_it(matvec: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = _run(matvec, tmp_path / "a", monkeypatch, FOUR, rounds=3)
    assert (out.stopped, out.rounds, out.evaluations) == ("rounds", 3, 3), out  # type: ignore[attr-defined]
    out = _run(matvec, tmp_path / "b", monkeypatch, FOUR, patience=1, min_gain=100.0)
    assert (out.stopped, out.rounds, out.evaluations) == ("no-improvement", 2, 2), out  # type: ignore[attr-defined]


@pytest.mark.slow
def test_a_round_of_old_candidates_is_skipped(matvec: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = _run(matvec, tmp_path, monkeypatch, [["r1"], ["r1"], ["r1"], ["r2"]])
    assert (out.stopped, out.rounds, out.evaluations) == ("no-new-candidates", 5, 2), out  # type: ignore[attr-defined]
