"""Speculative steps, for every pass that declares them: kept only where the cost model predicts a gain.

A pass marks steps of its space `speculative` (s2s.optimize.registry.is_speculative): steps that help only some kernels
and cost an evaluation, or worse, elsewhere (launch-config's 32- and 64-thread blocks help a launch that leaves SMs
without a block). The search proposes a candidate whose last step is speculative only where the model predicts it
faster than the same pipeline without that step, and otherwise records why it did not.
"""
from __future__ import annotations

from s2s.lang.kernel_model import parallelism
from s2s.optimize.candidate import Candidate, LaunchOverride
from s2s.optimize.cost import predict_candidate
from s2s.optimize.proposers.base import State
from s2s.optimize.registry import is_speculative, parse_pipeline


def in_blocks(launch: LaunchOverride, dialect: str) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """(grid in blocks, block): CUDA's convention, which launch rules and the launch model are written in."""
    if dialect != "opencl":
        return launch.grid, launch.block
    block = tuple(b if b > 0 else 1 for b in launch.block)
    grid = tuple(-(-g // b) for g, b in zip(launch.grid, block))
    return grid, block  # type: ignore[return-value]


def last_step(c: Candidate) -> str:
    """The last pass step of a built-in candidate's pipeline ("" for another origin)."""
    return c.origin.removeprefix("pass:").split(",")[-1] if c.origin.startswith("pass:") else ""


def no_gain(c: Candidate, without: Candidate | None, state: State) -> str | None:
    """Why the model sees no gain in `c` over `without` (None: the original); None where it predicts one.

    Where it predicts the same time, or none (a size the MEP does not give), the launches' fill decides: the part of
    the model a launch change moves (s2s.lang.kernel_model.parallelism); a step that leaves the launch as it was does
    not grow it, so it is dropped too."""
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
    new, old = (parallelism(*in_blocks((x.launch if x is not None else None) or state.base_launch, state.dialect))
                for x in (c, without))
    if new.fill <= old.fill * (1 + 1e-6):
        return f"the launch's fill does not grow ({new.fill:.4f} vs {old.fill:.4f})"
    return None


def speculative_refusal(c: Candidate, without: Candidate | None, state: State) -> str | None:
    """Why the search drops `c` ("PASS: reason"): its last step is speculative and the model predicts no gain over
    `without`. None where it is kept (not speculative, or a predicted gain)."""
    step = last_step(c)
    if not step or not is_speculative(step):
        return None
    why = no_gain(c, without, state)
    return None if why is None else f"{parse_pipeline(step)[0][0]}: speculative, {why}"


def keep_gainful(pairs: list[tuple[Candidate, Candidate | None]], state: State) -> tuple[list[Candidate], dict[str, str]]:
    """The candidates (each beside the one it extends) the search keeps, and {pipeline: why} for those it drops."""
    kept: list[Candidate] = []
    dropped: dict[str, str] = {}
    for c, without in pairs:
        why = speculative_refusal(c, without, state)
        if why is None:
            kept.append(c)
        else:
            dropped[c.origin.removeprefix("pass:")] = why
    return kept, dropped
