from __future__ import annotations

import dataclasses
import importlib
import re
import shutil
from pathlib import Path

import pytest
from conftest import ROOT, SAMPLES, needs_nvcc
from session_builds import nvcc_checks

from s2s.lang.edits import Refused
from s2s.lang.kernel_facts import kernel_facts
from s2s.optimize.registry import (
    BUILTIN,
    Applied,
    all_passes,
    build_pipeline,
    example,
    get_pass,
    make_pass,
    module_name,
    parse_pipeline,
    run_pass,
)

GOLDEN = ROOT / "tests" / "golden" / "passes"
PASS_DIR = ROOT / "s2s" / "passes"


# -- registry --------------------------------------------------------------------------------------
def test_registry_is_sorted_and_complete() -> None:
    assert list(BUILTIN) == sorted(BUILTIN)
    modules = {p.relative_to(PASS_DIR).with_suffix("").as_posix() for p in PASS_DIR.rglob("*.py")
               if not p.stem.startswith("_") and p.parent.name != "common"}
    assert modules == {"/".join(filter(None, (family, name.replace("-", "_")))) for name, (family, _) in BUILTIN.items()}
    assert set(BUILTIN) <= set(all_passes())


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_every_entry_is_named_right(name: str) -> None:
    cls = get_pass(name)
    assert cls.name == name
    assert cls.__module__ == module_name(name) and cls.__module__.endswith("." + name.replace("-", "_"))
    assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
    cls()  # every option has a default


def test_pipeline_parsing() -> None:
    assert parse_pipeline("register-accumulation, loop-unroll{factor=4},launch-config{block=16x16}") == [
        ("register-accumulation", {}), ("loop-unroll", {"factor": "4"}), ("launch-config", {"block": "16x16"})]
    p = build_pipeline("warp-rows{lanes=16 block=128},restrict-const{ldg=true}")
    assert p[0] == make_pass("warp-rows", {"lanes": "16", "block": "128"}) and p[0].lanes == 16  # type: ignore[attr-defined]
    assert p[1].ldg is True  # type: ignore[attr-defined]
    assert make_pass("launch-config", {"block": "32x8"}).block == (32, 8)  # type: ignore[attr-defined]
    with pytest.raises(ValueError):
        make_pass("loop-unroll", {"nope": "1"})
    with pytest.raises(KeyError):
        get_pass("no-such-pass")


# -- facts -----------------------------------------------------------------------------------------
def test_facts_of_matmul() -> None:
    data = (SAMPLES / "heat3d_cuda/src/kernels_linalg.cu").read_bytes()
    f = kernel_facts(data, "cuda", "matmul_naive")
    assert f is not None and f.name == "matmul_naive"
    assert f.mapping == (("j", "x"), ("i", "y")) and f.dims == 2
    assert [(p.name, p.const, p.read, p.written) for p in f.params if p.pointer] == [
        ("A", True, True, False), ("B", True, True, False), ("C", False, True, True)]
    assert f.loops[0].var == "k" and f.loops[0].bound == "n" and f.loops[0].innermost
    assert f.index_exprs()["B"] == ("k * n + j",)
    assert [(a.array, a.index) for a in f.accumulations] == [("C", "i * n + j")]
    assert data[f.start:f.end].startswith(b"__global__") and data[f.body_start:f.body_end].endswith(b"}")


def test_facts_of_atomics_and_opencl() -> None:
    f = kernel_facts((SAMPLES / "heat3d_cuda/src/kernels_stencil.cu").read_bytes(), "cuda", "reduce_energy")
    assert f is not None and f.atomics[0].target == "energy" and f.dims == 1
    g = kernel_facts((SAMPLES / "ocl_solver/kernels/linalg.cl").read_bytes(), "opencl", "matvec")
    assert g is not None and g.mapping == (("i", "x"),) and g.builtins == ("get_global_id(0)",)
    assert kernel_facts(b"void host() {}", "cuda") is None


# -- examples and golden files ---------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_example(name: str) -> None:
    before, after, dialect = example(name)
    out = run_pass(make_pass(name), before.encode(), dialect)
    assert isinstance(out, Applied), out
    assert out.text.decode() == after


def _golden(path: Path) -> tuple[str, str | None, str, str]:
    """(pipeline, kernel name, input, expected) of one golden file."""
    text = path.read_text()
    run = re.search(r"^// RUN: (.+)$", text, re.M)
    kernel = re.search(r"^// KERNEL: (\S+)$", text, re.M)
    _, rest = text.split("// ----- INPUT\n", 1)
    given, expected = rest.split("// ----- EXPECTED\n", 1)
    assert run is not None
    return run.group(1).strip(), kernel.group(1) if kernel else None, given, expected


