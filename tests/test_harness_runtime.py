"""The CUDA/HIP harness's run compiled once into a library that every variant's build links
(s2s/mep/backends/harness_runtime.py): which flags reach it, one compile shared by MEPs and by builds running side by
side, whole builds where it does not compile or is switched off, and the layout check between the two sides."""
from __future__ import annotations

import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import needs_nvcc
from mep_util import ParamSpec, add_variant, make_mep, manifest

from s2s.base.resources import templates_dir
from s2s.mep.backends import harness_runtime as hr
from s2s.mep.evaluate import build
from s2s.mep.manifest import load

AXPY = r'''
__global__ void axpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
'''


def _axpy(root: Path, n: int) -> Path:
    m = manifest("axpy", "cuda", "kernel.cu", [
        ParamSpec("a", "float", "scalar", "float", value=2.0),
        ParamSpec("x", "const float *", "in", "float", count=n),
        ParamSpec("y", "float *", "inout", "float", count=n),
        ParamSpec("n", "int", "scalar", "int", value=n),
    ], ((n + 255) // 256, 1, 1), (256, 1, 1), timeout_s=60.0)
    return make_mep(root, AXPY, replace(m, flags=[f"-DAXPY_N={n}", "-DNDEBUG"]))  # type: ignore[arg-type]


def _counting_nvcc(tmp_path: Path, fail_runtime: bool = False) -> tuple[Path, Path]:
    """An nvcc that logs each command line (and fails the run's compile when asked), then runs the real one."""
    log, tool = tmp_path / "nvcc.log", tmp_path / "nvcc-counting"
    real = shutil.which("nvcc")
    assert real is not None
    fail = 'case "$*" in *S2S_RUNTIME_OBJECT*) echo "error: refused" >&2; exit 1;; esac\n' if fail_runtime else ""
    tool.write_text(f'#!/bin/sh\necho "$*" >> {log}\n{fail}exec {real} "$@"\n')
    tool.chmod(0o755)
    return tool, log


def _runtime_compiles(log: Path) -> int:
    return sum("-DS2S_RUNTIME_OBJECT" in line for line in log.read_text().splitlines()) if log.is_file() else 0


def test_the_flags_that_reach_the_run_are_those_that_can_change_it(tmp_path: Path) -> None:
    shadow, plain = tmp_path / "shadow", tmp_path / "plain"
    shadow.mkdir()
    plain.mkdir()
    (shadow / "vector").write_text("#error not the standard vector\n")  # would be found for #include <vector>
    (plain / "app.h").write_text("")
    flags = ["-DGRID_N=4096", "-DAXPY_N=7", "-D", "BLOCK=256", "-DNDEBUG", "-D_GLIBCXX_ASSERTIONS", "-Dfloat=double",
             "-Ufloat", f"-I{plain}", "-I", str(shadow), "-Iplain", "-include", "app.h", "-Xcompiler", "-fopenmp",
             "--use_fast_math", "-Xcompiler", "-DHOST_ONLY"]
    got = hr.relevant_flags(flags, tmp_path)
    # sizes and names the harness's text never mentions do not reach it; what system headers read, a macro that
    # renames a word of the text, a shadowing directory (absolute), a forced include and any other option do
    assert got == ["-DNDEBUG", "-D_GLIBCXX_ASSERTIONS", "-Dfloat=double", "-Ufloat", "-I", str(shadow.resolve()),
                   "-include", str((tmp_path / "app.h").resolve()), "-Xcompiler", "-fopenmp", "--use_fast_math",
                   "-Xcompiler", "-DHOST_ONLY"]  # an option's argument stays with it
    assert not {"GRID_N", "AXPY_N", "BLOCK"} & hr._common()[2]


@pytest.mark.slow
@needs_nvcc
def test_meps_and_builds_side_by_side_share_one_compiled_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tool, log = _counting_nvcc(tmp_path)
    monkeypatch.setenv("S2S_NVCC", str(tool))
    monkeypatch.setenv(hr.CACHE_ENV, str(tmp_path / "cache"))
    small, large = _axpy(tmp_path / "small", 1000), _axpy(tmp_path / "large", 5000)
    m = _axpy(tmp_path / "variant", 1000)
    add_variant(m, load(m), "v1", AXPY.replace("a * x[i] + y[i]", "y[i] + a * x[i]"))
    with ThreadPoolExecutor(3) as pool:  # three builds wait on one compile of the run
        results = list(pool.map(lambda args: build(*args), [(small, None), (large, None), (m, "v1")]))
    assert all(r.ok for r in results), [r.messages for r in results]
    assert _runtime_compiles(log) == 1, log.read_text()
    (lib,) = (tmp_path / "cache").glob("lib*.a")
    for r in results:
        assert hr.PREBUILT_DEFINE in r.command and f"-L{lib.parent}" in r.command, r.command
        usage = subprocess.run([*r.run_argv, "--help"], capture_output=True, text=True, timeout=60)
        assert "--var-grid" in usage.stderr and "S2S_RESULT" in usage.stderr  # linked whole, the run's options
    assert sum(r.seconds for r in results) > 0
    # switched off: the harness built whole, as `make` in the MEP builds it
    monkeypatch.setenv(hr.SWITCH_ENV, "0")
    (large / "kernel.cu").write_text(AXPY + "\n// changed\n")
    again = build(large, None)
    assert again.ok and hr.PREBUILT_DEFINE not in again.command and not any(a.startswith("-l" + hr.LIB_PREFIX) for a in again.command)
    assert _runtime_compiles(log) == 1


@pytest.mark.slow
@needs_nvcc
def test_a_run_that_does_not_compile_leaves_the_harness_built_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tool, log = _counting_nvcc(tmp_path, fail_runtime=True)
    monkeypatch.setenv("S2S_NVCC", str(tool))
    monkeypatch.delenv(hr.CACHE_ENV, raising=False)  # the MEP's own build/runtime
    mep = _axpy(tmp_path / "mep", 1000)
    first = build(mep, None)
    assert first.ok and hr.PREBUILT_DEFINE not in first.command, first.messages
    failed = list((mep / "build" / "runtime").glob("*.failed"))
    assert len(failed) == 1 and "refused" in failed[0].read_text()
    from s2s.mep.backends import get_backend

    cuda = get_backend("cuda")
    again = hr.prebuilt(cuda.compiler(), cuda.extra_flags(mep), list(load(mep).flags), mep)  # type: ignore[attr-defined]
    assert again == (None, 0.0) and _runtime_compiles(log) == 1  # not tried again for every build


@pytest.mark.slow
@needs_nvcc
def test_a_run_built_for_another_layout_refuses_to_run(tmp_path: Path) -> None:
    """run_harness compares the layout of the shared structs the caller was compiled with against its own."""
    from s2s.mep.backends import get_backend

    nvcc = get_backend("cuda").compiler()  # type: ignore[attr-defined]
    lib, _seconds = hr.prebuilt(nvcc, [], [], tmp_path)  # the session's, where another test compiled it already
    assert lib is not None
    main = tmp_path / "main.cu"
    main.write_text((templates_dir() / hr.COMMON).read_text() + "\nint main(int argc, char** argv) {\n"
                    "    s2s::Spec spec; spec.backend = \"cuda\"; spec.kernel = \"k\";\n"
                    "    return s2s::run_harness(spec, argc, argv, s2s::LAYOUT + 1);\n}\n")
    subprocess.run([*nvcc, hr.PREBUILT_DEFINE, str(main), "-o", str(tmp_path / "main"), *hr.link_flags(lib)], check=True,
                   capture_output=True, timeout=600)
    out = subprocess.run([str(tmp_path / "main"), "--no-time"], capture_output=True, text=True, timeout=60).stdout
    assert '"verdict":"runtime-failed"' in out and "disagree on the layout" in out, out


def test_auto_keeps_the_run_in_its_work_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(hr.CACHE_ENV, raising=False)
    with hr.shared_in(tmp_path / "build-cache"):
        assert hr.cache_dir(tmp_path / "mep") == tmp_path / "build-cache"
        with hr.shared_in(tmp_path / "other"):  # a place already named is kept
            assert hr.cache_dir(tmp_path / "mep") == tmp_path / "build-cache"
    assert hr.cache_dir(tmp_path / "mep") == tmp_path / "mep" / "build" / "runtime" and hr.CACHE_ENV not in os.environ
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(hr.CACHE_ENV, "cache")  # relative to where s2s runs, not to the MEP its builds run in
    assert hr.cache_dir(Path("mep")) == tmp_path / "cache"


def test_a_run_killed_on_its_timeout_is_tried_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A compile of the run killed on its timeout (a loaded machine) leaves no mark: the next build tries again,
    where one that failed is not tried again."""
    monkeypatch.setenv(hr.CACHE_ENV, str(tmp_path / "cache"))
    slow, tries = tmp_path / "slow-nvcc", tmp_path / "tries"
    slow.write_text(f"#!/bin/sh\necho x >> {tries}\nexec sleep 30\n")
    slow.chmod(0o755)
    for n in (1, 2):
        assert hr.prebuilt([str(slow)], [], [], tmp_path, timeout_s=1) == (None, pytest.approx(1, abs=5))
        assert len(tries.read_text().split()) == n and not list((tmp_path / "cache").glob("*.failed"))
