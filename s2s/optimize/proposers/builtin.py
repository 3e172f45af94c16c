"""The built-in proposer: the passes in `s2s/passes/`, their parameters searched, composed over rounds.

Round 1 tries inherited patterns first, then each applicable pass alone over its parameter grid.
Later rounds extend the best verified pipelines with one more pass. Candidates are pipelines applied
to the original kernel, so every winner is a reproducible pipeline string.
"""
from __future__ import annotations

from s2s.lang.cuda_compat import builtin_repair
from s2s.lang.kernel_model import parallelism
from s2s.optimize.candidate import Candidate, LaunchOverride
from s2s.optimize.cost import order, predict_candidate
from s2s.optimize.registry import Applied, get_pass, make_pass, parse_pipeline, run_pass, search_space

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
                grid, block = out.launch.resolve(*_in_blocks(launch, state.dialect), values=_scalars(state))
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


def _in_blocks(launch: LaunchOverride, dialect: str) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """(grid in blocks, block): CUDA's convention, which launch rules are written in."""
    if dialect != "opencl":
        return launch.grid, launch.block
    block = tuple(b if b > 0 else 1 for b in launch.block)
    grid = tuple(-(-g // b) for g, b in zip(launch.grid, block))
    return grid, block  # type: ignore[return-value]


def _steps(pipeline: str) -> set[str]:
    return {name for name, _ in parse_pipeline(pipeline)} if pipeline else set()


def _speculative(step: str) -> bool:
    """A step its pass lists as `speculative`: tried only where the cost model predicts it faster than without it."""
    return step in getattr(get_pass(parse_pipeline(step)[0][0]), "speculative", frozenset())


def _no_gain(c: Candidate, without: Candidate | None, state: State) -> str | None:
    """Why a speculative step is not tried: the model predicts `c` slower than `without` (None: the original). Where
    it predicts the same time or none (a size the MEP does not give), the launches' fill decides (the part of the
    model a launch change moves: s2s.lang.kernel_model.parallelism). None when it predicts a gain."""
    try:
        p, q = predict_candidate(c, state), predict_candidate(without, state)
    except Exception:  # noqa: BLE001 - a model failure leaves the fill to decide, as no prediction does
        p = q = None
    if p is not None and q is not None:
        if p.seconds < q.seconds * (1 - 1e-6):
            return None
        if p.seconds > q.seconds * (1 + 1e-6):
            return f"the cost model predicts no gain ({p.seconds * 1e6:.1f} vs {q.seconds * 1e6:.1f} µs)"
        # the same time: a launch so small that the model's one-SM floor holds both (cost.predict); the fill decides
    new, old = (parallelism(*_in_blocks((x.launch if x is not None else None) or state.base_launch, state.dialect))
                for x in (c, without))
    if new.fill <= old.fill * (1 + 1e-6):
        return f"the launch's fill does not grow ({new.fill:.4f} vs {old.fill:.4f})"
    return None


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

    def _wanted(self, c: Candidate, without: Candidate | None, state: State) -> bool:
        """False (the reason kept in `refusals`) for a speculative last step the cost model predicts no gain from."""
        step = c.origin.removeprefix("pass:").split(",")[-1]
        why = _no_gain(c, without, state) if _speculative(step) else None
        if why is not None:
            self.refusals[c.origin.removeprefix("pass:")] = f"{parse_pipeline(step)[0][0]}: {why}"
        return why is None

    def propose(self, state: State) -> list[Candidate]:
        cands: list[Candidate] = []
        if state.round == 1:
            for pat in state.patterns:
                c = self._make(pat.pipeline, state)
                if c is not None:
                    cands.append(Candidate(c.source, c.origin, None, c.launch, note=f"pattern from {pat.kernel} ({pat.speedup:.2f}x)",
                                           launch_rules=c.launch_rules))
            steps = [c for c in (self._make(step, state) for step in search_space()) if c is not None]
            steps = [c for c in steps if self._wanted(c, None, state)]
            return cands + order(steps, state)  # the cost model's likely winners first (s2s.optimize.cost)
        bases = sorted(state.ok_candidates, key=lambda t: -t[0])[:3]
        for _speedup, base, pipeline in bases:
            used = _steps(pipeline)
            for step in search_space():
                name = parse_pipeline(step)[0][0]
                if name in used:
                    continue
                c = self._make(f"{pipeline},{step}", state)
                if c is not None and self._wanted(c, base, state):
                    cands.append(c)
        return cands

    def repair(self, candidate: Candidate, log: str, state: State) -> Candidate | None:
        fixed = builtin_repair(candidate.source.decode("utf-8", "replace"), log)
        if fixed is None:
            return None
        text, fixer = fixed
        return Candidate(text.encode(), candidate.origin + f"+repair:{fixer}", candidate.parent, candidate.launch, candidate.note,
                         candidate.launch_rules)
