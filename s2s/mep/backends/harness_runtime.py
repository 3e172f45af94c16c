"""The CUDA/HIP harness's run, compiled once and linked by every variant's build.

Of a harness build's ~10 s, two thirds went to the host compiler optimizing the harness's own run (the checks, the
timing, the captured data, the command line: `templates/s2s_harness_common.cuh` from `// ---- the run`), the same for
every variant of every MEP. That part, with the fills and checks of the common element types, is compiled here once
into a library (`-DS2S_RUNTIME_OBJECT -c`, `ar`); a variant's build compiles its kernels and `main` with
`-DS2S_PREBUILT_RUNTIME` and links the object. A harness built by hand (`make`, `nvcc harness.cu`) stays whole.

The object depends on the compiler and its flags, and on those of the MEP's flags that can change the text it was
compiled from: a macro the text names (or a reserved one, which system headers read), an include directory holding a
header of the same name as one it includes, a forced include, and any option that is none of these. Other MEPs with
other sizes (`-DN=4096`) share it. It is kept, as a static library (`nvcc -x cu`, the HIP shim's build, would read an
object file named on its command line as CUDA source), under `$S2S_BUILD_CACHE` (auto sets it to WORK/build-cache)
or else in the MEP's `build/runtime/`, named by a digest of all that, written once under a file lock by whichever
build needs it first. `S2S_PREBUILT_RUNTIME=0` builds every harness whole. The two sides check at run time that they agree on the
layout of the structs they share (`LAYOUT`).
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

from s2s.base.fsutil import atomic_write
from s2s.base.resources import templates_dir

from .base import run_tool

CACHE_ENV = "S2S_BUILD_CACHE"
SWITCH_ENV = "S2S_PREBUILT_RUNTIME"  # "0": every harness built whole
COMMON = "s2s_harness_common.cuh"
PREBUILT_DEFINE = "-DS2S_PREBUILT_RUNTIME"
LIB_PREFIX = "s2s-harness-run-"
_RESERVED_MACRO = re.compile(r"_|NDEBUG$|.*(CUDA|HIP|GLIBC|STD|CUB|THRUST|OMP|OPENMP|NV)")
_TAKES_ARGUMENT = frozenset({"-Xcompiler", "--compiler-options", "-Xptxas", "--ptxas-options", "-Xlinker", "--linker-options",
                             "-Xnvlink", "--nvlink-options", "-Xfatbin", "--fatbin-options", "-Xarchive", "--archive-options",
                             "-ccbin", "--compiler-bindir", "-gencode", "--generate-code", "-maxrregcount", "-x"})
_LINK_TROUBLE = ("undefined reference", "multiple definition", "ld returned", "cannot find -l")


@lru_cache(maxsize=1)
def _common() -> tuple[str, str, frozenset[str], tuple[str, ...]]:
    """The generic harness text, its digest, the identifiers it names, the headers it includes (read once)."""
    text = (templates_dir() / COMMON).read_text(encoding="utf-8")
    return (text, hashlib.sha256(text.encode()).hexdigest(), frozenset(re.findall(r"[A-Za-z_]\w*", text)),
            tuple(re.findall(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', text, re.M)))


def enabled() -> bool:
    return os.environ.get(SWITCH_ENV, "1").strip() != "0"


def cache_dir(mep_dir: Path) -> Path:
    env = os.environ.get(CACHE_ENV, "").strip()
    return (Path(env) if env else Path(mep_dir) / "build" / "runtime").absolute()  # the build runs in the MEP


@contextmanager
def shared_in(directory: Path) -> Iterator[None]:
    """While the block runs, the harness builds of this process and of those it starts keep the run in `directory`
    (one compile for every MEP of an application), unless $S2S_BUILD_CACHE already names a place."""
    if os.environ.get(CACHE_ENV, "").strip():
        yield
        return
    os.environ[CACHE_ENV] = str(directory)
    try:
        yield
    finally:
        os.environ.pop(CACHE_ENV, None)


def relevant_flags(flags: list[str], mep_dir: Path) -> list[str]:
    """The MEP's flags that can change what the generic harness text compiles to, in order (paths made absolute)."""
    _text, _digest, names, headers = _common()
    out: list[str] = []
    i = 0
    while i < len(flags):
        f = flags[i]
        if f in _TAKES_ARGUMENT and i + 1 < len(flags):  # `-Xcompiler -DX`: the pair is one option of nvcc's
            out += [f, flags[i + 1]]
            i += 2
            continue
        opt, val, step = f, "", 1
        for p in ("-D", "-U", "-I", "-isystem", "-iquote", "-include"):
            if f == p and i + 1 < len(flags):
                opt, val, step = p, flags[i + 1], 2
                break
            if f.startswith(p) and p in ("-D", "-U", "-I"):
                opt, val = p, f[len(p):]
                break
        if opt in ("-D", "-U"):
            name = re.match(r"[A-Za-z_]\w*", val)
            if name is None or name.group(0) in names or _RESERVED_MACRO.match(name.group(0)):
                out.append(opt + val)
        elif opt in ("-I", "-isystem", "-iquote"):
            d = (Path(mep_dir) / val).resolve()
            if any((d / h).exists() for h in headers):  # it would shadow a header the generic text includes
                out += [opt, str(d)]
        elif opt == "-include":
            out += [opt, str((Path(mep_dir) / val).resolve())]
        else:
            out.append(f)
        i += step
    return out


