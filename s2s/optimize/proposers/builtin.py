"""The built-in proposer: the passes in `s2s/passes/`, their parameters searched, composed over rounds.

Round 1 tries inherited patterns first, then each applicable pass alone over its parameter grid.
Later rounds extend the best verified pipelines not yet extended with one more pass and vary the best one
(s2s.optimize.proposers.neighbours), until none is left or the budget ends. A round that finds nothing else proposes
the candidates the speculative-step rule held back (s2s.optimize.search), the model's likeliest first: the rule orders
the search, it does not end it while evaluations are left. Candidates are pipelines applied to the original kernel, so
every winner is a reproducible pipeline string.
"""
from __future__ import annotations

from s2s.lang.cuda_compat import builtin_repair
from s2s.optimize.candidate import Candidate, LaunchOverride
from s2s.optimize.cost import order
from s2s.optimize.launch_sizes import scaled_counts, scaling
from s2s.optimize.registry import Applied, make_pass, parse_pipeline, run_pass, search_space, without_normalization
from s2s.optimize.search import in_blocks, keep_gainful

from . import neighbours
from .base import State

BEAM = 3  # verified pipelines extended a round


def apply_pipeline(pipeline: str, state: State) -> Candidate | str:
    """The pipeline applied to the original kernel, or why it does not apply."""
    source = state.original
    launch = state.base_launch
    rules: list[str] = []
    sized = [(q.name, q.space, q.count, q.count_expr) for q in state.manifest.params]
    scaled = scaling(sized)
    for name, opts in parse_pipeline(pipeline):
        try:
            p = make_pass(name, opts)
        except (KeyError, ValueError, TypeError) as exc:
            return f"{name}: {exc}"
        out = run_pass(p, source, state.dialect, state.kernel, state.target, scaled)
        if not isinstance(out, Applied):
            return f"{name}: {out.reason}"
        source = out.text
        if out.launch is not None:
            rules.append(out.launch.grid_from)
            try:
                grid, block = out.launch.resolve(*in_blocks(launch, state.dialect), values=_scalars(state))
            except ValueError as exc:
                return f"{name}: {exc}"
            if state.dialect == "opencl":  # OpenCL sizes are work-items: global = groups x local
                grid = (grid[0] * block[0], grid[1] * block[1], grid[2] * block[2])
            counts = launch.local_counts
            if tuple(block) != tuple(launch.block):  # host-sized memory follows the block, or the change is refused
                got = scaled_counts(sized, state.manifest.launch.shared_mem, tuple(state.base_launch.block), tuple(block))
                if isinstance(got, str):
                    return f"{name}: the block changes from {'x'.join(map(str, launch.block))} to {'x'.join(map(str, block))}, but {got}"
                counts = got
            launch = LaunchOverride(grid=grid, block=block, shared_mem=launch.shared_mem, local_counts=counts)
    if source == state.original and launch == state.base_launch:
        return "no change"
    changed = launch != state.base_launch
    return Candidate(source=source, origin=f"pass:{pipeline}", launch=launch if changed else None,
                     launch_rules=tuple(rules) if changed else ())


def _scalars(state: State) -> dict[str, object]:
    """The MEP's scalar arguments by name: what `extent:` launch rules are evaluated with."""
    return {p.name: p.value for p in state.manifest.params if p.role == "scalar"}


