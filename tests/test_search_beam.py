"""The built-in search after round 1 (s2s.optimize.proposers.neighbours): a round without a gain moves the beam down
the ranking of verified pipelines, the best is varied (its siblings), and the proposer runs dry only when every verified
pipeline has been extended and varied. Pipelines are stood in for by their own text (no pass runs)."""
from __future__ import annotations

import pytest

from s2s.optimize.candidate import Candidate
from s2s.optimize.proposers import builtin
from s2s.optimize.proposers.base import State
from s2s.optimize.proposers.builtin import BuiltinProposer
from s2s.optimize.proposers.neighbours import extensions, ranked, siblings, steps_of

SPACE = ("a{f=8}", "a{f=16}", "b", "c{block=128}", "c{block=256}", "d")


def test_siblings_replace_one_steps_options_then_drop_one_step() -> None:
    assert siblings("a{f=8},c{block=128}", SPACE) == [
        "a{f=8},c{block=256}", "a{f=16},c{block=128}",  # the last step's other entries first
        "a{f=8}", "c{block=128}"]  # each step dropped, from the last
    assert siblings("b", SPACE) == []  # b has one entry and nothing to drop
    assert siblings("a{f=8}", SPACE) == ["a{f=16}"]


def test_extensions_add_a_pass_not_yet_run() -> None:
    assert extensions("a{f=8},d", SPACE) == ["a{f=8},d,b", "a{f=8},d,c{block=128}", "a{f=8},d,c{block=256}"]


def test_steps_keep_a_comma_inside_braces() -> None:
    assert steps_of("x{tile=32,8},y") == ["x{tile=32,8}", "y"]
    assert steps_of("") == []


def test_ranking_is_fastest_first_each_pipeline_once_ties_by_text() -> None:
    ok = [(2.0, None, "b"), (3.0, None, "a{f=8}"), (2.0, None, "a{f=16}"), (2.5, None, "b"), (9.0, None, "")]
    assert ranked(ok) == [(3.0, "a{f=8}"), (2.5, "b"), (2.0, "a{f=16}")]


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> State:
    """The proposer over SPACE: a pipeline applies unless it runs c before a (a stand-in refusal)."""
    def apply(pipeline: str, state: State) -> Candidate | str:
        steps = [s.split("{")[0] for s in steps_of(pipeline)]
        if "c" in steps and "a" in steps and steps.index("c") < steps.index("a"):
            return "a: refused after c"
        return Candidate(pipeline.encode(), f"pass:{pipeline}")

    monkeypatch.setattr(builtin, "apply_pipeline", apply)
    monkeypatch.setattr(builtin, "search_space", lambda: SPACE)
    monkeypatch.setattr(builtin, "keep_gainful", lambda pairs, state: ([c for c, _ in pairs], {}))
    return State(manifest=None, original=b"", kernel="k", dialect="opencl", facts=None)  # type: ignore[arg-type]


def _verified(state: State, *pairs: tuple[float, str]) -> None:
    state.ok_candidates += [(s, Candidate(p.encode(), f"pass:{p}"), p) for s, p in pairs]


def _round(prop: BuiltinProposer, state: State) -> list[str]:
    state.round += 1
    return [c.origin.removeprefix("pass:") for c in prop.propose(state)]


def test_the_beam_moves_down_the_ranking_and_the_best_is_varied(toy: State) -> None:
    prop = BuiltinProposer()
    assert len(_round_one(prop, toy)) == len(SPACE)
    _verified(toy, (4.0, "c{block=128}"), (3.0, "a{f=8}"), (2.0, "b"), (1.5, "d"), (1.2, "a{f=16}"), (0.5, "c{block=256}"))
    two = _round(prop, toy)
    # the top 3 extended in rank order (c's extensions by a are refused); c's siblings are round 1's steps, tried
    assert two == ["c{block=128},b", "c{block=128},d", "a{f=8},b", "a{f=8},c{block=128}", "a{f=8},c{block=256}",
                   "a{f=8},d", "b,a{f=8}", "b,a{f=16}", "b,c{block=128}", "b,c{block=256}", "b,d"]
    _verified(toy, (3.5, "a{f=8},c{block=128}"))  # no gain over 4.0: the beam moves on, to the next not yet extended
    three = _round(prop, toy)
    assert three[:3] == ["a{f=8},c{block=128},b", "a{f=8},c{block=128},d",  # the new second, extended
                         "a{f=16},c{block=128}"]  # ... and varied: the first not yet varied with a sibling to try
    assert three[3:] == ["d,a{f=8}", "d,a{f=16}", "d,b", "d,c{block=128}", "d,c{block=256}",  # then the old 4th and 5th
                         "a{f=16},b", "a{f=16},c{block=256}", "a{f=16},d"]  # (a{f=16},c{block=128} was just proposed)
    while _round(prop, toy):  # runs dry only when every verified pipeline is extended and varied
        pass
    assert prop.extended == {p for _s, _c, p in toy.ok_candidates}


def _round_one(prop: BuiltinProposer, state: State) -> list[Candidate]:
    state.round = 1
    return prop.propose(state)
