"""The replay proposer: recorded LLM answers from a JSONL file, for tests and reproducible runs.

Each line: {"round": 1, "answer": "...markdown with a code block..."}; lines with "purpose": "repair"
answer repair requests in order.
"""
from __future__ import annotations

import json
from pathlib import Path

from s2s.base.errors import UserError
from s2s.optimize.candidate import Candidate

from .base import State
from .llm import candidate_from_answer


class ReplayProposer:
    name = "replay"

    def __init__(self, path: str | None) -> None:
        if not path:
            raise UserError("the replay proposer needs --replay FILE (JSON lines of recorded answers)")
        p = Path(path)
        if not p.is_file():
            raise UserError("replay file not found", file=path)
        self.path = p
        self.answers: list[dict[str, object]] = []
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                self.answers.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise UserError(f"not a JSON line: {exc.msg}", file=path, line=i) from None
        self.rejected: list[tuple[int, str]] = []

    def propose(self, state: State) -> list[Candidate]:
        out = []
        for i, a in enumerate(self.answers):
            if a.get("purpose") == "repair" or int(a.get("round", 1)) != state.round:  # type: ignore[call-overload]
                continue
            cand, reason = candidate_from_answer(str(a["answer"]), state, origin=f"replay:{self.path.name}#{i + 1}")
            if cand is None:
                self.rejected.append((i + 1, reason))
            else:
                out.append(cand)
        return out

    def repair(self, candidate: Candidate, log: str, state: State) -> Candidate | None:
        for i, a in enumerate(self.answers):
            if a.get("purpose") == "repair" and not a.get("_used"):
                a["_used"] = True
                cand, _reason = candidate_from_answer(str(a["answer"]), state, origin=candidate.origin + f"+repair#{i + 1}")
                return cand
        return None
