from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from session_builds import ENV as SHARED_ENV

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The installed CLI in a child process, as a user would run it."""
    return subprocess.run([sys.executable, "-m", "s2s", *args], capture_output=True, text=True, cwd=cwd, timeout=600)


@pytest.fixture
def cli():  # type: ignore[no-untyped-def]
    return run_cli


needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
needs_gpu = pytest.mark.skipif(shutil.which("nvidia-smi") is None, reason="needs an NVIDIA GPU")


@pytest.fixture(autouse=True)
def _private_pattern_library(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never write the user's pattern library."""
    monkeypatch.setenv("S2S_PATTERNS", str(tmp_path_factory.getbasetemp() / "patterns.json"))
    monkeypatch.setenv("S2S_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "s2s-cache"))  # nor the scan cache


POCL_FLAGS = "POCL_EXTRA_BUILD_FLAGS"  # appended by PoCL to every program's build options (part of its cache key)
POCL_OPTIMIZED = "S2S_TEST_POCL_OPTIMIZED"  # set: the modules below compile their kernels as users' runs do


@pytest.fixture
def pocl_unoptimized(monkeypatch: pytest.MonkeyPatch) -> None:
    """PoCL compiles the kernels at -cl-opt-disable: for the modules that check a rewrite's outputs against the
    original's on small sizes, neither timed (`pytestmark = pytest.mark.usefixtures("pocl_unoptimized")`). On a fresh
    machine (an empty PoCL kernel cache) LLVM's optimization of each new variant's work-group function was most of an
    evaluation's CPU time (about 1.7 of the 2.2 CPU-seconds a contraction-triangle variant took); both programs, the
    reference and the variant, are compiled alike, so the comparison is the same one. A user's own
    POCL_EXTRA_BUILD_FLAGS, or S2S_TEST_POCL_OPTIMIZED=1, keeps PoCL's defaults."""
    if POCL_FLAGS not in os.environ and not os.environ.get(POCL_OPTIMIZED):
        monkeypatch.setenv(POCL_FLAGS, "-cl-opt-disable")


@pytest.fixture(scope="module")
def solver(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private copy of the OpenCL sample without build outputs, one per test module."""
    dest = tmp_path_factory.mktemp("app") / "ocl_solver"
    shutil.copytree(SAMPLES / "ocl_solver", dest, ignore=shutil.ignore_patterns("build", "ocl_solver"))
    return dest


# -- how the suite is run: bytecode, the order of the tests, the groups that share a build -------------------------
_SHARED = pytest.StashKey[str]()  # the session's directory of shared build products, where this process made it
HOST_O0_NVCC = ROOT / "tests" / "nvcc_host_o0" / "nvcc"  # the suite's nvcc: host code at -O0, device code as built
REAL_NVCC = "S2S_TEST_REAL_NVCC"  # the nvcc it runs
BUILD_CACHE_ENV = "S2S_BUILD_CACHE"  # s2s.mep.backends.harness_runtime.CACHE_ENV (not imported before the pycache is set)


@pytest.fixture(autouse=True)
def _gpu_tests_build_as_users_do(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test marked gpu (run on a GPU machine, where the host code fills, compares and times real sizes) builds with
    the user's nvcc, host code at -O3."""
    if request.node.get_closest_marker("gpu") is not None and os.environ.get(REAL_NVCC):
        path = os.environ.get("PATH", "").split(os.pathsep)
        monkeypatch.setenv("PATH", os.pathsep.join(d for d in path if d != str(HOST_O0_NVCC.parent)))


def pytest_configure(config: pytest.Config) -> None:
    """With bytecode writing off (PYTHONDONTWRITEBYTECODE), every child Python (the CLI, the OpenCL harness) compiled
    s2s again and every xdist worker re-rewrote every test module: compile once, into a cache outside the tree. The
    nvcc found on PATH is HOST_O0_NVCC, the host code at -O0 (the harness builds, the applications' builds, the
    compile checks; the tests marked gpu excepted: _gpu_tests_build_as_users_do). The controller makes the session's
    directory of build products the tests share (tests/session_builds.py)."""
    if sys.dont_write_bytecode and not os.environ.get("PYTHONPYCACHEPREFIX"):
        prefix = str(Path(tempfile.gettempdir()) / f"s2s-test-pycache-{os.getuid()}")
        os.environ["PYTHONPYCACHEPREFIX"] = prefix
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        sys.pycache_prefix = prefix
        sys.dont_write_bytecode = False
    nvcc = shutil.which("nvcc")
    if nvcc and not os.environ.get(REAL_NVCC):  # nvcc's host code at -O0 (tests/nvcc_host_o0/nvcc), first on PATH
        os.environ[REAL_NVCC] = nvcc
        os.environ["PATH"] = f"{HOST_O0_NVCC.parent}{os.pathsep}{os.environ.get('PATH', '')}"
    if not hasattr(config, "workerinput") and not os.environ.get(SHARED_ENV):  # the controller (or the one process)
        shared = tempfile.mkdtemp(prefix="s2s-test-shared-")
        os.environ[SHARED_ENV] = shared  # the xdist workers it starts inherit it (tests/session_builds.py)
        config.stash[_SHARED] = shared
        # the CUDA/HIP harness's run compiled once for the session (s2s/mep/backends/harness_runtime.py), not per MEP
        os.environ.setdefault(BUILD_CACHE_ENV, str(Path(shared) / "harness-runtime"))


def pytest_unconfigure(config: pytest.Config) -> None:
    shared = config.stash.get(_SHARED, None)
    if shared is not None:
        shutil.rmtree(shared, ignore_errors=True)
        os.environ.pop(SHARED_ENV, None)
        if os.environ.get(BUILD_CACHE_ENV, "").startswith(shared):
            os.environ.pop(BUILD_CACHE_ENV, None)


# the longest tests (seconds on the 2-core CI machine, `--durations`), started first so that neither xdist worker is
# left with a long one at the end; then the others marked slow, then the rest, each in collection order
LONGEST = (
    "test_auto_capture.py::test_auto_capture_first_end_to_end_on_pocl",
    "test_auto_latin1_opencl.py::test_auto_on_a_latin1_opencl_application_on_pocl",
    "test_optimize_opencl.py::test_builtin_loop_finds_verified_speedup",
    "test_harness_runtime.py::test_meps_and_builds_side_by_side_share_one_compiled_run",
    "test_adaptive_timing.py::test_long_kernel_gets_fewer_pairs_short_one_the_full_count",
    "test_auto.py::test_auto_on_opencl_sample_gives_an_applicable_diff",
    "test_auto.py::test_auto_holds_winners_to_the_applications_data",
    "test_reliability_auto_check.py::test_a_failing_check_keeps_no_diff_and_says_why",
    "test_probe_record.py::test_cuda_probe_key_is_the_references_and_the_harness_takes_no_probe",
    "test_capture_hip.py::test_a_captured_hip_mep_harness_builds_and_reads_its_data",
    "test_reintegrate.py::",
    "test_contraction_blocking.py::test_zoo_rewrites_compile_without_spills",
    "test_harness_cuda.py::test_hip_kernel_builds_through_the_shim",
    "test_auto_capture.py::test_auto_recaptures_the_first_launch_when_the_steady_one_writes_nothing_new",
    "test_zoo_plans.py::test_a_dry_run_builds_each_report",
    "test_capture_many.py::test_auto_captures_all_top_kernels_in_one_instrumented_run",
    "test_contraction_triangle.py::test_zoo_rewrites_compile_without_spills",
    "test_sequence_persistent.py::test_the_persistent_heat_app_runs_right_on_the_fake_runtime",
    "test_cluster.py::test_dask_two_workers_same_verdicts_and_winner_candidates_as_local",
    "test_slurm.py::",
    "test_passes.py::test_everything_compiles",
)


def _rank(item: pytest.Item) -> tuple[int, int]:
    for i, prefix in enumerate(LONGEST):
        if item.nodeid.startswith("tests/" + prefix):
            return 0, i
    return (1 if item.get_closest_marker("slow") else 2), 0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under xdist, the longest first: LONGEST, then the others marked slow, then the rest. In one process (-n 0, or
    without xdist) collection order: reordered, the tests of a module were interleaved with others', its module-scoped
    fixtures torn down and built again between them (and a test reading what an earlier one of its module left in
    such a fixture failed)."""
    if config.getoption("dist", "no") == "no":
        return
    items.sort(key=_rank)  # stable: collection order within a rank


def _shares_a_module_fixture(path: str) -> bool:
    """Whether a test module defines a module- or session-scoped fixture (an optimize run, built MEPs, a Slurm node)."""
    try:
        text = (ROOT / path).read_text(encoding="utf-8")
    except OSError:
        return False
    return re.search(r"@pytest\.fixture\(scope=\"(module|session)\"", text) is not None


@pytest.hookimpl(optionalhook=True)  # an xdist hook: without xdist (-p no:xdist) never called
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """Under `-n` (xdist's default `--dist load`): the tests of a module that defines a module-scoped fixture go to one
    worker together, so that the fixture is built once rather than on each worker; every other test is a unit of its
    own; the units are handed out in the order pytest_collection_modifyitems gave (the longest first)."""
    if config.getoption("dist", "no") != "load":
        return None  # another --dist given by hand
    from xdist.scheduler import LoadScopeScheduling

    shared: dict[str, bool] = {}

    class ModuleGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            if path not in shared:
                shared[path] = _shares_a_module_fixture(path)
            return path if shared[path] else nodeid

    config.option.loadscopereorder = False  # keep the order given, not the largest group first
    return ModuleGroups(config, log)
