"""smem-allpairs{unroll=U}: full tiles run a pair loop of TILE trips under `#pragma unroll U`, the guarded loop only the
last, partial tile; hoist-invariants after it reads the n-body kernels' x[i], y[i], z[i] once before each pair loop
(accepting the loop's `continue`). Issue 15: nbody_aos was issue-limited by `j < n && j - t < 256` on every pair, and
nbody_soa's tiled form read x[i], y[i], z[i] from global memory on every pair. The rewritten zoo kernels run threaded on
the CPU (tests/emulate_cuda_block.py) against the originals at sizes that are not a multiple of the tile, and must match
bit for bit (the same additions in the same order); they build with nvcc -arch=sm_90."""
from __future__ import annotations

import shutil
from pathlib import Path

import emulate_cuda_block
import pytest
from conftest import ROOT, needs_nvcc
from emulate_cuda import Launch
from emulate_cuda_block import same_outputs
from session_builds import nvcc_checks

from s2s.optimize.registry import Applied, build_pipeline, run_pass

ZOO = ROOT / "bench" / "zoo"
# float4 buffers filled from an unsigned (same_outputs' fill for non-float elements), make_float4, rsqrtf
FLOAT4 = ("struct float4 { float x, y, z, w; float4() = default; float4(float a, float b, float c, float d) : x(a), y(b), z(c), "
          "w(d) {} explicit float4(unsigned v) : x(v % 13u / 7.0f), y(v % 11u / 5.0f), z(v % 7u / 3.0f), w(0.5f + v % 5u / 10.0f) {} };\n"
          "static inline float4 make_float4(float a, float b, float c, float d) { return float4(a, b, c, d); }\n"
          "#define rsqrtf(v) (1.0f / std::sqrt(v))")


def _apply(pipeline: str, source: bytes, kernel: str) -> Applied:
    launch = None  # smem-allpairs' launch change (the passes after it keep the launch)
    for p in build_pipeline(pipeline):
        out = run_pass(p, source, "cuda", kernel)
        assert isinstance(out, Applied), (pipeline, out)
        source, launch = out.text, launch or out.launch
    return Applied(source, launch, pipeline)


