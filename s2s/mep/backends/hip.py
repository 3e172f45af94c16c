"""HIP: the CUDA harness, built by hipcc when there is one (with `-DS2S_HIP`, which maps the harness's
CUDA runtime calls onto HIP through templates/cuda_on_hip.h), else by nvcc through the HIP-to-CUDA shim
header in templates/hip_shim (`-x cu -I hip_shim`), copied into the MEP so that it builds by hand too.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import ClassVar

from s2s.base.errors import UserError
from s2s.base.resources import templates_dir

from .base import write_if_changed
from .cuda import CudaBackend, cuda_arch

WRAPPER_ENV = "S2S_HIPCC_WRAPPER"  # the path of the hipcc s2s puts first on PATH for an application's build (capture/hipcc.py)


def hipcc() -> str | None:
    """A real hipcc: S2S_HIPCC, else the one on PATH unless it is s2s's own (which compiles through nvcc)."""
    found = os.environ.get("S2S_HIPCC") or shutil.which("hipcc")
    ours = os.environ.get(WRAPPER_ENV)
    if found and ours and os.path.realpath(found) == os.path.realpath(ours):
        return None
    return found


class HipBackend(CudaBackend):
    name: ClassVar[str] = "hip"
    kernel_suffixes: ClassVar[tuple[str, ...]] = (".hip", ".hip.cpp", ".hip.cc", ".cpp", ".cc", ".cu")
    tool_hint: ClassVar[str] = "install ROCm (hipcc) or the CUDA toolkit (nvcc, with the bundled HIP shim)"

    def compiler(self) -> list[str]:
        hc = hipcc()
        if hc:
            arch = os.environ.get("S2S_HIP_ARCH", "").strip()
            return [hc, "-O3", "-std=c++17", "-DS2S_HIP", *([f"--offload-arch={arch}"] if arch else [])]
        nvcc = os.environ.get("S2S_NVCC") or shutil.which("nvcc")
        if not nvcc:
            raise UserError("neither hipcc nor nvcc found on PATH", hint=self.tool_hint)
        return [nvcc, "-x", "cu", "-O3", "-std=c++17", f"-arch={cuda_arch()}", "-lineinfo"]

    def compiler_label(self) -> str:
        return "hipcc" if hipcc() else "nvcc with the HIP shim"

    def extra_flags(self, mep_dir: Path) -> list[str]:
        return [] if hipcc() else [f"-I{Path(mep_dir) / 'hip_shim'}"]

    def _support_files(self, mep_dir: Path) -> list[Path]:
        src = templates_dir()
        out = []
        for rel in ("hip_shim/hip/hip_runtime.h", "hip_shim/README.md"):
            dst = Path(mep_dir) / rel
            write_if_changed(dst, (src / rel).read_text(encoding="utf-8"))
            out.append(dst)
        dst = Path(mep_dir) / "cuda_on_hip.h"
        write_if_changed(dst, (src / "cuda_on_hip.h").read_text(encoding="utf-8"))
        out.append(dst)
        return out
