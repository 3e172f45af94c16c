"""`hipcc` command lines as nvcc ones: the hipcc that s2s puts first on PATH where ROCm is not installed
(s2s.capture.hipcc) runs this file as a script, `python hipcc_nvcc.py --shim DIR --arch sm_90 -- HIPCC-ARGS`; sources
are compiled as CUDA (`-x cu`) with the HIP-to-CUDA shim on the include path, as HIP's own hipcc does on its NVIDIA
platform. It imports nothing from s2s (a script by its path).

    translate(args, shim, arch) -> the nvcc command lines one hipcc command line becomes
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

_SOURCES = {".hip", ".cu", ".cpp", ".cc", ".cxx", ".c++", ".c", ".C"}
_WITH_VALUE = {"-o", "-I", "-L", "-l", "-D", "-U", "-MF", "-MT", "-MQ", "-include", "-isystem", "-x", "-Xcompiler",
               "-Xlinker", "-Xptxas", "-arch", "-gencode", "--offload-arch", "-ccbin", "-std", "-Xarch_host",
               "-Xarch_device", "-idirafter", "-iquote"}
_DROP = ("--offload-arch", "--amdgpu-target", "-mcode-object-version", "-munsafe-fp-atomics", "-fno-gpu-rdc",
         "--hip-link", "-fhip-new-launch-api", "-mwavefrontsize64", "-mno-wavefrontsize64", "-fgpu-flush-denormals-to-zero",
         "-fno-gpu-flush-denormals-to-zero", "--rocm-path", "--hip-path", "-Xarch_device", "-lamdhip64", "-lhiprtc")
_NVCC_SAME = ("-O", "-g", "-D", "-U", "-I", "-L", "-l", "-std=", "--std=", "-M", "-shared", "-w", "-E", "-c", "-o",
              "-arch", "--gpu-architecture", "-gencode", "-rdc", "-Xcompiler", "-Xlinker", "-Xptxas", "-ccbin", "-isystem",
              "-include", "-lineinfo", "-use_fast_math", "--")


def _flag(arg: str) -> list[str]:
    """One hipcc (clang) option as nvcc takes it: HIP-on-AMD options dropped, host-compiler options passed with
    -Xcompiler, the rest as they are."""
    if arg.startswith(_DROP):
        return []
    if arg == "-fgpu-rdc":
        return ["-rdc=true"]
    if arg == "-ffast-math":
        return ["-use_fast_math", "-Xcompiler=-ffast-math"]
    if arg.startswith("-Wl,"):
        return [f"-Xlinker={arg[4:]}"]
    if arg.startswith(_NVCC_SAME) and not arg.startswith(("-march", "-mtune")):
        return [arg]
    if arg.startswith(("-W", "-f", "-m", "-pthread", "-pedantic", "-pipe", "-rdynamic")):
        return [f"-Xcompiler={arg}"]
    return [arg]


def translate(args: list[str], shim: str, arch: str, nvcc: str = "nvcc", tmp: str = "") -> list[list[str]]:
    """The nvcc command lines (run in order) that do what `hipcc ARGS` asks: sources compiled as CUDA (`-x cu`) with
    the shim on the include path; object files and libraries linked. A command that both compiles sources and links
    object files compiles each source into `tmp` first (nvcc's `-x cu` would take the objects for sources too)."""
    flags: list[str] = []
    sources: list[str] = []
    others: list[str] = []  # objects, archives, libraries named as files
    out: str | None = None
    compile_only = False
    has_arch = False
    i = 0
    while i < len(args):
        a = args[i]
        if a in _WITH_VALUE and i + 1 < len(args):
            value = args[i + 1]
            i += 2
            if a == "-o":
                out = value
            elif a == "-x":
                continue  # hip, c++ or cu: every source is compiled as CUDA
            elif a in {"--offload-arch", "-Xarch_device"}:
                continue
            else:
                has_arch = has_arch or a in {"-arch", "-gencode"}
                flags += [a, value]
            continue
        i += 1
        if a.startswith("-x") and len(a) > 2:
            continue
        if a == "-c":
            compile_only = True
        elif a.startswith("-o") and len(a) > 2 and not a.startswith("-o="):
            out = a[2:]
        elif not a.startswith("-") and Path(a).suffix in _SOURCES:
            sources.append(a)
        elif not a.startswith("-"):
            others.append(a)
        else:
            has_arch = has_arch or a.startswith(("-arch", "--gpu-architecture", "-gencode"))
            flags += _flag(a)
    base = [nvcc, f"-I{shim}"] + ([] if has_arch else [f"-arch={arch}"]) + flags
    tail = ["-o", out] if out else []
    if not sources:
        return [base + others + tail]
    if compile_only or not others:
        return [base + (["-c"] if compile_only else []) + ["-x", "cu"] + sources + tail]
    cmds, objects = [], []
    for n, src in enumerate(sources):
        obj = str(Path(tmp or tempfile.gettempdir()) / f"s2s-hipcc-{os.getpid()}-{n}-{Path(src).stem}.o")
        cmds.append(base + ["-c", "-x", "cu", src, "-o", obj])
        objects.append(obj)
    return cmds + [base + objects + others + tail]


def _main(argv: list[str]) -> int:
    """`hipcc.py --shim DIR --arch sm_NN -- HIPCC-ARGS`: the translated nvcc commands run in order."""
    shim = argv[argv.index("--shim") + 1]
    arch = argv[argv.index("--arch") + 1]
    args = argv[argv.index("--") + 1:]
    nvcc = os.environ.get("S2S_NVCC") or shutil.which("nvcc") or "nvcc"
    if args in (["--version"], ["-v"]):
        print("hipcc of s2s: HIP sources compiled by nvcc through the HIP-to-CUDA shim (no ROCm installed)", flush=True)
        return subprocess.call([nvcc, "--version"])
    with tempfile.TemporaryDirectory(prefix="s2s-hipcc-") as tmp:
        for cmd in translate(args, shim, arch, nvcc, tmp):
            if os.environ.get("HIPCC_VERBOSE"):
                print("s2s hipcc: " + " ".join(cmd), file=sys.stderr, flush=True)
            rc = subprocess.call(cmd)
            if rc:
                return rc
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
