"""register-blocking: the launch rule it needs, its options, nvcc builds, and real runs on PoCL against the original."""
from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import SAMPLES, needs_nvcc
from session_builds import nvcc_checks

from s2s.lang.edits import LaunchChange, Refused
from s2s.lang.kernel_facts import kernel_facts
from s2s.optimize.candidate import Candidate
from s2s.optimize.registry import Applied, example, make_pass, run_pass

LINALG = SAMPLES / "heat3d_cuda/src/kernels_linalg.cu"
OPTIONS = ({}, {"tile": "32", "rx": "2", "ry": "4"}, {"tile": "64", "rx": "8", "ry": "8", "tk": "8"}, {"tile": "128", "rx": "8", "ry": "8"})


def test_tile_coarse_rule() -> None:
    # 208 x 208 threads in 16 x 16 blocks; 64 x 64 outputs per block of 16 x 16 threads
    assert LaunchChange((16, 16, 1), "tile-coarse", per_item=64).resolve((13, 13, 1), (16, 16, 1)) == ((4, 4, 1), (16, 16, 1))
    assert LaunchChange((16, 8, 1), "tile-coarse", per_item=32).resolve((7, 3, 1), (32, 32, 1)) == ((7, 3, 1), (16, 8, 1))
    assert LaunchChange((8, 8, 1), "tile-coarse", per_item=64).resolve((1, 1, 1), (65, 1, 1)) == ((2, 1, 1), (8, 8, 1))


@pytest.mark.parametrize("opts", OPTIONS, ids=lambda o: "-".join(o.values()) or "default")
def test_launch_covers_the_matrix(opts: dict[str, str]) -> None:
    p = make_pass("register-blocking", opts)
    out = run_pass(p, LINALG.read_bytes(), "cuda", "matmul_naive")
    assert isinstance(out, Applied) and out.launch is not None, out
    tile, rx, ry = p.tile, p.rx, p.ry  # type: ignore[attr-defined]
    assert out.launch == LaunchChange((tile // rx, tile // ry, 1), "tile-coarse", per_item=tile)
    grid, block = out.launch.resolve((-(-1000 // 16), -(-1000 // 16), 1), (16, 16, 1))
    assert grid[0] == -(-1008 // tile) and grid[0] * tile >= 1000 and block == (tile // rx, tile // ry, 1)


@pytest.mark.parametrize("opts,why", [({"tile": "48"}, "tile must be"), ({"rx": "3"}, "rx and ry"),
                                      ({"tile": "128", "rx": "2", "ry": "2"}, "1024 threads")])
def test_bad_options_are_refused(opts: dict[str, str], why: str) -> None:
    before, _, dialect = example("register-blocking")
    out = run_pass(make_pass("register-blocking", opts), before.encode(), dialect)
    assert isinstance(out, Refused) and why in out.reason


def test_refuses_one_dimensional_kernels() -> None:
    out = run_pass(make_pass("register-blocking"), LINALG.read_bytes(), "cuda", "matvec_rows")
    assert isinstance(out, Refused) and "2-D" in out.reason


@pytest.mark.slow
@needs_nvcc
def test_example_and_sample_rewrites_compile(tmp_path: Path) -> None:
    files = [tmp_path / "example.cu"]
    files[0].write_text(example("register-blocking")[1])
    for i, opts in enumerate(OPTIONS):
        out = run_pass(make_pass("register-blocking", opts), LINALG.read_bytes(), "cuda", "matmul_naive")
        assert isinstance(out, Applied), out
        files.append(tmp_path / f"linalg_{i}.cu")
        files[-1].write_bytes(out.text)
    nvcc = shutil.which("nvcc")
    assert nvcc is not None
    proc = nvcc_checks(nvcc, ["-c", "-arch=sm_90", "-I", str(SAMPLES / "heat3d_cuda/include")], files, tmp_path, 300)
    assert proc.returncode == 0, proc.stderr[-4000:]


# -- real runs on PoCL: n = 200 is a multiple of none of the tiles -----------------------------------
@pytest.fixture(scope="module")
def matmul_state(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    pytest.importorskip("pyopencl")
    from s2s.extract.mep_writer import make_mep
    from s2s.mep.manifest import load
    from s2s.optimize.proposers.base import State

    mep = tmp_path_factory.mktemp("rb") / "mep-matmul"
    make_mep(str(SAMPLES / "ocl_solver"), "matmul", str(mep), overrides={"PROB_N": "200"})
    manifest = load(mep)
    assert next(p.value for p in manifest.params if p.name == "n") == 200  # the override took
    assert manifest.launch.grid[:2] == (208, 208)  # work-items, rounded up to the 16 x 16 work-groups
    original = (mep / manifest.kernel_file).read_bytes()
    return mep, State(manifest=manifest, original=original, kernel="matmul", dialect="opencl",
                      facts=kernel_facts(original, "opencl", "matmul"))


def _evaluate(mep: Path, state, cand: Candidate):  # type: ignore[no-untyped-def]
    from s2s.mep.evaluate import evaluate
    from s2s.optimize.loop import write_variant

    write_variant(mep, state.manifest.kernel_file, cand)
    return evaluate(mep, cand.id)


@pytest.mark.slow
@pytest.mark.parametrize("pipeline,tile", [("register-blocking", 64), ("register-blocking{tile=32 rx=2 ry=4}", 32),
                                           ("register-blocking{tile=64 rx=8 ry=8 tk=8}", 64)])
def test_matches_the_original_on_pocl(matmul_state, pipeline: str, tile: int) -> None:  # type: ignore[no-untyped-def]
    from s2s.optimize.proposers.builtin import apply_pipeline

    mep, state = matmul_state
    cand = apply_pipeline(pipeline, state)
    assert isinstance(cand, Candidate), cand
    assert cand.launch is not None  # OpenCL sizes in work-items: groups of tile x tile outputs covering all 200
    assert all(g % b == 0 and g // b == -(-208 // tile) for g, b in zip(cand.launch.grid[:2], cand.launch.block[:2]))
    m = _evaluate(mep, state, cand)
    assert m.verdict == "ok", (m.verdict, m.messages)
    assert m.outputs and all(o.ok for o in m.outputs) and m.input_sets >= 1
    print(f"\n{pipeline}: {m.speedup:.2f}x over the naive kernel on {m.device} (n = 200)")


@pytest.mark.slow
def test_a_wrong_rewrite_is_caught_on_pocl(matmul_state) -> None:  # type: ignore[no-untyped-def]
    """The check above is not vacuous: the same rewrite with its K tail dropped gives wrong outputs."""
    from s2s.optimize.proposers.builtin import apply_pipeline

    mep, state = matmul_state
    cand = apply_pipeline("register-blocking{tile=32 rx=2 ry=2}", state)
    assert isinstance(cand, Candidate), cand
    broken = cand.source.replace(b"t < n; t += 16", b"t + 16 <= n; t += 16")
    assert broken != cand.source
    m = _evaluate(mep, state, replace(cand, source=broken))
    assert m.verdict != "ok"