@pytest.mark.parametrize("path", sorted(GOLDEN.glob("*.c*")), ids=lambda p: p.name)
def test_golden(path: Path) -> None:
    pipeline, kernel, given, expected = _golden(path)
    dialect = "opencl" if path.suffix == ".cl" else "cuda"
    text = given.encode()
    for p in build_pipeline(pipeline):
        out = run_pass(p, text, dialect, kernel)
        if isinstance(out, Refused):
            m = re.match(r"// REFUSED: (.+)", expected.strip())
            assert m is not None, f"refused unexpectedly: {out.reason}"
            assert m.group(1) in out.reason, out.reason
            return
        text = out.text
    assert not expected.startswith("// REFUSED"), f"expected a refusal, got:\n{text.decode()}"
    assert text.decode() == expected


# -- everything a pass produces compiles -----------------------------------------------------------
def _sample_rewrites() -> dict[str, bytes]:
    from s2s.scan.tree import scan_tree

    out: dict[str, bytes] = {}
    kernels = [(SAMPLES / s, k) for s in ("heat3d_cuda", "hip_particles") for k in scan_tree(SAMPLES / s).kernels]
    for root, k in kernels:
        data = (root / k.file).read_bytes()
        for name in BUILTIN:
            options = [{}] if name not in {"warp-rows", "smem-tiling"} else [{}, {"lanes": "16"} if name == "warp-rows" else {"tile": "32"}]
            for opt in options:
                res = run_pass(make_pass(name, opt), data, "cuda", k.name)
                if isinstance(res, Applied) and res.text != data:
                    out[f"{k.name}__{name}{'_'.join(opt.values())}".replace("-", "_")] = res.text
    return out


SHARDS = 4  # test_everything_compiles in four parts, so that the session's workers share its 3 CPU-minutes


@pytest.mark.slow
@needs_nvcc
@pytest.mark.parametrize("shard", range(SHARDS))
def test_everything_compiles(tmp_path: Path, shard: int) -> None:
    files = []
    for name in BUILTIN:
        _, after, dialect = example(name)
        if dialect != "opencl":
            files.append(tmp_path / f"example_{name.replace('-', '_')}.cu")
            files[-1].write_text(after)
    for path in GOLDEN.glob("*.cu"):
        _, _, _, expected = _golden(path)
        if not expected.startswith("// REFUSED"):
            files.append(tmp_path / f"golden_{path.name}")
            files[-1].write_text(expected)
    # the examples and goldens of contraction-tiling, inner-loop-threads and split-reduction among them (test_model_passes
    # compiled them again in a second nvcc of its own)
    model = ("contraction_tiling", "inner_loop_threads", "split_reduction")
    assert {f"example_{m}.cu" for m in model} <= {f.name for f in files}
    assert len([f for f in files if f.name.startswith(tuple(f"golden_{m}" for m in model))]) >= 5
    rewrites = _sample_rewrites()
    assert {"matmul_naive__smem_tiling", "matvec_rows__warp_rows", "reduce_energy__warp_reduce_atomics",
            "matmul_naive__register_accumulation", "colsum_strided__warp_rows16", "transpose_naive__smem_transpose",
            "compute_forces_naive__smem_allpairs", "speed_histogram__shared_histogram"} <= set(rewrites)
    assert "kinetic_energy__warp_reduce_atomics" not in rewrites  # already one atomic per block
    hip_dir = tmp_path / "hip"  # the HIP sample's headers beside its files: both samples have a config.h
    shutil.copytree(SAMPLES / "hip_particles/include", hip_dir)
    for stem, data in rewrites.items():
        files.append((hip_dir if b"hip_runtime.h" in data else tmp_path) / f"sample_{stem}.cu")
        files[-1].write_bytes(data)
    nvcc = shutil.which("nvcc")
    assert nvcc is not None
    includes = ["-I", str(SAMPLES / "heat3d_cuda/include"), "-I", str(ROOT / "templates/hip_shim")]
    # about 3 CPU-minutes in all, 8 files an nvcc; a file that another test of the session compiled with the same bytes,
    # headers and flags (test_stencil_passes writes the stencil examples and goldens too) is not compiled twice
    mine = sorted(files, key=lambda f: f.name)[shard::SHARDS]  # every file in exactly one part
    proc = nvcc_checks(nvcc, ["-c", "-arch=sm_90", *includes], mine, tmp_path, 900)
    assert proc.returncode == 0, proc.stderr[-4000:]


def test_pass_modules_are_small() -> None:
    for p in PASS_DIR.rglob("*.py"):
        assert len(p.read_text().splitlines()) < 220, p.name
    importlib.import_module("s2s.passes.common.tree")