def _tool_stamp(tool: str) -> list[object]:
    import shutil

    found = shutil.which(tool) or tool
    try:
        st = Path(found).resolve().stat()
        return [str(Path(found).resolve()), st.st_size, st.st_mtime_ns]
    except OSError:
        return [found]


def prebuilt(compiler: list[str], extra: list[str], flags: list[str], mep_dir: Path, *,
             timeout_s: float = 900.0) -> tuple[Path | None, float]:
    """The run's object for this compiler and these flags, compiled now if no build did yet, and the seconds this call
    spent compiling it; None when switched off or when it does not compile (the harness is then built whole)."""
    if not enabled():
        return None, 0.0
    text, digest, _names, _headers = _common()
    # the backend's extra flags pass the same filter: the HIP shim's include directory (a copy in each MEP) changes
    # nothing the run includes, and left in it gave every HIP MEP a library of its own
    cmd = [*compiler, *relevant_flags([*extra, *flags], mep_dir), "-DS2S_RUNTIME_OBJECT"]
    key = hashlib.sha256(json.dumps([digest, cmd, _tool_stamp(compiler[0])]).encode()).hexdigest()[:20]
    where = cache_dir(mep_dir)
    # an archive, linked with -L/-l: an object file named on the command line of nvcc -x cu (the HIP shim's build)
    # would be read as CUDA source
    obj, failed = where / f"lib{LIB_PREFIX}{key}.a", where / f"{LIB_PREFIX}{key}.failed"
    if obj.is_file():
        return obj, 0.0
    if failed.is_file():
        return None, 0.0
    seconds = 0.0
    try:
        where.mkdir(parents=True, exist_ok=True)
        with open(where / f"{LIB_PREFIX}{key}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another build compiling it: wait for its object
            if obj.is_file():
                return obj, 0.0
            src, tmp = where / f"{LIB_PREFIX}{key}.cu", where / f"{LIB_PREFIX}{key}.{os.getpid()}.o"
            lib = where / f"lib{LIB_PREFIX}{key}.{os.getpid()}.a"
            src.write_text(text, encoding="utf-8")
            rc, log, seconds = run_tool([*cmd, "-c", str(src), "-o", str(tmp)], cwd=where, timeout_s=timeout_s)
            if rc == 0 and tmp.is_file():
                rc, more, _s = run_tool(["ar", "rcs", str(lib), str(tmp)], cwd=where, timeout_s=timeout_s)
                log += more
            tmp.unlink(missing_ok=True)
            if rc != 0 or not lib.is_file():
                lib.unlink(missing_ok=True)
                if rc != 124:  # a compile that failed is not tried again; one killed on its timeout (a loaded machine) is
                    atomic_write(failed, (" ".join(cmd) + "\n\n" + log).encode("utf-8", "replace"))
                return None, seconds
            os.replace(lib, obj)
            return obj, seconds
    except OSError:
        return None, seconds


def link_flags(lib: Path) -> list[str]:
    """What a build command adds to link the archive `prebuilt` returned."""
    return [f"-L{lib.parent}", "-l" + lib.name[len("lib"):-len(".a")]]


def link_trouble(log: str) -> bool:
    """The build failed where the variant's object meets the prebuilt run (not in the variant's own code)."""
    return any(t in log for t in _LINK_TROUBLE)
