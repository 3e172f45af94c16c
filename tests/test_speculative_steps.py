"""Speculative steps are a registry-level notion (s2s.optimize.registry.is_speculative, s2s.optimize.search): any pass
may declare steps of its space speculative, and the search keeps such a step only where the cost model predicts a
gain, saying why it dropped one. Checked with test-only passes registered as plugins (the `s2s.passes` entry points),
beside launch-config's 32/64-thread blocks."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest
from test_underfill import TRSM, _state

from s2s.lang.edits import Edit, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts
from s2s.optimize import registry
from s2s.optimize.candidate import Candidate
from s2s.optimize.cost import predict
from s2s.optimize.proposers.builtin import BuiltinProposer, apply_pipeline
from s2s.optimize.search import keep_gainful, speculative_refusal

SLOWER, FASTER = "test-trip{bound=i+i}", "test-trip{bound=i-1}"


@dataclass(frozen=True)
class TestTrip:
    """Test only: sets the trip count of the kernel's `k < i` loop (not meaning-preserving; the search only ranks it).
    `i+i` doubles the loop's work, `i-1` removes one trip: the model predicts one slower, the other faster."""

    __test__: ClassVar[bool] = False  # not a pytest class
    name: ClassVar[str] = "test-trip"
    priority: ClassVar[int] = 5
    space: ClassVar[tuple[str, ...]] = (SLOWER, FASTER)
    speculative: ClassVar[bool | frozenset[str]] = True  # every step of its space
    bound: str = "i"

    def applies(self, facts: KernelFacts) -> bool | str:
        return True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        m = re.search(rb"k < i;", source)
        if m is None:
            return Refused("no `k < i` loop")
        return Rewrite((Edit(m.start(), m.end(), f"k < {self.bound};"),), None, f"k < {self.bound}")


@dataclass(frozen=True)
class TestTripSure(TestTrip):
    """The same steps, none speculative: the search keeps them whatever the model predicts."""

    name: ClassVar[str] = "test-trip-sure"
    space: ClassVar[tuple[str, ...]] = ("test-trip-sure{bound=i+i}", "test-trip-sure{bound=i-1}")
    speculative: ClassVar[bool | frozenset[str]] = frozenset()


@dataclass(frozen=True)
class TestTripOne(TestTrip):
    """Only the step that doubles the work is speculative (a set of its steps, as launch-config declares)."""

    name: ClassVar[str] = "test-trip-one"
    space: ClassVar[tuple[str, ...]] = ("test-trip-one{bound=i+i}", "test-trip-one{bound=i-1}")
    speculative: ClassVar[bool | frozenset[str]] = frozenset({"test-trip-one{bound=i+i}"})


class _EntryPoint:
    def __init__(self, cls: type[Any]) -> None:
        self.name, self.cls = cls.name, cls

    def load(self) -> type[Any]:
        return self.cls


@pytest.fixture
def plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    """The three test passes registered as `s2s.passes` entry points, as a plugin package would register them."""
    real = registry.entry_points

    def entry_points(group: str) -> list[Any]:
        return [*real(group=group), *(_EntryPoint(c) for c in (TestTrip, TestTripSure, TestTripOne))]

    monkeypatch.setattr(registry, "entry_points", entry_points)


def _origins(cands: list[Candidate]) -> list[str]:
    return [c.origin.removeprefix("pass:") for c in cands]


def test_the_registry_reads_each_declaration(plugins: None) -> None:
    assert registry.is_speculative(SLOWER) and registry.is_speculative(FASTER)  # True: the whole space
    assert not registry.is_speculative("test-trip-sure{bound=i+i}")
    assert registry.is_speculative("test-trip-one{bound=i+i}") and not registry.is_speculative("test-trip-one{bound=i-1}")
    assert registry.is_speculative("launch-config{block=32}") and registry.is_speculative("launch-config{block=64}")
    assert not registry.is_speculative("launch-config{block=128}") and not registry.is_speculative("restrict-const")
    assert {SLOWER, FASTER} <= set(registry.search_space())