class BuiltinProposer:
    name = "builtin"

    def __init__(self) -> None:
        self.refusals: dict[str, str] = {}
        self.tried: set[str] = set()
        self.extended: set[str] = set()  # verified pipelines whose one-step extensions were proposed
        self.varied: set[str] = set()  # verified pipelines whose siblings were proposed
        self.produced: list[Candidate] = []  # every candidate made, before the speculative-step rule (the pass audit)
        self.held: list[Candidate] = []  # dropped by the speculative-step rule: proposed when nothing else is left

    def _make(self, pipeline: str, state: State) -> Candidate | None:
        if pipeline in self.tried:
            return None
        plain = without_normalization(pipeline)
        if plain != pipeline and plain in self.tried and plain not in self.refusals:
            self.refusals[pipeline] = f"{plain} applies to the kernel as written: no normalized copy"
            return None
        self.tried.add(pipeline)
        out = apply_pipeline(pipeline, state)
        if isinstance(out, str):
            self.refusals[pipeline] = out
            return None
        return out

    def _gainful(self, pairs: list[tuple[Candidate, Candidate | None]], state: State) -> list[Candidate]:
        """The candidates kept by the search's speculative-step rule (s2s.optimize.search); why the others were dropped
        goes to `refusals`."""
        self.produced += [c for c, _ in pairs]
        kept, dropped = keep_gainful(pairs, state)
        self.refusals.update(dropped)
        self.held += [c for c, _ in pairs if c.origin.removeprefix("pass:") in dropped]
        return kept

    def propose(self, state: State) -> list[Candidate]:
        cands: list[Candidate] = []
        if state.round == 1:
            for pat in state.patterns:
                c = self._make(pat.pipeline, state)
                if c is not None:
                    cands.append(Candidate(c.source, c.origin, None, c.launch, note=f"pattern from {pat.kernel} ({pat.speedup:.2f}x)",
                                           launch_rules=c.launch_rules))
            steps = [c for c in (self._make(step, state) for step in search_space()) if c is not None]
            return cands + order(self._gainful([(c, None) for c in steps], state), state)  # likely winners first (cost model)
        return self._later_round(state)

    def _later_round(self, state: State) -> list[Candidate]:
        """Down the ranking of verified pipelines: the first `BEAM` not yet extended whose one-step extensions give a
        candidate, and the first not yet varied whose siblings (neighbours.siblings) give one. Groups in their pipeline's
        rank, extensions before siblings, each cost-model ordered. A round without a gain thus moves the beam down the
        ranking; the round is empty only when every verified pipeline has been extended and varied."""
        by_pipeline = {p: c for _s, c, p in state.ok_candidates if p}
        space = search_space()
        cands: list[Candidate] = []
        extended = varied = 0
        for _speedup, pipeline in neighbours.ranked(state.ok_candidates):
            if extended < BEAM and pipeline not in self.extended:
                self.extended.add(pipeline)
                group = self._group(neighbours.extensions(pipeline, space), by_pipeline[pipeline], state)
                extended += bool(group)
                cands += group
            if not varied and pipeline not in self.varied:
                self.varied.add(pipeline)
                group = self._group(neighbours.siblings(pipeline, space), by_pipeline[pipeline], state)
                varied += bool(group)
                cands += group
            if extended >= BEAM and varied:
                break
        if not cands and self.held:  # nothing else left: what the rule held back, the model's likeliest first
            held, self.held = order(self.held, state), []
            for c in held:
                self.refusals.pop(c.origin.removeprefix("pass:"), None)
            cands = [Candidate(c.source, c.origin, c.parent, c.launch, "held back by the speculative-step rule; "
                               "proposed once nothing else was left", c.launch_rules) for c in held]
        return cands

    def _group(self, pipelines: list[str], base: Candidate, state: State) -> list[Candidate]:
        """The pipelines not tried before that apply and pass the speculative-step rule (against `base`), likely
        winners first (cost model)."""
        made = (self._make(p, state) for p in pipelines)
        return order(self._gainful([(c, base) for c in made if c is not None], state), state)

    def repair(self, candidate: Candidate, log: str, state: State) -> Candidate | None:
        fixed = builtin_repair(candidate.source.decode("utf-8", "replace"), log)
        if fixed is None:
            return None
        text, fixer = fixed
        return Candidate(text.encode(), candidate.origin + f"+repair:{fixer}", candidate.parent, candidate.launch, candidate.note,
                         candidate.launch_rules)
