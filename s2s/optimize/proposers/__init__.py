"""Proposers turn (kernel source, MEP facts, history, inherited patterns) into candidate rewrites.

They register in one table; adding one touches one module and one line here.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .base import Proposer, State


def _builtin(**kw: Any) -> Proposer:
    from .builtin import BuiltinProposer

    return BuiltinProposer()


def _llm(**kw: Any) -> Proposer:
    from .llm import LLMProposer

    return LLMProposer(config_path=kw.get("llm_config"))


def _replay(**kw: Any) -> Proposer:
    from .replay import ReplayProposer

    return ReplayProposer(kw.get("replay_file"))


PROPOSERS: dict[str, Callable[..., Proposer]] = {"builtin": _builtin, "llm": _llm, "replay": _replay}

__all__ = ["PROPOSERS", "Proposer", "State"]
