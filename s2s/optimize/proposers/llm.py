"""The LLM proposer: prompts from templates/prompts, any OpenAI-compatible endpoint, answers parsed into edits.

The optimize prompt carries performance feedback, not only times: the measured times of the original and the best
variant so far, the Nsight Compute profile of the original (and of a winner of an earlier run) where one was taken
(achieved DRAM bandwidth, FP32 rate, occupancy, the limiting unit), and the roofline floor of the device.
"""
from __future__ import annotations

from statistics import median
from typing import Any

from s2s.base.errors import UserError
from s2s.base.resources import render_prompt
from s2s.mep.roofline import Work, compulsory_bytes, datasheet_roof, floor_us
from s2s.optimize.candidate import Candidate
from s2s.optimize.llm.answer import parse_answer

from .base import State


def _fence(state: State) -> str:
    return {"opencl": "c", "hip": "cpp"}.get(state.manifest.backend, "cuda")


def kernel_range(state: State) -> tuple[int, int]:
    facts = state.facts
    if facts is None:
        return (0, len(state.original))
    return (facts.start, facts.end)


def candidate_from_answer(answer: str, state: State, origin: str) -> tuple[Candidate | None, str]:
    parsed = parse_answer(answer, state.original, kernel_range(state), state.kernel, state.dialect)
    if parsed.source is None:
        return None, parsed.reason
    return Candidate(parsed.source, origin, launch=parsed.launch), ""


LIMITER_HINT = {
    "memory": "memory-limited: fewer bytes per result (reuse through shared memory or registers, coalesced or vector "
              "accesses) pays; more arithmetic does not",
    "compute": "compute-limited: fewer instructions per result (hoisting, strength reduction, FMA, less index "
               "arithmetic) pays",
    "latency": "neither unit is busy (latency-limited): more independent work in flight pays (more threads or blocks, "
               "several accumulators per thread, loads issued before they are needed)",
}


def performance(state: State) -> list[str]:
    """The lines of performance feedback the optimize prompt shows (empty before anything was measured or profiled)."""
    out = []
    measured = [r for r in state.rows if r.status == "ok" and r.ref_us]
    ref_us = median(r.ref_us for r in measured if r.ref_us) if measured else None
    if ref_us:
        best = max(measured, key=lambda r: r.speedup or 0.0)
        line = f"- the original: {ref_us:.2f} µs per launch (median over {len(measured)} timed evaluations)"
        if best.speedup and best.var_us and best.speedup > 1.0:
            line += f"; the fastest verified variant so far: {best.var_us:.2f} µs ({best.speedup:.2f}x, {best.origin})"
        out.append(line)
    roof = datasheet_roof(state.device) if state.device else None
    nbytes = compulsory_bytes(state.manifest)
    if roof is not None and nbytes:
        floor = floor_us(Work(nbytes, 0.0), roof)
        line = (f"- roofline: one launch must move at least {nbytes / 1e6:.2f} MB (every buffer once); at {roof.bandwidth_gbs:.0f} "
                f"GB/s the memory floor on {roof.device} is {floor:.2f} µs")
        if ref_us:
            line += f", so the original reaches {floor / ref_us:.1%} of it"
        out.append(line)
    for name, prof in sorted(state.feedback.items()):
        if prof is None or not hasattr(prof, "dram_gbs"):
            continue
        of_peak = f" ({prof.dram_gbs / roof.bandwidth_gbs:.0%} of the device's {roof.bandwidth_gbs:.0f} GB/s)" if roof else ""
        out.append(f"- Nsight Compute, {_profiled(name)}: {prof.time_us:.2f} µs; DRAM {prof.dram_gbs:.0f} GB/s{of_peak}; "
                   f"{prof.gflops:.0f} GFLOP/s FP32; achieved occupancy {prof.occupancy_pct:.0f}%; compute {prof.sm_pct:.0f}% "
                   f"and memory {prof.memory_pct:.0f}% of peak; {LIMITER_HINT.get(prof.limiter, prof.limiter + '-limited')}")
    return out


def _profiled(name: str) -> str:
    return {"original": "the original", "best": "the best variant of an earlier run"}.get(name, name)


def _attempts(state: State) -> list[dict[str, Any]]:
    out = []
    for r in state.rows[-8:]:
        a: dict[str, Any] = {"origin": r.origin, "status": r.status, "speedup": r.speedup,
                             "message": "; ".join((r.result or {}).get("messages", [])[:2])}
        if r.status == "ok" and r.var_us:
            a["time"] = f"{r.var_us:.2f} µs"
        out.append(a)
    return out


class LLMProposer:
    name = "llm"

    def __init__(self, config_path: str | None = None, candidates_per_round: int = 2) -> None:
        from s2s.optimize.llm.client import LLMClient, load_config

        self.config = load_config(config_path)
        self.client = LLMClient(self.config)
        self.per_round = candidates_per_round
        self.rejected: list[str] = []
        self.calls: list[tuple[str, int, int, float, float]] = []  # purpose, tokens in, out, cost, seconds

    def _ask(self, prompt: str, purpose: str) -> str:
        from s2s.optimize.llm.client import LLMError

        try:
            reply = self.client.chat([{"role": "system", "content": "You are an expert GPU performance engineer."},
                                      {"role": "user", "content": prompt}])
        except LLMError as exc:
            if not self.calls:  # it never answered: a wrong address or a server that is down, not a bad answer
                raise UserError(f"the LLM endpoint {self.config.base_url} did not answer ({exc}); nothing was proposed",
                                hint="check S2S_LLM_BASE_URL (or base_url in the --llm-config file) and that the server "
                                     "runs") from None
            self.rejected.append(f"{purpose}: {exc}")
            return ""
        self.calls.append((purpose, reply.prompt_tokens, reply.completion_tokens, reply.cost, reply.seconds))
        return reply.text

    def propose(self, state: State) -> list[Candidate]:
        attempts = _attempts(state)
        base = state.best.source if state.best is not None else state.original
        prompt = render_prompt(
            "optimize.md.j2", backend=state.manifest.backend, device=state.device, kernel=state.kernel,
            rtol=state.manifest.rtol, launch=state.manifest.launch, params=state.manifest.params,
            measurements=f"best so far {state.best_speedup:.2f}x" if state.rows else "",
            patterns=state.patterns, attempts=attempts, performance=performance(state), fence=_fence(state), source=base.decode("utf-8", "replace"))
        out = []
        for _ in range(self.per_round):
            answer = self._ask(prompt, "optimize")
            if not answer:
                continue
            cand, reason = candidate_from_answer(answer, state, origin=f"llm:{self.config.model}")
            if cand is None:
                self.rejected.append(reason)
            else:
                out.append(cand)
        return out

    def repair(self, candidate: Candidate, log: str, state: State) -> Candidate | None:
        prompt = render_prompt("repair.md.j2", kernel=state.kernel, fence=_fence(state), diagnostics=log[-6000:],
                               source=candidate.source.decode("utf-8", "replace"))
        answer = self._ask(prompt, "repair")
        if not answer:
            return None
        cand, reason = candidate_from_answer(answer, state, origin=candidate.origin + "+repair")
        if cand is None:
            self.rejected.append(f"repair: {reason}")
        return cand
