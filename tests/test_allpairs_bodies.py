"""allpairs-bodies (with skip=select|subtract) and allpairs-pack: each thread of smem-allpairs' tiled pair loop computes B bodies, every shared tile element read once
for all of them, the bodies' read-only `A[i]` in registers (issue 15: nbody_soa's best form was limited by shared loads,
4 a pair). The rewritten zoo kernels run threaded on the CPU (tests/emulate_cuda_block.py) against the originals at
sizes that are not a multiple of the tile or of B: bit for bit alone (each body adds in the same order), within a
relative 1e-5 after allpairs-lanes (partial sums); they build with nvcc -arch=sm_90."""
from __future__ import annotations

import shutil
from pathlib import Path

import emulate_cuda_block
import pytest
from conftest import ROOT, needs_nvcc
from emulate_cuda import Launch
from emulate_cuda_block import same_outputs
from session_builds import nvcc_checks
from test_smem_allpairs_unroll import FLOAT4

from s2s.lang.edits import Refused
from s2s.optimize.registry import Applied, build_pipeline, run_pass

ZOO = ROOT / "bench" / "zoo"


def _apply(pipeline: str, source: bytes, kernel: str, n: int) -> tuple[bytes, tuple[Launch, Launch]]:
    """The pipeline's text and (original, rewritten) launches for n bodies, each pass's launch rule applied in turn."""
    grid, block = ((n + 127) // 128, 1, 1), (128, 1, 1)
    first = Launch(grid, block)
    for p in build_pipeline(pipeline):
        out = run_pass(p, source, "cuda", kernel)
        assert isinstance(out, Applied), (pipeline, out)
        source = out.text
        if out.launch is not None:
            grid, block = out.launch.resolve(grid, block)
    return source, (first, Launch(grid, block))


def test_pack_refuses_the_float4_tile_of_nbody_aos() -> None:
    src = (ZOO / "nbody_aos" / "nbody_aos.cu").read_bytes()
    text, _ = _apply("smem-allpairs{tile=256}", src, "nbody_aos", 32768)
    out = run_pass(build_pipeline("allpairs-pack")[0], text, "cuda", "nbody_aos")
    assert isinstance(out, Refused) and "two float tiles" in out.reason, out


def test_zoo_launches_have_one_thread_per_body_group_and_lane() -> None:
    src = (ZOO / "nbody_soa" / "nbody_soa.cu").read_bytes()
    for b, k in ((2, 8), (4, 16), (4, 8)):
        text, (_, after) = _apply(f"fast-math,smem-allpairs{{tile=256}},allpairs-bodies{{bodies={b}}},allpairs-lanes{{lanes={k}}}",
                                  src, "nbody_soa", 32768)
        assert after == Launch((32768 * k // b // 256, 1, 1), (256, 1, 1))
        body = text.decode().split("int main")[0]
        assert body.count("do {") == b and body.count("p_0 -= m_s[j - t] * rsqrtf(") == 1
        assert f"const float z_i_{b - 1} = z[i_{b - 1}];" in body and "x[i]" not in body and f"if (live_{b - 1}) {{" in body


@pytest.mark.slow
@pytest.mark.parametrize(("n", "pipeline"), [
    (301, "smem-allpairs{tile=128},allpairs-bodies{bodies=2}"),  # two full tiles and 45 bodies; 151 threads
    (301, "smem-allpairs{tile=128},allpairs-bodies{bodies=4}"),  # the last thread has one live body of four
    (77, "smem-allpairs{tile=64},allpairs-bodies{bodies=3},loop-unroll{factor=4}"),
    (77, "smem-allpairs{tile=64},allpairs-bodies{bodies=2},allpairs-pack"),  # the packed tile reads the same values
])
def test_nbody_soa_same_bits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, n: int, pipeline: str) -> None:
    monkeypatch.setattr(emulate_cuda_block, "SHIM", emulate_cuda_block.SHIM.replace("struct float4 { float x, y, z, w; };", FLOAT4))
    src = (ZOO / "nbody_soa" / "nbody_soa.cu").read_bytes().replace(b"#define NB 32768", f"#define NB {n}".encode())
    text, launches = _apply(pipeline, src, "nbody_soa", n)
    counts = dict.fromkeys(("x", "y", "z", "m", "phi"), n)
    assert same_outputs(tmp_path, "nbody_soa", src, text, launches, counts, {}) == "SAME"
    broken = text.replace(b"if (j == i_1)", b"if (j == i_0)")  # body 1 would add its own (finite) self term
    assert broken != text
    assert same_outputs(tmp_path, "nbody_soa", src, broken, launches, counts, {}).startswith("DIFF phi")


@pytest.mark.slow
@pytest.mark.parametrize(("n", "pipeline"), [
    (301, "smem-allpairs{tile=128},allpairs-bodies{bodies=2},allpairs-lanes{lanes=8}"),
    (77, "smem-allpairs{tile=64},allpairs-bodies{bodies=4},allpairs-lanes{lanes=16},loop-unroll{factor=4}"),
])
def test_nbody_soa_with_lanes(tmp_path: Path, n: int, pipeline: str) -> None:
    src = (ZOO / "nbody_soa" / "nbody_soa.cu").read_bytes().replace(b"#define NB 32768", f"#define NB {n}".encode())
    text, launches = _apply(pipeline, src, "nbody_soa", n)
    counts = dict.fromkeys(("x", "y", "z", "m", "phi"), n)
    assert same_outputs(tmp_path, "nbody_soa", src, text, launches, counts, {}, rtol=1e-5) == "SAME"


@pytest.mark.slow
@pytest.mark.parametrize(("n", "pipeline"), [
    (301, "smem-allpairs{tile=128},allpairs-bodies{bodies=4}"),
    (77, "smem-allpairs{tile=64},allpairs-bodies{bodies=2},loop-unroll{factor=4}"),
])
def test_nbody_aos_same_bits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, n: int, pipeline: str) -> None:
    monkeypatch.setattr(emulate_cuda_block, "SHIM", emulate_cuda_block.SHIM.replace("struct float4 { float x, y, z, w; };", FLOAT4))
    src = (ZOO / "nbody_aos" / "nbody_aos.cu").read_bytes()
    text, launches = _apply(pipeline, src, "nbody_aos", n)
    counts, scalars = {"pos": n, "acc": n}, {"n": str(n)}
    assert same_outputs(tmp_path, "nbody_aos", src, text, launches, counts, scalars) == "SAME"
    broken = text.replace(b"i * 2 + 1", b"i * 2 + 0").replace(b"i * 4 + 3", b"i * 4 + 2")
    assert broken != text
    assert same_outputs(tmp_path, "nbody_aos", src, broken, launches, counts, scalars).startswith("DIFF acc")


@pytest.mark.slow
def test_nbody_aos_lanes_add_as_lanes_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With allpairs-lanes after it, each body's lanes add their partial sums as allpairs-lanes alone does: same bits
    as smem-allpairs,allpairs-lanes (float4 results are compared bit for bit)."""
    monkeypatch.setattr(emulate_cuda_block, "SHIM", emulate_cuda_block.SHIM.replace("struct float4 { float x, y, z, w; };", FLOAT4))
    src, n = (ZOO / "nbody_aos" / "nbody_aos.cu").read_bytes(), 77
    lanes, (_, one) = _apply("smem-allpairs{tile=64},allpairs-lanes{lanes=8}", src, "nbody_aos", n)
    text, (_, both) = _apply("smem-allpairs{tile=64},allpairs-bodies{bodies=4},allpairs-lanes{lanes=8},loop-unroll{factor=4}",
                             src, "nbody_aos", n)
    counts, scalars = {"pos": n, "acc": n}, {"n": str(n)}
    assert same_outputs(tmp_path, "nbody_aos", lanes, text, (one, both), counts, scalars) == "SAME"


@pytest.mark.slow
@pytest.mark.parametrize(("n", "pipeline", "rtol"), [
    (301, "smem-allpairs{tile=128},allpairs-bodies{bodies=2 skip=select},allpairs-pack", 0.0),  # the same sums
    (77, "smem-allpairs{tile=64},allpairs-bodies{bodies=1 skip=select},allpairs-pack,allpairs-lanes{lanes=4}", 1e-5),
    (301, "smem-allpairs{tile=128},allpairs-bodies{bodies=4 skip=subtract},allpairs-pack", 1e-5),  # +/- the self term
    (77, "fast-math,smem-allpairs{tile=64},allpairs-bodies{bodies=4 skip=subtract},allpairs-pack,allpairs-lanes{lanes=8},"
         "loop-unroll{factor=4}", 1e-5),
])
def test_nbody_soa_skip_forms_and_packed_tile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, n: int, pipeline: str,
                                              rtol: float) -> None:
    """skip=select and skip=subtract with the float4 tile (allpairs-pack): nbody_soa's term at j == i is finite (its
    1e-4 softening), so subtracting it after the loop stays within a relative 1e-5."""
    monkeypatch.setattr(emulate_cuda_block, "SHIM", emulate_cuda_block.SHIM.replace("struct float4 { float x, y, z, w; };", FLOAT4))
    src = (ZOO / "nbody_soa" / "nbody_soa.cu").read_bytes().replace(b"#define NB 32768", f"#define NB {n}".encode())
    text, launches = _apply(pipeline, src, "nbody_soa", n)
    assert b"float4 xyzm_s[" in text and b"continue" not in text.split(b"int main")[0]
    counts = dict.fromkeys(("x", "y", "z", "m", "phi"), n)
    assert same_outputs(tmp_path, "nbody_soa", src, text, launches, counts, {}, rtol=rtol) == "SAME"
    broken = text.replace(b"make_float4(x[t + l], y[t + l], z[t + l], m[t + l])", b"make_float4(x[t + l], z[t + l], y[t + l], m[t + l])")
    assert broken != text
    assert same_outputs(tmp_path, "nbody_soa", src, broken, launches, counts, {}, rtol=rtol).startswith("DIFF phi")


@pytest.mark.slow
@needs_nvcc
def test_zoo_nbody_forms_compile_for_sm90(tmp_path: Path) -> None:
    from test_fast_math import _zoo_state

    from s2s.optimize.candidate import Candidate
    from s2s.optimize.proposers.builtin import apply_pipeline

    nvcc = shutil.which("nvcc")
    assert nvcc is not None
    files: dict[str, list[Path]] = {}
    pipelines: dict[str, str] = {}
    for k, (kernel, pipeline) in enumerate([
            ("nbody_soa", "fast-math,smem-allpairs{tile=256},allpairs-bodies{bodies=2},allpairs-lanes{lanes=8},loop-unroll{factor=4}"),
            ("nbody_soa", "fast-math,smem-allpairs{tile=256},allpairs-bodies{bodies=4},allpairs-lanes{lanes=16}"),
            ("nbody_soa", "fast-math,smem-allpairs{tile=256},allpairs-bodies{bodies=4 skip=subtract},allpairs-pack,allpairs-lanes{lanes=8},"
                          "loop-unroll{factor=4}"),
            ("nbody_soa", "fast-math,smem-allpairs{tile=256},allpairs-bodies{bodies=2 skip=select},allpairs-pack,allpairs-lanes{lanes=8}"),
            ("nbody_aos", "smem-allpairs{tile=256},allpairs-bodies{bodies=4},allpairs-lanes{lanes=8},loop-unroll{factor=4}")]):
        c = apply_pipeline(pipeline, _zoo_state(kernel, tmp_path / str(k)))
        assert isinstance(c, Candidate), c
        f = tmp_path / f"v{k}.cu"
        f.write_bytes(c.source)
        files.setdefault(kernel, []).append(f)
        pipelines[f.name] = pipeline
    for kernel, fs in files.items():  # one check per zoo kernel's include directory; a failure names the v{k}.cu
        r = nvcc_checks(nvcc, ["-arch=sm_90", "-c", "-I", str(ZOO / kernel)], fs, tmp_path, 900)
        assert r.returncode == 0, f"{pipelines}: {r.stderr[-2000:]}"
