"""Issue 29, class 3: a CUDA kernel's flags never come from the HIP half of its Makefile (HIPCC recipes, HIP_FLAGS,
ROCm include paths, -D__HIP_PLATFORM_AMD__), whichever way the Makefile is read. Written here from scratch.
"""
from __future__ import annotations

from pathlib import Path

from s2s.scan.build_flags import makefile_command

SOURCE = {"cuda": "#include <cuda_runtime.h>\n__global__ void k(float* a) { a[0] = 1.f; }\n",
          "hip": "#include <hip/hip_runtime.h>\n__global__ void k(float* a) { a[0] = 1.f; }\n"}
BY_VARIABLES = """CUDA_FLAGS = -DTILE=16 -Iinclude
HIP_FLAGS = -DTILE=32 -D__HIP_PLATFORM_AMD__ -I/opt/rocm/include
all: main
main: main.cu
\t$(CC) -O3 -o $@ $<
"""
BY_RECIPES = """all: main_cuda main_hip
main_cuda: main.cu
\tnvcc -DTILE=16 -o $@ $<
main_hip: main.cu
\thipcc -DTILE=32 --offload-arch=gfx90a -o $@ $<
"""


def _flags(tmp_path: Path, makefile: str, language: str) -> tuple[str, ...]:
    (tmp_path / "include").mkdir(exist_ok=True)
    (tmp_path / "main.cu").write_text(SOURCE[language])
    (tmp_path / "Makefile").write_text(makefile)
    command, _where = makefile_command(tmp_path / "main.cu", tmp_path)
    assert command is not None
    return tuple(a for a in command.args if a.startswith(("-D", "-I")))


def test_cuda_unit_takes_no_hip_variables(tmp_path: Path) -> None:
    assert _flags(tmp_path, BY_VARIABLES, "cuda") == ("-DTILE=16", "-Iinclude")


def test_cuda_unit_takes_no_hipcc_recipe(tmp_path: Path) -> None:
    assert _flags(tmp_path, BY_RECIPES, "cuda") == ("-DTILE=16",)


def test_hip_unit_keeps_its_flags(tmp_path: Path) -> None:
    assert "-D__HIP_PLATFORM_AMD__" in _flags(tmp_path, BY_VARIABLES, "hip")