def _launches(out: Applied, n: int) -> tuple[Launch, Launch]:
    grid, block = ((n + 127) // 128, 1, 1), (128, 1, 1)
    assert out.launch is not None
    return Launch(grid, block), Launch(*out.launch.resolve(grid, block))


def test_full_tiles_run_a_fixed_trip_loop_and_hoisted_loads() -> None:
    src = (ZOO / "nbody_soa" / "nbody_soa.cu").read_bytes()
    text = _apply("smem-allpairs{tile=256 unroll=8},fast-math,hoist-invariants", src, "nbody_soa").text.decode()
    body = text[text.index("__syncthreads();"):text.rindex("__syncthreads();")]
    assert "if (NB - t >= 256) {\n                const float x_h = x[i];" in body
    assert "#pragma unroll 8\n                for (int j = t; j < t + 256; ++j) {\n                    if (j == i)" in body
    assert "} else {\n                const float x_h_ = t < NB ? x[i] : (float)0;" in body
    assert "for (int j = t; j < NB; ++j) {" in body and "j - t < 256" not in body
    assert body.count("p -= m_s[j - t] * rsqrtf(dx * dx + dy * dy + dz * dz + 1e-4f);") == 2
    assert "x[i]" not in body.replace("= x[i];", "").replace("? x[i] :", "")  # only the hoisted reads remain


@pytest.mark.slow
@pytest.mark.parametrize(("n", "pipeline"), [
    (301, "smem-allpairs{tile=128 unroll=8},hoist-invariants"),  # two full tiles and 45 bodies
    (100, "smem-allpairs{tile=128 unroll=4},hoist-invariants"),  # one partial tile only
    (256, "smem-allpairs{tile=128 unroll=8}"),  # full tiles only
    (301, "smem-allpairs{tile=128},hoist-invariants"),  # the guarded loop, x[i] hoisted under its first-iteration test
])
def test_nbody_soa_matches_at_odd_sizes(tmp_path: Path, n: int, pipeline: str) -> None:
    src = (ZOO / "nbody_soa" / "nbody_soa.cu").read_bytes().replace(b"#define NB 32768", f"#define NB {n}".encode())
    out = _apply(pipeline, src, "nbody_soa")
    counts = dict.fromkeys(("x", "y", "z", "m", "phi"), n)
    assert same_outputs(tmp_path, "nbody_soa", src, out.text, _launches(out, n), counts, {}) == "SAME"
    if n == 301:
        broken = out.text.replace(b"j < t + 128", b"j < t + 127").replace(b"const float x_h = ((t) < NB", b"const float x_h = ((t) > NB")
        assert broken != out.text
        assert same_outputs(tmp_path, "nbody_soa", src, broken, _launches(out, n), counts, {}).startswith("DIFF phi")


@pytest.mark.slow
@pytest.mark.parametrize("n", [301, 77])
def test_nbody_aos_matches_at_odd_sizes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    monkeypatch.setattr(emulate_cuda_block, "SHIM", emulate_cuda_block.SHIM.replace("struct float4 { float x, y, z, w; };", FLOAT4))
    src = (ZOO / "nbody_aos" / "nbody_aos.cu").read_bytes()
    out = _apply("smem-allpairs{tile=128 unroll=8}", src, "nbody_aos")
    counts, scalars = {"pos": n, "acc": n}, {"n": str(n)}
    assert same_outputs(tmp_path, "nbody_aos", src, out.text, _launches(out, n), counts, scalars) == "SAME"
    broken = out.text.replace(b"for (int j = t; j < n; ++j)", b"for (int j = t + 1; j < n; ++j)")
    assert broken != out.text
    assert same_outputs(tmp_path, "nbody_aos", src, broken, _launches(out, n), counts, scalars).startswith("DIFF acc")


@pytest.mark.slow
@needs_nvcc
def test_zoo_nbody_unrolled_forms_compile_for_sm90(tmp_path: Path) -> None:
    from test_fast_math import _zoo_state

    from s2s.optimize.candidate import Candidate
    from s2s.optimize.proposers.builtin import apply_pipeline

    nvcc = shutil.which("nvcc")
    assert nvcc is not None
    files: dict[str, list[Path]] = {}
    pipelines: dict[str, str] = {}
    for k, (kernel, pipeline) in enumerate([("nbody_aos", "smem-allpairs{tile=256 unroll=8}"),
                                            ("nbody_aos", "smem-allpairs{tile=256 unroll=4}"),
                                            ("nbody_soa", "smem-allpairs{tile=256},fast-math,hoist-invariants"),
                                            ("nbody_soa", "smem-allpairs{tile=256 unroll=8},fast-math,hoist-invariants")]):
        c = apply_pipeline(pipeline, _zoo_state(kernel, tmp_path / str(k)))
        assert isinstance(c, Candidate), c
        assert (b"#pragma unroll" in c.source) == ("unroll" in pipeline) and (b"const float x_h = " in c.source) == ("hoist" in pipeline)
        f = tmp_path / f"v{k}.cu"
        f.write_bytes(c.source)
        files.setdefault(kernel, []).append(f)
        pipelines[f.name] = pipeline
    for kernel, fs in files.items():  # one check per zoo kernel's include directory; a failure names the v{k}.cu
        r = nvcc_checks(nvcc, ["-arch=sm_90", "-c", "-I", str(ZOO / kernel)], fs, tmp_path, 900)
        assert r.returncode == 0, f"{pipelines}: {r.stderr[-2000:]}"


def test_builtin_search_reaches_the_unrolled_forms_in_round_one(tmp_path: Path) -> None:
    """Round 1 of the built-in proposer: smem-allpairs' space holds {tile=256 unroll=8} (in nbody_aos's first four) and
    {tile=256 unroll=8},fast-math,hoist-invariants (in nbody_soa's first eight, after the register-tiled forms of
    test_builtin_search_tries_the_register_tiled_allpairs_first); fast-math refuses the composite on nbody_aos (it calls
    rsqrtf)."""
    from test_fast_math import _zoo_state

    from s2s.optimize.proposers.builtin import BuiltinProposer

    orders = {}
    for kernel in ("nbody_soa", "nbody_aos"):
        state = _zoo_state(kernel, tmp_path)
        state.round = 1
        orders[kernel] = [c.origin for c in BuiltinProposer().propose(state)]
    soa, aos = orders["nbody_soa"], orders["nbody_aos"]
    assert soa.index("pass:smem-allpairs{tile=256 unroll=8},fast-math,hoist-invariants") < 8, soa
    assert soa.index("pass:fast-math,smem-allpairs{tile=256}") < 5, soa
    assert aos.index("pass:smem-allpairs{tile=256 unroll=8}") < 4, aos
    assert not any("hoist-invariants" in o for o in aos), aos


def test_builtin_search_tries_the_register_tiled_allpairs_first(tmp_path: Path) -> None:
    """Round 1 starts with the whole register-tiled n-body form, the H200 plan run's best (bench/results/gpu-plans/
    run-2026-11-30-37f2646-next): nbody_soa 508 us with fast-math,smem-allpairs{tile=512},allpairs-bodies{bodies=4
    skip=subtract},allpairs-pack,allpairs-lanes{lanes=8},loop-unroll{factor=4} (10.75x; the previous search's winner
    1000 us), nbody_aos 826 us with tile=512 and 2 bodies (4.08x). As one space entry each, the time budget reaches them
    in round 1 instead of after three extensions."""
    from test_fast_math import _zoo_state

    from s2s.optimize.proposers.builtin import BuiltinProposer

    orders = {}
    for kernel in ("nbody_soa", "nbody_aos"):
        state = _zoo_state(kernel, tmp_path / kernel)
        state.round = 1
        orders[kernel] = [c.origin for c in BuiltinProposer().propose(state)]
    assert orders["nbody_soa"][0] == ("pass:fast-math,smem-allpairs{tile=512},allpairs-bodies{bodies=4 skip=subtract},"
                                      "allpairs-pack,allpairs-lanes{lanes=8},loop-unroll{factor=4}"), orders["nbody_soa"]
    assert orders["nbody_aos"][0] == ("pass:smem-allpairs{tile=512},allpairs-bodies{bodies=2},allpairs-lanes{lanes=8},"
                                      "loop-unroll{factor=4}"), orders["nbody_aos"]
