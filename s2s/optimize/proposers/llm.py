"""The LLM proposer: prompts from templates/prompts, any OpenAI-compatible endpoint, answers parsed into edits."""
from __future__ import annotations

from s2s.base.resources import render_prompt
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
            self.rejected.append(f"{purpose}: {exc}")
            return ""
        self.calls.append((purpose, reply.prompt_tokens, reply.completion_tokens, reply.cost, reply.seconds))
        return reply.text

    def propose(self, state: State) -> list[Candidate]:
        attempts = [{"origin": r.origin, "status": r.status, "speedup": r.speedup,
                     "message": "; ".join((r.result or {}).get("messages", [])[:2])} for r in state.rows[-8:]]
        base = state.best.source if state.best is not None else state.original
        prompt = render_prompt(
            "optimize.md.j2", backend=state.manifest.backend, device=state.device, kernel=state.kernel,
            rtol=state.manifest.rtol, launch=state.manifest.launch, params=state.manifest.params,
            measurements=f"best so far {state.best_speedup:.2f}x" if state.rows else "",
            patterns=state.patterns, attempts=attempts, fence=_fence(state), source=base.decode("utf-8", "replace"))
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
