"""normalize's valued declarations (s2s/lang/normal_form.py): C89's `int t, i, j; ... t = blockIdx.x * ...; i = t % n;`
is declared where first assigned, so a flat index split by `/` and `%` in that spelling reaches delinearize-2d (refused
as written: no declared thread index). The normalized and the split kernels compute the same bytes as the originals on
the CPU (tests/emulate_cuda.py, every thread in turn, 1-D launch against the pass's 2-D / 3-D one), compile with nvcc,
and the built-in proposer's round 1 holds `normalize,delinearize-2d` where it held no delinearize-2d step."""
from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest
from conftest import needs_nvcc
from emulate_cuda import Launch, same_outputs
from mep_util import ParamSpec, make_mep, manifest
from session_builds import nvcc_checks

from s2s.lang.kernel_facts import kernel_facts
from s2s.lang.normal_form import normalize
from s2s.optimize.registry import Applied, build_pipeline, run_pass

NX, NY, NZ = 7, 5, 3  # no block size divides them

# name -> (kernel, source, {pointer: element count})
FIXTURES: dict[str, tuple[str, str, dict[str, int]]] = {
    "volume_c89": ("scale_add", """\
        __global__ void scale_add(double* v, const double* w, const int nx, const int ny, const int nz)
        {
            int t, i, j, k, m;
            double f;

            t = blockIdx.x * blockDim.x + threadIdx.x;

            i = t % nx;
            j = (t / nx) % ny;
            k = t / (nx * ny);

            if (t >= nx * ny * nz) {
                return;
            }
            f = 0.5 * (double)(i + 2 * j) - (double)k;
            for (m = 0; m < 3; m++) {
                v[m + 3 * t] += f * w[i + nx * (j + ny * k)];
            }
        }
        """, {"v": 3 * NX * NY * NZ, "w": NX * NY * NZ}),
    "plane_c89": ("flip_rows", """\
        __global__ void flip_rows(const float* src, float* dst, int nx, int ny)
        {
            unsigned int p;
            int r, c;
            float s;
            p = threadIdx.x + blockIdx.x * blockDim.x;
            r = p / nx;
            c = p % nx;
            if (p < nx * ny) {
                s = src[p] * 2.0f + (float)c;
                dst[(ny - 1 - r) * nx + c] = s;
            }
        }
        """, {"src": NX * NY, "dst": NX * NY}),
}
THREADS = {"scale_add": NX * NY * NZ, "flip_rows": NX * NY}
SCALARS = {"nx": str(NX), "ny": str(NY), "nz": str(NZ)}


def _fixture(name: str) -> tuple[str, bytes, dict[str, int]]:
    kernel, text, counts = FIXTURES[name]
    return kernel, textwrap.dedent(text).encode(), counts


