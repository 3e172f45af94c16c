"""vector-elementwise-2d: the zoo's ger in float4 rows, alone and composed with thread-coarsen along y and launch-config
(both orders), run on the CPU against the original (tests/emulate_cuda.py: rows whose length is not a multiple of 4,
buffers one element past a 16-byte boundary), compiled for sm_90, the OpenCL form on PoCL; round 1 of the built-in
search tries it on ger."""
from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import ROOT, needs_nvcc
from emulate_cuda import Launch, same_outputs
from mep_util import ParamSpec, make_mep, manifest
from session_builds import nvcc_checks

from s2s.lang.edits import Refused
from s2s.optimize.candidate import Candidate
from s2s.optimize.registry import Applied, build_pipeline, make_pass, run_pass, search_space

ZOO = ROOT / "bench" / "zoo"
GER = (ZOO / "ger" / "ger.cu").read_bytes()
FORMS = ("vector-elementwise-2d", "thread-coarsen{axis=y factor=4},vector-elementwise-2d",
         "vector-elementwise-2d,thread-coarsen{axis=y factor=4},launch-config{block=128}",
         "thread-coarsen{axis=y factor=2},vector-elementwise-2d,launch-config{block=256}")


def _apply(pipeline: str, source: bytes, launch: Launch) -> tuple[bytes, Launch]:
    for p in build_pipeline(pipeline):
        out = run_pass(p, source, "cuda", "ger")
        assert isinstance(out, Applied), (pipeline, out)
        source = out.text
        if out.launch is not None:
            grid, block = out.launch.resolve(launch.grid, launch.block)
            launch = Launch(grid, block)
    return source, launch


def test_ger_takes_four_columns_per_thread_in_either_order() -> None:
    base = Launch((256, 1024, 1), (32, 8, 1))
    alone, launch = _apply("vector-elementwise-2d", GER, base)
    assert launch == Launch((64, 1024, 1), (32, 8, 1))
    assert b"*reinterpret_cast<float4*>(&A[i * n + (s2s_q * 4)]) = make_float4(" in alone
    assert b"const float s2s_x = x[i];" in alone and b"s2s_A[s2s_c] += alpha * s2s_x * s2s_y[s2s_c];" in alone
    after, la = _apply("thread-coarsen{axis=y factor=4},vector-elementwise-2d", GER, base)
    before, lb = _apply("vector-elementwise-2d,thread-coarsen{axis=y factor=4}", GER, base)
    assert after == before and la == lb == Launch((64, 256, 1), (32, 8, 1))
    _, lc = _apply(FORMS[2], GER, base)
    assert lc == Launch((16, 2048, 1), (128, 1, 1))
    assert set(FORMS[:1] + FORMS[2:3]) <= set(search_space())
    assert isinstance(run_pass(make_pass("vector-elementwise"), GER, "cuda", "ger"), Refused)  # the 1-D pass still refuses


@pytest.mark.parametrize("name", ["axpy", "transpose_gather", "dot_atomic", "histo_global"])
def test_zoo_kernels_that_are_not_2d_elementwise_are_refused(name: str) -> None:
    out = run_pass(make_pass("vector-elementwise-2d"), (ZOO / name / f"{name}.cu").read_bytes(), "cuda", name)
    assert isinstance(out, Refused) and out.reason, out


