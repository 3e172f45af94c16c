"""hipcc on an NVIDIA machine without ROCm: the application's own build command says `hipcc`; during profile, capture
and auto a `hipcc` of ours comes first on PATH and compiles through nvcc with the HIP-to-CUDA shim header
(templates/hip_shim; the command lines: hipcc_nvcc.py). A real hipcc on PATH is used as it is (its launches run on the
CUDA runtime only on hipcc's NVIDIA platform: the AMD platform is refused).

    hipcc_on_path(needed) -> context manager giving the note to report ("" when nothing was put on PATH)
    refuse_hip_on_amd()
    uses_hip(root, launches) -> bool
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from s2s.base.errors import UserError
from s2s.base.records import LaunchSite
from s2s.base.treefiles import read_regular
from s2s.mep.backends.hip import WRAPPER_ENV
from s2s.mep.backends.hip import hipcc as real_hipcc
from s2s.scan.sources import language_of

from . import hipcc_nvcc


def refuse_hip_on_amd() -> None:
    """A real hipcc for AMD GPUs: the capture and profile runtimes record launches with the CUDA runtime, so HIP
    applications are captured when they run on an NVIDIA GPU (hipcc's NVIDIA platform, or nvcc through the shim)."""
    hc = real_hipcc()
    if not hc:
        return
    platform = os.environ.get("HIP_PLATFORM", "").strip().lower()
    if not platform:
        try:
            platform = subprocess.run([str(Path(hc).with_name("hipconfig")), "--platform"], capture_output=True,
                                      text=True, timeout=30).stdout.strip().lower()
        except (OSError, subprocess.SubprocessError):
            platform = ""
    if platform in {"amd", "hcc"}:
        raise UserError(f"capture: HIP applications are captured and timed on NVIDIA GPUs (hipcc's NVIDIA platform, or nvcc "
                        f"through s2s's HIP shim); {hc} builds for AMD GPUs", hint="set HIP_PLATFORM=nvidia on a machine "
                        "with an NVIDIA GPU, or run where hipcc is not installed and nvcc is")


@contextmanager
def hipcc_on_path(needed: bool) -> Iterator[str]:
    """While the block runs: where `needed` (the tree holds HIP code), there is no real hipcc and nvcc is installed, a
    `hipcc` of ours first on PATH (os.environ: every build and run the block starts inherits it). Gives the note that
    says so ("" when nothing was done: not needed, a real hipcc, no nvcc, or ours already on PATH)."""
    if not needed or os.environ.get(WRAPPER_ENV) or real_hipcc() or not (os.environ.get("S2S_NVCC") or shutil.which("nvcc")):
        yield ""
        return
    from s2s.base.resources import templates_dir
    from s2s.mep.backends.cuda import cuda_arch

    shim, arch = str(templates_dir() / "hip_shim"), cuda_arch()
    with tempfile.TemporaryDirectory(prefix="s2s-hipcc-") as tmp:
        wrapper = Path(tmp) / "hipcc"
        wrapper.write_text("#!/bin/sh\n# s2s: hipcc compiling through nvcc with the HIP-to-CUDA shim (no ROCm here)\n"
                           f"exec {_sh(sys.executable)} {_sh(str(Path(hipcc_nvcc.__file__).resolve()))} --shim {_sh(shim)} "
                           f"--arch {_sh(arch)} -- \"$@\"\n")
        wrapper.chmod(0o755)
        saved = {k: os.environ.get(k) for k in ("PATH", WRAPPER_ENV)}
        os.environ["PATH"] = tmp + os.pathsep + os.environ.get("PATH", "")
        os.environ[WRAPPER_ENV] = str(wrapper)
        try:
            yield (f"no hipcc found: the build command's hipcc is s2s's, which compiles through nvcc with the HIP-to-CUDA "
                   f"shim (nvcc -x cu -I {shim} -arch={arch})")
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def _sh(word: str) -> str:
    return "'" + word.replace("'", "'\\''") + "'"


def uses_hip(root: Path, launches: Iterable[LaunchSite], languages: Iterable[str] = ()) -> bool:
    """Whether a tree holds HIP code: a kernel in `languages` (its kernels' languages, where known) is HIP, a launch is
    a hipLaunchKernelGGL, or a launch is in a file that is HIP (a .hip file, one that includes hip/hip_runtime.h)."""
    launches = list(launches)
    if "hip" in set(languages) or any(s.kind == "hipLaunchKernelGGL" for s in launches):
        return True
    for rel in sorted({s.file for s in launches}):
        data = read_regular(Path(root) / rel)[0]
        if data is not None and language_of(rel, data) == "hip":
            return True
    return False