def _flat(kernel: str) -> Launch:
    return Launch((-(-THREADS[kernel] // 32), 1, 1), (32, 1, 1))


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_declared_where_first_assigned_and_bit_identical(tmp_path: Path, name: str) -> None:
    kernel, src, counts = _fixture(name)
    got = normalize(src, "cuda", kernel)
    assert not isinstance(got, str), got
    assert "valued_declarations" in got.rules, got.notes
    text = got.text.decode()
    assert "blockIdx.x * blockDim.x + threadIdx.x;" in text or "threadIdx.x + blockIdx.x * blockDim.x;" in text
    t = "t" if kernel == "scale_add" else "p"
    assert f"int {t} = " in text and "int r = " in text or "int i = " in text
    launch = _flat(kernel)
    assert same_outputs(tmp_path, kernel, src, got.text, (launch, launch), counts, SCALARS) == "SAME"


def _split(name: str) -> tuple[str, bytes, bytes, tuple[Launch, Launch], dict[str, int]]:
    kernel, src, counts = _fixture(name)
    before = _flat(kernel)
    text, g, b = src, before.grid, before.block
    for p in build_pipeline("normalize,delinearize-2d"):
        res = run_pass(p, text, "cuda", kernel)
        assert isinstance(res, Applied), (name, res)
        text = res.text
        if res.launch is not None:
            g, b = res.launch.resolve(g, b, values={"nx": NX, "ny": NY, "nz": NZ})
    return kernel, src, text, (before, Launch(g, b)), counts


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_delinearize_applies_behind_normalize_and_matches(tmp_path: Path, name: str) -> None:
    """As written delinearize-2d finds no declared thread index; behind normalize the split becomes the launch's
    axes (3 of them for the volume) and the outputs are the original's, byte for byte."""
    kernel, src, _ = _fixture(name)
    alone = run_pass(build_pipeline("delinearize-2d")[0], src, "cuda", kernel)
    assert not isinstance(alone, Applied)
    kernel, src, text, launches, counts = _split(name)
    assert b"threadIdx.y" in text and (b"threadIdx.z" in text) == (kernel == "scale_add")
    assert launches[1].block[1] > 1 and launches[1] != launches[0]
    assert same_outputs(tmp_path, kernel, src, text, launches, counts, SCALARS) == "SAME"
    broken = text.replace(b"blockIdx.y * blockDim.y + threadIdx.y", b"blockIdx.y * blockDim.y")  # not vacuous
    assert broken != text
    assert same_outputs(tmp_path, kernel, src, broken, launches, counts, SCALARS) != "SAME"


@pytest.mark.parametrize("body,why", [
    ("int i; y[0] = (float)i; i = threadIdx.x; y[i] = 1.0f;", "read before its assignment"),
    ("int i; if (n > 0) { i = threadIdx.x; y[i] = 1.0f; }", "first assigned in an inner block"),
    ("int i; i = threadIdx.x + i;", "its own value on the right"),
    ("int i; i += threadIdx.x; y[i] = 1.0f;", "a compound assignment reads it"),
    ("int i; goto done; i = threadIdx.x; y[i] = 1.0f; done: ;", "a jump could pass the declaration"),
    ("__shared__ float s; s = 1.0f; y[threadIdx.x] = s;", "shared memory is no scalar of the thread"),
])
def test_what_stays_declared_apart(body: str, why: str) -> None:
    src = f"__global__ void k(float* y, int n) {{ {body} }}".encode()
    got = normalize(src, "cuda", "k")
    assert isinstance(got, str) or "valued_declarations" not in got.rules, (why, got)


def test_the_rest_of_a_declaration_stays() -> None:
    src = b"__global__ void k(float* y) { int a, b, c; a = threadIdx.x; y[a] = (float)b; c = 2; y[c] = 0.0f; }"
    got = normalize(src, "cuda", "k")
    assert not isinstance(got, str)
    assert b"int b;" in got.text and b"int a = threadIdx.x;" in got.text and b"int c = 2;" in got.text


def test_round_one_proposes_delinearize_behind_normalize(tmp_path: Path) -> None:
    from s2s.mep.manifest import load
    from s2s.optimize.proposers.base import State
    from s2s.optimize.proposers.builtin import BuiltinProposer

    kernel, src, counts = _fixture("volume_c89")
    facts = kernel_facts(src, "cuda", kernel)
    assert facts is not None
    params = [ParamSpec(p.name, p.type, "inout" if p.name == "v" else "in", "double", count=counts[p.name], space="global")
              if p.pointer else ParamSpec(p.name, "int", "scalar", "int", value=int(SCALARS[p.name])) for p in facts.params]
    flat = _flat(kernel)
    mep = make_mep(tmp_path / "mep", src.decode(), manifest(kernel, "cuda", "kernel.cu", params, flat.grid, flat.block))
    state = State(manifest=load(mep), original=src, kernel=kernel, dialect="cuda", facts=facts, patterns=[])
    prop = BuiltinProposer()
    steps = [c.origin.removeprefix("pass:") for c in prop.propose(state)]
    assert not [s for s in steps if s.startswith("delinearize-2d")]
    assert "normalize,delinearize-2d" in steps, steps


@pytest.mark.slow
@needs_nvcc
def test_normalized_and_split_kernels_compile(tmp_path: Path) -> None:
    files = []
    for name in FIXTURES:
        kernel, src, _ = _fixture(name)
        got = normalize(src, "cuda", kernel)
        assert not isinstance(got, str)
        files.append(tmp_path / f"{name}_normal.cu")
        files[-1].write_bytes(got.text)
        files.append(tmp_path / f"{name}_split.cu")
        files[-1].write_bytes(_split(name)[2])
    nvcc = shutil.which("nvcc")
    assert nvcc is not None
    proc = nvcc_checks(nvcc, ["-c", "-arch=sm_90", "-Werror", "all-warnings"], files, tmp_path, 600)
    assert proc.returncode == 0, proc.stderr[-3000:]
