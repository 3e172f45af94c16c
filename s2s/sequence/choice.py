"""Which form of a replayed sequence MEP to reintegrate, from the harness's result.

    choose_form(result, min_speedup) -> (form, why)     form "" when none wins; why says what was measured

The forms the host code can take (s2s.sequence.host_graph): graph_body (a graph of one body period, instantiated once,
launched per body), graph_window (the whole loop in one graph) and graph_run (a kept graph of a whole run of a loop
the application runs many times, instantiated at its first run; with_graph_run adds it to a result), and persistent
(s2s.sequence.host_persistent: the window's iterations as one cooperative launch; its setup the grid's sizing and a
trial launch, the schedule's filling and check timed with each run). Each is timed by the harness over the captured
window; its instantiation (setup_ms) is paid once per execution of the loop in the application, so it counts here:
a form wins when the original's fastest run over (its median + its instantiation) is at least `min_speedup` and its
final state passed the checks. The best such form is chosen.
"""
from __future__ import annotations

from typing import Any

FORMS = ("graph_body", "graph_window", "persistent")


def estimated_runs(profiled_launches: float, window_launches: int, whole_run: bool) -> float:
    """How many times the application ran the loop, when the window is one whole run of it: the profile's launches
    over the window's; 0 when the window is not a whole run."""
    return float(profiled_launches) / max(1, window_launches) if whole_run else 0.0


def with_graph_run(result: dict[str, Any], runs: float) -> dict[str, Any]:
    """`result` with the form graph_run added when the window was a whole run of a loop the application runs `runs`
    times (estimated from the profile: its launches over the window's): the harness's whole-window graph, its
    instantiation paid once for all the runs (a kept graph, relaunched by each run), so a run's share of it is
    setup / runs. Unchanged when `runs` < 2 or the whole-window graph was not measured."""
    modes = result.get("modes", {})
    if runs < 2 or "graph_window" not in modes:
        return result
    window = modes["graph_window"]
    run = {**window, "setup_ms": float(window.get("setup_ms", 0.0)) / runs, "runs": round(runs, 2)}
    checks = dict(result.get("checks", {}))
    if "graph_window" in checks:
        checks["graph_run"] = checks["graph_window"]
    return {**result, "modes": {**modes, "graph_run": run}, "checks": checks}


def form_speedup(result: dict[str, Any], form: str) -> float:
    """The original's fastest run over the form's median time with its instantiation; 0 when not measured."""
    modes = result.get("modes", {})
    if form not in modes or "original" not in modes:
        return 0.0
    total = float(modes[form]["median_ms"]) + float(modes[form].get("setup_ms", 0.0))
    return float(modes["original"]["min_ms"]) / total if total > 0 else 0.0


def choose_form(result: dict[str, Any], min_speedup: float = 1.0, forms: tuple[str, ...] = FORMS) -> tuple[str, str]:
    if result.get("verdict") != "ok":
        return "", "a check of the sequence MEP failed"
    modes, checks = result.get("modes", {}), result.get("checks", {})
    tried = [f for f in forms if f in modes and checks.get(f, {}).get("ok")]
    if not tried:
        return "", "no form was measured"
    best = max(tried, key=lambda f: form_speedup(result, f))
    said = "; ".join(f"{f}: {modes[f]['median_ms']:.3f} ms + {modes[f].get('setup_ms', 0.0):.3f} ms to instantiate, "
                     f"{form_speedup(result, f):.2f}x" for f in tried)
    said += f"; the original's fastest run {modes['original']['min_ms']:.3f} ms"
    got = form_speedup(result, best)
    if got <= 1.0 or got < min_speedup:
        return "", f"no form beat the original by {max(1.0, min_speedup):.2f}x with its instantiation ({said})"
    return best, said
