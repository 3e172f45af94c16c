from __future__ import annotations

from pathlib import Path

import pytest
from llm_server import RecordedLLM

from s2s.base.errors import UserError
from s2s.optimize.llm.answer import parse_answer
from s2s.optimize.llm.client import LLMClient, LLMError, load_config

KFILE = b"""#include <cstdio>
// s2s: kernel from k.cu:1
__global__ void scale(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0 * x[i];
}
"""
RANGE = (KFILE.index(b"__global__"), len(KFILE) - 1)


@pytest.mark.slow
def test_real_http_roundtrip_with_retry_and_usage() -> None:
    with RecordedLLM(["```cuda\n__global__ void scale(const float* x, float* y, int n) { }\n```"], fail_first=2) as srv:
        cfg = load_config(base_url=srv.base_url, model="test-model", api_key="k", max_retries=3, price_in_per_mtok=1.0)
        reply = LLMClient(cfg).chat([{"role": "user", "content": "hello"}])
        assert reply.attempts == 3 and "scale" in reply.text
        assert reply.prompt_tokens > 0 and reply.cost > 0
        assert srv.requests[-1]["model"] == "test-model"


@pytest.mark.slow
def test_gives_up_after_retries() -> None:
    with RecordedLLM(["never"], fail_first=10) as srv:
        cfg = load_config(base_url=srv.base_url, model="m", max_retries=1)
        with pytest.raises(LLMError):
            LLMClient(cfg).chat([{"role": "user", "content": "x"}])


def test_config_requires_endpoint(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("S2S_LLM_BASE_URL", "OPENAI_BASE_URL", "S2S_LLM_MODEL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("S2S_LLM_CONFIG", str(tmp_path / "none.toml"))
    with pytest.raises(UserError):
        load_config()
    cfg_file = tmp_path / "llm.toml"
    cfg_file.write_text('base_url = "http://127.0.0.1:9/v1"\nmodel = "from-file"\n')
    assert load_config(str(cfg_file)).model == "from-file"


def test_answer_replaces_kernel_and_adds_helpers() -> None:
    answer = ("Here you go:\n```cuda\n__device__ float twice(float v) { return 2.0f * v; }\n"
              "__global__ void scale(const float* __restrict__ x, float* __restrict__ y, int n) {\n"
              "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) y[i] = twice(x[i]);\n}\n```\n"
              '```json\n{"block": [128, 1, 1], "grid": [8, 1, 1]}\n```')
    parsed = parse_answer(answer, KFILE, RANGE, "scale", "cuda")
    assert parsed.reason == "" and parsed.source is not None
    assert b"twice(x[i])" in parsed.source and b"2.0 * x[i]" not in parsed.source
    assert parsed.source.index(b"__device__ float twice") < parsed.source.index(b"__global__ void scale")
    assert parsed.launch is not None and parsed.launch.block == (128, 1, 1)


@pytest.mark.parametrize("answer, reason", [
    ("Just make it faster by caching.", "no code block"),
    ("```cuda\n__global__ void scale(const float* x, float* y, int n, int extra) { }\n```", "changed signature"),
    ("```cuda\n__global__ void other(const float* x, float* y, int n) { }\n```", "does not define the kernel"),
    ("```cuda\n__global__ void scale(const float* x, float* y, int n) { if (n { }\n```", "does not parse"),
])
def test_bad_answers_are_reasons_not_crashes(answer: str, reason: str) -> None:
    parsed = parse_answer(answer, KFILE, RANGE, "scale", "cuda")
    assert parsed.source is None and reason in parsed.reason
