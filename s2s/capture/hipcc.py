"""hipcc on an NVIDIA machine without ROCm: the application's own build command says `hipcc`; during profile, capture
and auto a `hipcc` of ours comes first on PATH and compiles through nvcc with the HIP-to-CUDA shim header
(templates/hip_shim, `-x cu -I hip_shim`), the way HIP's own hipcc does on its NVIDIA platform. A real hipcc on PATH
is used as it is (its launches then run on the CUDA runtime only on the NVIDIA platform: the AMD platform is refused).

    hipcc_on_path(needed) -> context manager giving the note to report ("" when nothing was put on PATH)
    real_hipcc() -> the hipcc on PATH that is not ours, or None
    translate(args, shim, arch) -> the nvcc command lines one hipcc command line becomes

This file runs as a script too (the wrapper runs it: `python hipcc.py --shim DIR --arch sm_90 -- ARGS`), so it
imports nothing from s2s at its top.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

WRAPPER_ENV = "S2S_HIPCC_WRAPPER"  # the path of our hipcc while it is on PATH
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


def real_hipcc() -> str | None:
    """S2S_HIPCC, else the hipcc on PATH unless it is ours."""
    found = os.environ.get("S2S_HIPCC") or shutil.which("hipcc")
    ours = os.environ.get(WRAPPER_ENV)
    if found and ours and os.path.realpath(found) == os.path.realpath(ours):
        return None
    return found


def refuse_hip_on_amd() -> None:
    """A real hipcc for AMD GPUs: the capture and profile runtimes record launches with the CUDA runtime, so HIP
    applications are captured when they run on an NVIDIA GPU (hipcc's NVIDIA platform, or nvcc through the shim)."""
    from s2s.base.errors import UserError

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
                           f"exec {_sh(sys.executable)} {_sh(str(Path(__file__).resolve()))} --shim {_sh(shim)} "
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


def uses_hip(root: Path, launches: list) -> bool:  # type: ignore[type-arg]
    """Whether the launches of the tree `root` (LaunchSite) are HIP's: a hipLaunchKernelGGL, or a launch in a file
    that is HIP (a .hip file, one that includes hip/hip_runtime.h)."""
    from s2s.base.treefiles import read_regular
    from s2s.scan.sources import language_of

    if any(s.kind == "hipLaunchKernelGGL" for s in launches):
        return True
    for rel in sorted({s.file for s in launches}):
        data = read_regular(Path(root) / rel)[0]
        if data is not None and language_of(rel, data) == "hip":
            return True
    return False


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
