"""Where the built-in search goes after round 1: the verified pipelines ranked, which of them to extend next, and the
pipelines next to one (its siblings).

A round that brings no improvement does not end the search while budget remains: the next round extends the next-best
pipelines not yet extended (a beam that moves down the ranking) and varies the best one not yet varied. Everything here
works on pipeline strings and is deterministic: ties in speed are broken by the pipeline's text.
"""
from __future__ import annotations

from collections.abc import Sequence

from s2s.optimize.registry import parse_pipeline


def ranked(ok: Sequence[tuple[float, object, str]]) -> list[tuple[float, str]]:
    """(speedup, pipeline) of the verified built-in pipelines, fastest first, each once (its best measurement); the
    candidates of other origins (no pipeline) left out."""
    best: dict[str, float] = {}
    for speedup, _cand, pipeline in ok:
        if pipeline and speedup > best.get(pipeline, 0.0):
            best[pipeline] = speedup
    return sorted(((s, p) for p, s in best.items()), key=lambda t: (-t[0], t[1]))


def steps_of(pipeline: str) -> list[str]:
    """The pipeline's steps as written ("a,b{x=1}" -> ["a", "b{x=1}"]; a comma inside braces stays in its step)."""
    steps, depth, start = [], 0, 0
    for i, ch in enumerate(pipeline):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            steps.append(pipeline[start:i].strip())
            start = i + 1
    last = pipeline[start:].strip()
    return [s for s in steps if s] + ([last] if last else [])


def siblings(pipeline: str, space: tuple[str, ...]) -> list[str]:
    """The pipelines one change from `pipeline`: each step's options replaced by another entry of its pass's space
    (stencil-registers{factor=8} -> {factor=16}), step by step from the last, then each step dropped (from the last;
    only where one remains). A replacement keeps the other steps where they were."""
    steps = steps_of(pipeline)
    out: list[str] = []
    for i in reversed(range(len(steps))):
        current = parse_pipeline(steps[i])[0]
        for entry in space:
            parsed = parse_pipeline(entry)[0]
            if parsed[0] == current[0] and parsed != current:
                out.append(",".join([*steps[:i], entry, *steps[i + 1:]]))
    if len(steps) > 1:
        out += [",".join(steps[:i] + steps[i + 1:]) for i in reversed(range(len(steps)))]
    return list(dict.fromkeys(out))


def extensions(pipeline: str, space: tuple[str, ...]) -> list[str]:
    """`pipeline` with one more step of `space` at its end, of a pass it does not run yet, in the space's order."""
    used = {name for name, _ in parse_pipeline(pipeline)}
    return [f"{pipeline},{step}" for step in space if parse_pipeline(step)[0][0] not in used]