def test_no_pass_raises_on_any_sample_kernel() -> None:
    from s2s.scan.tree import scan_tree

    for sample in ("heat3d_cuda", "hip_particles", "ocl_solver"):
        root = SAMPLES / sample
        for k in scan_tree(root).kernels:
            data = (root / k.file).read_bytes()
            dialect = "opencl" if k.language == "opencl" else "cuda"
            assert kernel_facts(data, dialect, k.name) is not None, k.name
            for name in BUILTIN:
                assert isinstance(run_pass(make_pass(name), data, dialect, k.name), (Applied, Refused))


def test_cli_lists_passes(cli) -> None:  # type: ignore[no-untyped-def]
    proc = cli("passes", "smem-tiling")
    assert proc.returncode == 0 and "__syncthreads" in proc.stdout and "tile: int = 16" in proc.stdout
    assert cli("passes", "no-such-pass").returncode == 2


def test_restrict_const_keeps_a_glued_name_apart() -> None:
    """`const float *A` (the star glued to the name, as Parboil writes it) became `const float * __restrict__A`: an
    undeclared identifier, so the variant did not compile."""
    src = b"__global__ void k(const float *A, float* C, float *B, int n) { int i = threadIdx.x; if (i < n) C[i] = A[i] + B[i]; }\n"
    out = run_pass(make_pass("restrict-const", {}), src, "cuda", "k")
    assert not isinstance(out, Refused)
    text = out.text.decode()  # type: ignore[union-attr]
    assert "const float * __restrict__ A" in text and "float* __restrict__ C" in text and "__restrict__A" not in text


def test_fast_math_takes_the_float_overloads_of_cos_and_sin() -> None:
    """`float expArg = ...; cos(expArg)` calls the float overload in C++ (Parboil's mri-q writes it so); a double stays."""
    src = (b"__global__ void q(const float* x, float* qr, int n) { int i = blockIdx.x*blockDim.x+threadIdx.x; if (i >= n) return;"
           b" float s = 0.0f; double d = 0.5; for (int k = 0; k < n; ++k) { float expArg = 6.28f*x[k]*i;"
           b" s += cos(expArg) + sin(expArg) + exp(2.0f) + (float)sin(d); } qr[i] = s; }")
    out = run_pass(make_pass("fast-math", {}), src, "cuda", "q")
    assert not isinstance(out, Refused)
    text = out.text.decode()  # type: ignore[union-attr]
    assert "__cosf(expArg) + __sinf(expArg) + __expf(2.0f)" in text and "(float)sin(d)" in text


def test_launch_config_refuses_a_kernel_whose_work_follows_the_block_shape() -> None:
    """Parboil's naive stencil: i = threadIdx.x, j = blockIdx.x + 1. A new block shape changes which points are computed;
    its candidates could only fail the check (evaluations spent on the H200 for nothing)."""
    naive = (b"__global__ void k(float* a, const float* b, int nx) { int i = threadIdx.x; int j = blockIdx.x + 1;"
             b" if (i > 0) a[j * nx + i] = b[j * nx + i - 1]; }")
    got = run_pass(make_pass("launch-config", {"block": "128"}), naive, "cuda", "k")
    assert isinstance(got, Refused) and "blockIdx.x is used on its own" in got.reason
    canonical = (b"__global__ void k(float* a, const float* b, int n) { unsigned i = __umul24(blockIdx.x, blockDim.x) + threadIdx.x;"
                 b" if (i < n) a[i] = 2.0f * b[i]; }")
    assert not isinstance(run_pass(make_pass("launch-config", {"block": "128"}), canonical, "cuda", "k"), Refused)


def test_a_round_makes_a_texts_facts_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every pass tried on one kernel text reads the same facts, made once (they are frozen); another text, or the
    same text with the device replaced for one pass, does not see another's."""
    from s2s.lang.target_device import H200
    from s2s.optimize import registry

    made: list[bytes] = []

    def counting(source: bytes, dialect: str, kernel: str | None = None) -> object:
        made.append(source)
        return kernel_facts(source, dialect, kernel)

    registry._facts.cache_clear()
    monkeypatch.setattr(registry, "kernel_facts", counting)
    text = b"__global__ void k(float* y, const float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x;\n" \
           b"  if (i < n) y[i] = 2.0f * x[i]; }\n"
    for name in BUILTIN:
        run_pass(make_pass(name), text, "cuda", "k")
    small = dataclasses.replace(H200, sms=4)
    run_pass(make_pass("launch-config"), text, "cuda", "k", device=small)
    assert made == [text]
    assert registry._facts(text, "cuda", "k").device == H200  # the one-pass device did not stick
    run_pass(make_pass("restrict-const"), text.replace(b"2.0f", b"3.0f"), "cuda", "k")
    assert len(made) == 2
    registry._facts.cache_clear()
