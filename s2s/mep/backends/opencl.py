"""OpenCL: the harness is a Python script (opencl_runner.py) run as a child process with pyopencl, so
that a hanging kernel can be killed. `build` compiles both programs in that child (`--build-only`) so
that compile errors are known before the GPU, or the CPU, is asked to run anything. The child is forked from a
pre-imported runner (opencl_zygote.py) where one can start, as that same subprocess otherwise."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import ClassVar

from s2s.base.resources import render
from s2s.mep.fill_in import awaits_fill_in
from s2s.mep.manifest import Manifest
from s2s.mep.measure import COMPILE_FAILED, OK, RUNTIME_FAILED, TIMED_OUT
from s2s.mep.probe_record import key_of

from . import opencl_zygote
from .base import (
    Backend,
    BuildResult,
    Starter,
    Target,
    include_dirs_of,
    run_harness_process,
    scan_source,
    write_if_changed,
)

RUNNER_COPY = "harness_opencl.py"
TYPES_COPY = "opencl_types.py"  # the runner's type table, copied beside it under its own name
ICD_DIR = "/etc/OpenCL/vendors"
# the build (the runner's --build-only: Python, pyopencl and the driver's compiler) is not held to the timed run's limit,
# as nvcc is not: a 3 s timing.timeout_s killed PoCL builds on a loaded 2-core machine
BUILD_TIMEOUT_S = 300.0


def opencl_env() -> dict[str, str]:
    """The environment for pyopencl: the system's ICDs (the wheel's bundled PoCL may not run on this CPU)."""
    env = dict(os.environ)
    if "OCL_ICD_VENDORS" not in env and os.path.isdir(ICD_DIR):
        env["OCL_ICD_VENDORS"] = ICD_DIR
    return env


class OpenCLBackend(Backend):
    name: ClassVar[str] = "opencl"
    kernel_suffixes: ClassVar[tuple[str, ...]] = (".cl", ".ocl", ".clc")
    keeps_reference_outputs: ClassVar[bool] = True  # the runner's --ref-cache

    def write_files(self, mep_dir: Path, manifest: Manifest, *, readme: bool = False) -> list[Path]:
        mep_dir = Path(mep_dir)
        here = Path(__file__).parent
        out = [mep_dir / RUNNER_COPY, mep_dir / TYPES_COPY, mep_dir / "Makefile"]
        write_if_changed(out[0], (here / "opencl_runner.py").read_text(encoding="utf-8"))
        write_if_changed(out[1], (here / TYPES_COPY).read_text(encoding="utf-8"))
        write_if_changed(out[2], render("mep_Makefile.j2", backend=self.name, kernel_file=manifest.kernel_file,
                                        flags=" ".join(manifest.flags), arch="", harness=RUNNER_COPY))
        rd = mep_dir / "README.md"
        if readme or not rd.exists() or awaits_fill_in(rd):  # the values are filled now: the usual README
            write_if_changed(rd, render("mep_README.md.j2", backend=self.name, kernel=manifest.kernel,
                                        kernel_file=manifest.kernel_file, tool="Python 3, numpy and pyopencl"))
            out.append(rd)
        return out

    def _base_argv(self, mep_dir: Path, variant: str | None) -> list[str]:
        return [sys.executable, "-m", "s2s.mep.backends.opencl_runner", str(mep_dir), *(["--variant", variant] if variant else [])]

    def build(self, target: Target) -> BuildResult:
        m = target.manifest
        self.write_files(target.mep_dir, m)
        target.build_dir.mkdir(parents=True, exist_ok=True)
        argv = self._base_argv(target.mep_dir, target.variant)
        res = run_harness_process([*argv, "--build-only"], env=self._env(), cwd=target.mep_dir,
                                  timeout_s=max(float(m.timeout_s), BUILD_TIMEOUT_S),
                                  backend=self.name, kernel=m.kernel, variant=target.variant, build_seconds=0.0,
                                  start=self.harness_starter())
        # what the bounds probe's outcome depends on: the reference and its headers, mep.toml, the runner, the device
        here = Path(__file__).parent
        headers = scan_source(target.ref_file, include_dirs_of(m.flags, target.mep_dir) + [target.mep_dir]).local_files
        probe_key = key_of([self.name, res.device, target.mep_dir / "mep.toml", target.ref_file, *headers,
                            here / "opencl_runner.py", here / TYPES_COPY])
        common = dict(mep_dir=target.mep_dir, variant=target.variant, backend=self.name, kernel=m.kernel,
                      build_dir=target.build_dir, run_argv=tuple(argv), command=tuple([*argv, "--build-only"]),
                      timeout_s=float(m.timeout_s),
                      extra={"launch": target.launch, "note": target.note, "device": res.device, "probe_key": probe_key})
        seconds = res.run_seconds
        if res.verdict == OK:
            return BuildResult(ok=True, seconds=seconds, **common)  # type: ignore[arg-type]
        msgs = res.messages
        failure = COMPILE_FAILED
        if res.verdict == TIMED_OUT:
            msgs, failure = ("building the OpenCL programs timed out", *msgs), TIMED_OUT
        elif res.verdict != COMPILE_FAILED:
            msgs, failure = ("the OpenCL harness failed before running anything", *msgs), RUNTIME_FAILED
        return BuildResult(ok=False, seconds=seconds, log="\n".join(res.messages), messages=tuple(msgs),
                           input_error=res.input_error, failure=failure, **common)  # type: ignore[arg-type]

    def _env(self) -> dict[str, str]:
        env = opencl_env()
        root = str(Path(__file__).resolve().parents[3])  # the child imports s2s.mep.backends.opencl_runner
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env["S2S_PARENT_PID"] = str(os.getpid())  # the harness dies with this process (opencl_runner._die_with_parent)
        return env

    def run_env(self, build: BuildResult) -> dict[str, str]:
        return self._env()

    def harness_starter(self) -> Starter | None:
        return opencl_zygote.start

    def run_argv(self, build: BuildResult, *, time: bool) -> list[str]:
        argv = list(build.run_argv)
        launch = build.extra.get("launch")
        if launch is not None:
            argv += ["--var-grid", ",".join(str(x) for x in launch.grid), "--var-block", ",".join(str(x) for x in launch.block)]
        if not time:
            argv.append("--no-time")
        return argv
