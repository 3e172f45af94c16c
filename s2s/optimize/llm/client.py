"""Any OpenAI-compatible endpoint through the `openai` client (imported lazily: the built-in loop never needs it).

Configuration, first found wins: arguments, environment (S2S_LLM_BASE_URL, S2S_LLM_MODEL, S2S_LLM_API_KEY,
falling back to OPENAI_BASE_URL and OPENAI_API_KEY), then a TOML file (--llm-config, S2S_LLM_CONFIG, or
~/.config/s2s/llm.toml) with keys base_url, model, api_key, timeout_s, max_retries, price_in_per_mtok,
price_out_per_mtok.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomllib

from s2s.base.errors import UserError


@dataclass(frozen=True)
class LLMConfig:
    base_url: str
    model: str
    api_key: str = "none"
    timeout_s: float = 120.0
    max_retries: int = 4
    price_in_per_mtok: float = 0.0
    price_out_per_mtok: float = 0.0
    temperature: float = 0.2


@dataclass(frozen=True)
class Reply:
    text: str
    prompt_tokens: int
    completion_tokens: int
    cost: float
    seconds: float
    attempts: int


def load_config(path: str | None = None, **overrides: Any) -> LLMConfig:
    file_path = Path(path or os.environ.get("S2S_LLM_CONFIG") or Path.home() / ".config" / "s2s" / "llm.toml")
    data: dict[str, Any] = {}
    if file_path.is_file():
        try:
            data = tomllib.loads(file_path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise UserError(f"invalid TOML: {exc}", file=str(file_path), line=getattr(exc, "lineno", None)) from None
    elif path:
        raise UserError("LLM configuration file not found", file=path)
    env = {
        "base_url": os.environ.get("S2S_LLM_BASE_URL") or os.environ.get("OPENAI_BASE_URL"),
        "model": os.environ.get("S2S_LLM_MODEL"),
        "api_key": os.environ.get("S2S_LLM_API_KEY") or os.environ.get("OPENAI_API_KEY"),
    }
    merged = {**data, **{k: v for k, v in env.items() if v}, **{k: v for k, v in overrides.items() if v is not None}}
    if not merged.get("base_url") or not merged.get("model"):
        raise UserError("the llm proposer needs an endpoint and a model",
                        hint="set S2S_LLM_BASE_URL and S2S_LLM_MODEL (and S2S_LLM_API_KEY), or write ~/.config/s2s/llm.toml")
    known = {f for f in LLMConfig.__dataclass_fields__}
    return LLMConfig(**{k: v for k, v in merged.items() if k in known})


class LLMClient:
    def __init__(self, config: LLMConfig) -> None:
        try:
            import openai
        except ImportError:
            raise UserError("the llm proposer needs the openai package", hint="pip install 's2s[llm]'") from None
        self._openai = openai
        self.config = config
        self.client = openai.OpenAI(base_url=config.base_url, api_key=config.api_key or "none",
                                    timeout=config.timeout_s, max_retries=0)

    def chat(self, messages: list[dict[str, str]]) -> Reply:
        """One completion, retried with exponential backoff on timeouts, rate limits and server errors."""
        o = self._openai
        retryable = (o.APITimeoutError, o.APIConnectionError, o.RateLimitError, o.InternalServerError)
        delay = 0.5
        start = time.perf_counter()
        for attempt in range(1, self.config.max_retries + 2):
            try:
                resp = self.client.chat.completions.create(model=self.config.model, messages=messages,  # type: ignore[arg-type]
                                                           temperature=self.config.temperature)
            except retryable as exc:
                if attempt > self.config.max_retries:
                    raise LLMError(f"{type(exc).__name__} after {attempt} attempts: {exc}") from None
                time.sleep(delay)
                delay = min(delay * 2, 30.0)
                continue
            except o.APIStatusError as exc:
                raise LLMError(f"endpoint answered {exc.status_code}: {exc.message}") from None
            text = (resp.choices[0].message.content or "") if resp.choices else ""
            usage = resp.usage
            pin = usage.prompt_tokens if usage else 0
            pout = usage.completion_tokens if usage else 0
            cost = pin / 1e6 * self.config.price_in_per_mtok + pout / 1e6 * self.config.price_out_per_mtok
            return Reply(text, pin, pout, cost, time.perf_counter() - start, attempt)
        raise LLMError("no answer")


class LLMError(Exception):
    """The endpoint failed for good: recorded as the candidate's outcome, never a crash."""
