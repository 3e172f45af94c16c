"""The LLM proposer over real HTTP against a local OpenAI-compatible server serving recorded answers,
bad ones included; each must be caught and recorded. Runs on the OpenCL sample on PoCL."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import SAMPLES
from llm_server import RecordedLLM

from s2s.extract.mep_writer import make_mep
from s2s.mep.history import History
from s2s.optimize.loop import Options, optimize

HEAD = "__kernel void matvec(__global const REAL* A, __global const REAL* x, __global REAL* y, const int n)\n"


def block(body: str) -> str:
    return "```c\n" + HEAD + "{\n" + body + "\n}\n```"


GOOD = block("    int i = get_global_id(0);\n    if (i >= n) return;\n    REAL s0 = 0, s1 = 0;\n    int k = 0;\n"
             "    for (; k + 1 < n; k += 2) { s0 += A[IDX(i, k, n)] * x[k]; s1 += A[IDX(i, k + 1, n)] * x[k + 1]; }\n"
             "    for (; k < n; ++k) s0 += A[IDX(i, k, n)] * x[k];\n    y[i] = s0 + s1;")
BROKEN = block("    int i = get_global_id(0);\n    if (i >= n) return;\n    y[i] = fast_dot_that_does_not_exist(A, x, i, n);")
CHANGED_SIGNATURE = "```c\n__kernel void matvec(__global const REAL* A, __global const REAL* x, __global REAL* y, const int n, int m)\n{ }\n```"
SKIPS_WORK = block("    int i = get_global_id(0);\n    if (i >= n) return;\n    REAL sum = 0;\n"
                   "    for (int k = 0; k < n / 2; ++k) sum += A[IDX(i, k, n)] * x[k];\n    y[i] = sum;")
CACHES = block("    int i = get_global_id(0);\n    if (i >= n) return;\n"
               "    if (y[i] != 0 && y[i] == y[i]) return;  /* reuse what the last launch left */\n"
               "    REAL sum = 0;\n    for (int k = 0; k < n; ++k) sum += A[IDX(i, k, n)] * x[k];\n    y[i] = sum;")
ZEROS = block("    int i = get_global_id(0);\n    if (i < n) y[i] = 0;")


@pytest.fixture
def mep(tmp_path: Path) -> Path:
    out = tmp_path / "mep-mv"
    make_mep(str(SAMPLES / "ocl_solver"), "matvec", str(out))
    return out


@pytest.mark.slow
def test_llm_answers_good_and_bad_are_all_recorded(mep: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # request order: round 1 asks twice, then the repair of the broken one; rounds 2 and 3 ask twice each
    answers = ["I would unroll the loop, but here is no code.", BROKEN, GOOD, CHANGED_SIGNATURE, SKIPS_WORK, CACHES, ZEROS]
    with RecordedLLM(answers, fail_first=1) as srv:
        monkeypatch.setenv("S2S_LLM_BASE_URL", srv.base_url)
        monkeypatch.setenv("S2S_LLM_MODEL", "recorded")
        monkeypatch.setenv("S2S_LLM_API_KEY", "test")
        out = optimize(mep, Options(proposer="llm", rounds=3, max_evals=10, patience=5, use_patterns=False))
        prompts = [r["messages"][-1]["content"] for r in srv.requests]
    assert any("does not compile" in p and "fast_dot_that_does_not_exist" in p for p in prompts)  # repair got diagnostics
    assert "__kernel void matvec" in prompts[0] and "Earlier attempts" in prompts[-1]
    rows = History(mep / "history.sqlite").rows()
    by_status = {}
    for r in rows:
        by_status.setdefault(r.status, []).append(r)
    assert any("+repair" in r.origin for r in by_status.get("ok", []))  # repaired on the next turn
    assert len(by_status.get("compile-failed", [])) == 1
    wrong = by_status.get("wrong-output", [])
    assert len(wrong) == 3, [(r.origin, r.status) for r in rows]  # skips work, caches, all zeros: all caught
    assert out.best_id is None or out.best_id in {r.id for r in by_status["ok"]}
    assert all(r.status != "ok" or r.result and all(o["ok"] for o in r.result["outputs"]) for r in rows)


@pytest.mark.slow
def test_replay_proposer_reproduces_a_run(mep: Path, tmp_path: Path) -> None:
    replay = tmp_path / "answers.jsonl"
    replay.write_text("\n".join(json.dumps(a) for a in [
        {"round": 1, "answer": GOOD}, {"round": 1, "answer": "no code here"}, {"round": 1, "answer": ZEROS}]) + "\n")
    out = optimize(mep, Options(proposer="replay", replay_file=str(replay), rounds=1, max_evals=5, use_patterns=False))
    statuses = sorted(r.status for r in out.rows)
    assert statuses == ["ok", "wrong-output"]