def test_the_model_predicts_the_test_steps_apart() -> None:
    """The premise of the tests below: `i+i` predicted slower than the original, `i-1` faster."""
    scalars: dict[str, float] = {"n": 512, "nrhs": 8192}
    t = {b: predict(TRSM.replace(b"k < i;", f"k < {b};".encode()), "cuda", "trsm", (64, 1, 1), (128, 1, 1), scalars)
         for b in ("i", "i+i", "i-1")}
    assert all(p is not None for p in t.values())
    assert t["i+i"].seconds > t["i"].seconds > t["i-1"].seconds  # type: ignore[union-attr]


def test_round_one_drops_a_speculative_step_predicted_slower_and_says_why(plugins: None) -> None:
    prop = BuiltinProposer()
    got = _origins(prop.propose(_state(8192)))
    assert FASTER in got and SLOWER not in got, got
    assert prop.refusals[SLOWER].startswith("test-trip: speculative, the cost model predicts no gain (")
    # the same steps undeclared are kept; a set declares only its own steps
    assert {"test-trip-sure{bound=i+i}", "test-trip-sure{bound=i-1}", "test-trip-one{bound=i-1}"} <= set(got)
    assert "test-trip-one{bound=i+i}" not in got and "predicts no gain" in prop.refusals["test-trip-one{bound=i+i}"]
    # launch-config's own speculative steps follow the same rule on this underfilled launch: kept
    assert {"launch-config{block=32}", "launch-config{block=64}"} <= set(got)


def test_without_a_time_a_step_that_keeps_the_launch_is_dropped(plugins: None) -> None:
    """n is FILL-IN: no prediction, so the launch's fill decides; a text-only step does not grow it."""
    prop = BuiltinProposer()
    got = _origins(prop.propose(_state(8192, n="FILL-IN")))
    assert SLOWER not in got and FASTER not in got, got
    assert "fill does not grow" in prop.refusals[FASTER]
    assert {"test-trip-sure{bound=i-1}", "launch-config{block=32}"} <= set(got)  # launch-config still: more SMs get a block


def test_round_two_judges_the_step_against_its_base(plugins: None) -> None:
    state = _state(8192)
    base = apply_pipeline("restrict-const", state)
    assert isinstance(base, Candidate)
    state.round, state.ok_candidates = 2, [(1.1, base, "restrict-const")]
    prop = BuiltinProposer()
    got = set(_origins(prop.propose(state)))
    assert f"restrict-const,{FASTER}" in got and f"restrict-const,{SLOWER}" not in got
    assert "predicts no gain" in prop.refusals[f"restrict-const,{SLOWER}"]
    assert "restrict-const,test-trip-sure{bound=i+i}" in got


def test_keep_gainful_is_the_filter_for_any_proposer(plugins: None) -> None:
    """The rule is a function of candidates and state, not of the built-in proposer: other origins pass through."""
    state = _state(8192)
    slow, fast = (apply_pipeline(p, state) for p in (SLOWER, FASTER))
    assert isinstance(slow, Candidate) and isinstance(fast, Candidate)
    other = Candidate(slow.source, "llm:model")  # the same text from another proposer: not a declared step
    kept, dropped = keep_gainful([(slow, None), (fast, None), (other, None)], state)
    assert kept == [fast, other] and list(dropped) == [SLOWER]
    assert speculative_refusal(fast, None, state) is None
    # against a base that is already slower, the doubled loop is no gain either; the faster one still is
    assert speculative_refusal(fast, slow, state) is None and speculative_refusal(slow, fast, state) is not None


def test_what_the_rule_held_back_comes_once_nothing_else_is_left(plugins: None) -> None:
    """The rule orders the search, it does not end it: a round that finds nothing else (no verified pipeline to extend
    or vary) proposes the held-back candidates, said in their note, and the rule's refusals no longer name them."""
    state = _state(8192)
    prop = BuiltinProposer()
    first = _origins(prop.propose(state))
    assert SLOWER not in first and SLOWER in prop.refusals
    state.round, state.ok_candidates = 2, []  # nothing verified: no extension, no sibling
    later = prop.propose(state)
    assert SLOWER in _origins(later) and "test-trip-one{bound=i+i}" in _origins(later)
    assert all("held back by the speculative-step rule" in c.note for c in later)
    assert SLOWER not in prop.refusals
    state.round = 3
    assert prop.propose(state) == []  # each once
