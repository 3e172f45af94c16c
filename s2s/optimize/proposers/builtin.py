"""The built-in proposer: the passes in `s2s/passes/`, their parameters searched, composed over rounds.

Round 1 tries inherited patterns first, then each applicable pass alone over its parameter grid.
Later rounds extend the best verified pipelines with one more pass. Candidates are pipelines applied
to the original kernel, so every winner is a reproducible pipeline string.
"""
from __future__ import annotations

from s2s.lang.cuda_compat import builtin_repair
from s2s.optimize.candidate import Candidate, LaunchOverride
from s2s.optimize.cost import order
from s2s.optimize.registry import Applied, make_pass, parse_pipeline, run_pass, search_space
from s2s.optimize.search import in_blocks, keep_gainful

from .base import State


def apply_pipeline(pipeline: str, state: State) -> Candidate | str:
    """The pipeline applied to the original kernel, or why it does not apply."""
    source = state.original
    launch = state.base_launch
    rules: list[str] = []
    for name, opts in parse_pipeline(pipeline):
        try:
            p = make_pass(name, opts)
        except (KeyError, ValueError, TypeError) as exc:
            return f"{name}: {exc}"
        out = run_pass(p, source, state.dialect, state.kernel)
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
            launch = LaunchOverride(grid=grid, block=block, shared_mem=launch.shared_mem)
    if source == state.original and launch == state.base_launch:
        return "no change"
    changed = launch != state.base_launch
    return Candidate(source=source, origin=f"pass:{pipeline}", launch=launch if changed else None,
                     launch_rules=tuple(rules) if changed else ())


def _scalars(state: State) -> dict[str, object]:
    """The MEP's scalar arguments by name: what `extent:` launch rules are evaluated with."""
    return {p.name: p.value for p in state.manifest.params if p.role == "scalar"}


def _steps(pipeline: str) -> set[str]:
    return {name for name, _ in parse_pipeline(pipeline)} if pipeline else set()


class BuiltinProposer:
    name = "builtin"

    def __init__(self) -> None:
        self.refusals: dict[str, str] = {}
        self.tried: set[str] = set()

    def _make(self, pipeline: str, state: State) -> Candidate | None:
        if pipeline in self.tried:
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
        kept, dropped = keep_gainful(pairs, state)
        self.refusals.update(dropped)
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
        bases = sorted(state.ok_candidates, key=lambda t: -t[0])[:3]
        for _speedup, base, pipeline in bases:
            used = _steps(pipeline)
            made = (self._make(f"{pipeline},{step}", state) for step in search_space() if parse_pipeline(step)[0][0] not in used)
            cands += self._gainful([(c, base) for c in made if c is not None], state)
        return cands

    def repair(self, candidate: Candidate, log: str, state: State) -> Candidate | None:
        fixed = builtin_repair(candidate.source.decode("utf-8", "replace"), log)
        if fixed is None:
            return None
        text, fixer = fixed
        return Candidate(text.encode(), candidate.origin + f"+repair:{fixer}", candidate.parent, candidate.launch, candidate.note,
                         candidate.launch_rules)