@pytest.mark.slow
@pytest.mark.parametrize("n,offset", [(37, 0), (37, 1), (40, 0), (40, 1)])
def test_ger_forms_match_the_original_on_the_cpu(tmp_path: Path, n: int, offset: int) -> None:
    """Every element of A bit for bit: n = 37 (odd rows misaligned, a partial quad at each row's end), n = 40 (every
    row aligned), buffers aligned or one element off. A mutant storing the words' lanes swapped is caught wherever a
    row is 16-byte aligned (n = 37: every fourth row) and only there (one element off: every quad is scalar)."""
    base = Launch(((n + 31) // 32, (n + 7) // 8, 1), (32, 8, 1))
    counts, scalars = {"A": n * n, "x": n, "y": n}, {"alpha": "0.5f", "n": str(n)}
    for k, pipeline in enumerate(FORMS):
        after, launch = _apply(pipeline, GER, base)
        (tmp_path / str(k)).mkdir()
        assert same_outputs(tmp_path / str(k), "ger", GER, after, (base, launch), counts, scalars, offset) == "SAME", pipeline
    after, launch = _apply(FORMS[0], GER, base)  # the words' lanes swapped: seen wherever a row takes the words
    broken = after.replace(b"make_float4(s2s_A[0], s2s_A[1]", b"make_float4(s2s_A[1], s2s_A[0]")
    assert broken != after
    seen = same_outputs(tmp_path, "ger", GER, broken, (base, launch), counts, scalars, offset) != "SAME"
    assert seen == (offset == 0)  # one element off, no word of y is aligned: every quad takes the scalar code


@pytest.mark.slow
@needs_nvcc
def test_zoo_ger_forms_compile_for_sm90(tmp_path: Path) -> None:
    files = []
    for k, pipeline in enumerate(FORMS):
        text, _ = _apply(pipeline, GER, Launch((256, 1024, 1), (32, 8, 1)))
        files.append(tmp_path / f"ger_{k}.cu")
        files[-1].write_bytes(text.replace(b'"../zoo.h"', f'"{ZOO / "zoo.h"}"'.encode()))
    nvcc = shutil.which("nvcc")
    assert nvcc is not None
    proc = nvcc_checks(nvcc, ["-c", "-arch=sm_90", "-Werror", "all-warnings"], files, tmp_path, 300)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_builtin_search_tries_the_float4_rows_in_round_one(tmp_path: Path) -> None:
    from test_fast_math import _zoo_state

    from s2s.optimize.proposers.builtin import BuiltinProposer

    state = _zoo_state("ger", tmp_path)
    state.round = 1
    origins = [c.origin for c in BuiltinProposer().propose(state)]
    assert "pass:vector-elementwise-2d" in origins, origins
    assert "pass:vector-elementwise-2d,thread-coarsen{axis=y factor=4},launch-config{block=128}" in origins, origins


GER_CL = (ROOT / "tests/golden/passes/vector_elementwise_2d_opencl.cl").read_text().split("// ----- INPUT\n")[1].split("// -----")[0]


@pytest.mark.slow
def test_opencl_ger_on_pocl(tmp_path: Path) -> None:
    """37 rows of 1001 columns (ld 1001): whole quads in vload4/vstore4, the partial quad at each row's end one element
    at a time, the grid's x a quarter; a vector branch that forgets the partial quad writes past the row: caught."""
    pytest.importorskip("pyopencl")
    from s2s.lang.kernel_facts import kernel_facts
    from s2s.mep.evaluate import evaluate
    from s2s.mep.manifest import load
    from s2s.optimize.loop import write_variant
    from s2s.optimize.proposers.base import State
    from s2s.optimize.proposers.builtin import apply_pipeline

    m, n = 37, 1001
    params = [ParamSpec("a", "__global float*", "inout", "float", count=m * n, space="global"),
              ParamSpec("x", "__global const float*", "in", "float", count=m, space="global"),
              ParamSpec("y", "__global const float*", "in", "float", count=n, space="global"),
              ParamSpec("alpha", "const float", "scalar", "float", value=0.5),
              ParamSpec("m", "const int", "scalar", "int", value=m),
              ParamSpec("n", "const int", "scalar", "int", value=n),
              ParamSpec("lda", "const int", "scalar", "int", value=n)]
    mep = tmp_path / "mep"
    make_mep(mep, GER_CL, manifest("ger", "opencl", "kernel.cl", params, (1008, 40, 1), (16, 4, 1), repetitions=3,
                                   warmup=1, timeout_s=60.0))
    state = State(manifest=load(mep), original=GER_CL.encode(), kernel="ger", dialect="opencl",
                  facts=kernel_facts(GER_CL.encode(), "opencl", "ger"))
    cand = apply_pipeline("vector-elementwise-2d", state)
    assert isinstance(cand, Candidate), cand
    assert cand.launch is not None and cand.launch.grid[:2] == (256, 40) and cand.launch_rules == ("coarsen-x",)
    write_variant(mep, state.manifest.kernel_file, cand)
    got = evaluate(mep, cand.id)
    assert got.verdict == "ok", (got.verdict, got.messages)
    broken = replace(cand, source=cand.source.replace(b"s2s_q * 4 + 3 < (n)", b"s2s_q * 4 < (n)"))
    assert broken.source != cand.source
    write_variant(mep, state.manifest.kernel_file, broken)
    assert evaluate(mep, broken.id).verdict != "ok"
