"""A measured profile of the whole application: every launch of every kernel timed in one instrumented run.

    measure(tree, work, build_cmd, run_cmd, reuse=False) -> Profile

A copy of the tree (never the original) gets, around every launch statement, a call before and after it
(templates/capture/profile_*.h.j2): CUDA records events on the launch's stream and waits for the second;
OpenCL finishes the queue before and after the launch and takes the wall time between. The copy is built
and run with the user's commands; kernels are ranked by their measured GPU time, and for each one a launch
in the steady state is chosen for `s2s capture --launch` (the median-time launch after the first few).

With `reuse`, a profile this work directory holds of the same tree (every file's path, size and modification
time), the same commands on the same machine is read again instead of building and running the application once
more (`auto` run again on its --work: the ranking is known); WORK/profile.stamp.json names what it was taken of.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

from s2s.base.devicelock import device_lock
from s2s.base.encoding import decode, encode, encoding_of
from s2s.base.errors import UserError
from s2s.base.fsutil import atomic_write
from s2s.base.records import LaunchSite
from s2s.base.resources import render
from s2s.base.treefiles import read_in_copy, write_in_copy
from s2s.lang.parsing import parse
from s2s.scan.sources import language_of

from .hipcc import hipcc_on_path, refuse_hip_on_amd, uses_hip
from .indirect import is_indirect, launched_name
from .instrument import _STATEMENT_PARENTS, _c_string, _call_at, _statement, _with_include, copy_tree
from .launch_forms import DEVICE_LAUNCH_KINDS, HIP_GGL, kernel_expression

HEADER = "s2s_profile_rt.h"
WARMUP_LAUNCHES = 2  # launches left out when the steady-state launch is chosen


@dataclass
class KernelTimes:
    kernel: str
    sites: list[str] = field(default_factory=list)
    times: list[tuple[int, float]] = field(default_factory=list)  # (ordinal, ms) per launch

    @property
    def total_ms(self) -> float:
        return sum(max(ms, 0.0) for _o, ms in self.times)

    @property
    def launches(self) -> int:
        return len(self.times)

    def steady_launch(self) -> int:
        """The launch to capture: the median-time one after the first WARMUP_LAUNCHES (all of them if fewer)."""
        skip = min(WARMUP_LAUNCHES, max(0, len(self.times) - 1))
        rest = sorted(self.times[skip:], key=lambda t: (t[1], t[0]))
        return rest[(len(rest) - 1) // 2][0] if rest else 1

    def as_dict(self) -> dict[str, object]:
        ms = [t for _o, t in self.times if t >= 0]
        return {"kernel": self.kernel, "launches": self.launches, "total_ms": round(self.total_ms, 6),
                "median_ms": round(statistics.median(ms), 6) if ms else None, "sites": self.sites,
                "steady_launch": self.steady_launch()}


@dataclass
class Profile:
    kernels: list[KernelTimes]  # by measured time, largest first
    sites: list[str]  # instrumented launch sites
    notes: list[str] = field(default_factory=list)
    how: str = ""
    build_s: float = 0.0  # the instrumented build's and run's wall times
    run_s: float = 0.0
    launches: list[Launch] = field(default_factory=list)  # in the application's order
    reused: bool = False  # read again from an earlier run of the same tree and commands (measure's `reuse`)

    @property
    def total_ms(self) -> float:
        return sum(k.total_ms for k in self.kernels)


def _wrap(data: bytes, dialect: str, sites: list[LaunchSite], backend: str, notes: list[str],
          kernels: set[str] | None = None) -> tuple[bytes, list[str]]:
    """`kernels`: the names the tree defines kernels by; a chevron launch of another name (a function pointer, a
    template's parameter: `kernel<<<g, b>>>(...)`) is named at run time by the function it launches."""
    tree = parse(data, dialect)
    enc = encoding_of(data)
    edits: list[tuple[int, bytes]] = []
    done: list[str] = []
    for site in sites:
        where = f"{site.file}:{site.line}"
        call = _call_at(tree, site.start_byte, site.end_byte)
        if call is None:
            notes.append(f"{where}: launch not found again in the copy; not timed")
            continue
        stmt = _statement(call, data)
        parent = stmt.parent.type if stmt.parent is not None else "translation_unit"
        if stmt.type in {"return_statement", "declaration"}:
            notes.append(f"{where}: the launch is not a statement of its own; not timed")
            continue
        # the unbraced body of a for, while, if or else (`for (...) k<<<g, b>>>(...);`): timed inside braces of its own
        braces = parent not in _STATEMENT_PARENTS and not parent.startswith("preproc_")
        if backend == "opencl":
            args = call.child_by_field_name("arguments")
            items = [decode(data[c.start_byte:c.end_byte], enc) for c in (args.named_children if args is not None else [])
                     if c.type != "comment"]
            if len(items) < 2:
                continue
            before = f"s2s_prof_cl_begin({items[0]}, {items[1]});"
            after = f"s2s_prof_cl_end({items[0]}, {_c_string(where)});"
        else:
            name = launched_name(site) or "?"
            stream = site.stream.strip() or "0"
            if kernels is not None and is_indirect(site, kernels):
                launched = kernel_expression(site, call, data, enc)
                before = (f"s2s_prof::begin_fn((const void*)({launched}), {_c_string(name)}, {_c_string(where)}, "
                          f"(cudaStream_t)({stream}));")
            else:
                before = f"s2s_prof::begin({_c_string(name)}, {_c_string(where)}, (cudaStream_t)({stream}));"
            after = "s2s_prof::end();"
        edits.append((stmt.start_byte, encode(("{ " if braces else "") + f"{before}  /* s2s profile */ ", enc)))
        edits.append((stmt.end_byte, encode(f" {after}  /* s2s profile */" + (" }" if braces else ""), enc)))
        done.append(where)
    for at, text in sorted(edits, key=lambda e: -e[0]):
        data = data[:at] + text + data[at:]
    return data, done


def instrument_all(tree: Path, work: Path, launches: list[LaunchSite],
                   kernels: set[str] | None = None) -> tuple[Path, list[str], list[str], str]:
    """Copy `tree` to work/app and time every CUDA chevron, hipLaunchKernelGGL and OpenCL launch there: (copy, sites,
    notes, backend; HIP's launches are timed as CUDA's: an application built for NVIDIA GPUs runs on the CUDA runtime).
    `kernels`: the names the tree defines kernels by (launches of other names are named at run time)."""
    notes: list[str] = []
    shutil.rmtree(Path(work).resolve() / "app", ignore_errors=True)  # an earlier run's copy (auto run again on its --work)
    root = copy_tree(Path(tree).resolve(), Path(work).resolve() / "app", notes)
    header = Path(work).resolve() / HEADER
    kinds = {s.kind for s in launches}
    if "clEnqueueNDRangeKernel" in kinds and kinds & DEVICE_LAUNCH_KINDS:
        notes.append("the tree launches both CUDA (or HIP) and OpenCL kernels; only the CUDA and HIP launches are timed")
    backend = "cuda" if kinds & DEVICE_LAUNCH_KINDS else "opencl"
    timed = DEVICE_LAUNCH_KINDS if backend == "cuda" else frozenset({"clEnqueueNDRangeKernel"})
    header.write_text(render(f"capture/profile_{backend}.h.j2"))
    by_file: dict[str, list[LaunchSite]] = {}
    for s in launches:
        if s.kind in timed:
            by_file.setdefault(s.file, []).append(s)
        elif s.kind != "clEnqueueNDRangeKernel":
            notes.append(f"{s.file}:{s.line}: {s.kind} launch not timed (chevron and {HIP_GGL} launches only)")
    sites: list[str] = []
    for rel, file_sites in sorted(by_file.items()):
        data = read_in_copy(root / rel)
        dialect = language_of(rel, data)
        edited, done = _wrap(data, "cpp" if dialect == "opencl" else dialect, file_sites, backend, notes, kernels)
        if done:
            write_in_copy(root, rel, _with_include(edited, header, min(s.start_byte for s in file_sites), backend == "opencl"))
            sites += done
    return root, sites, notes, backend


@dataclass(frozen=True)
class Launch:
    """One launch of the instrumented run, in the order the application made them."""
    kernel: str
    site: str  # FILE:LINE
    ordinal: int
    ms: float  # -1: not timed
    begin_us: float | None = None  # the host's clock before the launch and once it finished (None: an older profile)
    end_us: float | None = None


def read_launches(path: Path) -> list[Launch]:
    """Every `launch KERNEL SITE ORDINAL MS [BEGIN_US END_US]` line of a profile, in order."""
    out: list[Launch] = []
    if not path.is_file():
        return out
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        words = line.split()
        if len(words) not in (5, 7) or words[0] != "launch":
            continue
        try:
            span = (float(words[5]), float(words[6])) if len(words) == 7 else (None, None)
            out.append(Launch(words[1], words[2], int(words[3]), float(words[4]), *span))
        except ValueError:
            continue
    return out


def graphed_launches(path: Path) -> dict[str, int]:
    """Launches recorded into a CUDA graph (stream capture: `graphed KERNEL SITE` lines) per kernel: they run later,
    from cudaGraphLaunch, and are neither timed nor counted."""
    out: dict[str, int] = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            words = line.split()
            if len(words) == 3 and words[0] == "graphed":
                out[words[1]] = out.get(words[1], 0) + 1
    return out


def read_profile(path: Path) -> dict[str, KernelTimes]:
    return kernel_times(read_launches(path))


def kernel_times(launches: list[Launch]) -> dict[str, KernelTimes]:
    """The launches grouped by kernel: each kernel's sites and (ordinal, ms) per launch."""
    out: dict[str, KernelTimes] = {}
    for la in launches:
        kt = out.setdefault(la.kernel, KernelTimes(la.kernel))
        if la.site not in kt.sites:
            kt.sites.append(la.site)
        kt.times.append((la.ordinal, la.ms))
    return out


def profile_env(env: dict[str, str], out: Path) -> dict[str, str]:
    """The instrumented run's environment: the profile file; CUDA modules loaded when the context is made, not at a
    kernel's first launch (CUDA 12's lazy loading can put module loading between the events around that launch), unless
    the user chose a loading mode; NVIDIA's OpenCL vendors where the ICD loader would not look."""
    env["S2S_PROFILE_FILE"] = str(out)
    env.setdefault("CUDA_MODULE_LOADING", "EAGER")
    if "OCL_ICD_VENDORS" not in env and os.path.isdir("/etc/OpenCL/vendors"):
        env["OCL_ICD_VENDORS"] = "/etc/OpenCL/vendors"
    return env


def run_output_tail(log: Path, run_cmd: str, lines: int = 3) -> str:
    """The last `lines` non-empty lines the run command printed, from the log (after its last `$ RUN_CMD` line)."""
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log)"
    mark = f"$ {run_cmd}"
    at = text.rfind(mark)
    body = text[at + len(mark):].split("\n", 1)[-1] if at >= 0 else text
    kept = [ln.strip() for ln in body.splitlines() if ln.strip()][-lines:]
    return " | ".join(kept)[-400:] if kept else "(no output)"


STAMP = "profile.stamp.json"


def tree_stamp(tree: Path, build_cmd: str, run_cmd: str) -> str:
    """What a profile was taken of: the commands, the machine, and every file of the tree by path, size and
    modification time (the tree is only ever read by s2s: an edit changes the time)."""
    h = hashlib.sha256(json.dumps([build_cmd, run_cmd, os.uname().nodename]).encode())
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames[:] = sorted(d for d in dirnames if d != ".git")
        for name in sorted(filenames):
            path = Path(dirpath) / name
            try:
                st = path.lstat()
            except OSError:
                continue
            h.update(f"{path.relative_to(tree)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def _reused(work: Path, stamp: str) -> Profile | None:
    """The profile WORK holds of `stamp`, or None."""
    try:
        meta = json.loads((work / STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    out = work / "profile.txt"
    if not isinstance(meta, dict) or meta.get("stamp") != stamp or not out.is_file():
        return None
    order = read_launches(out)
    kernels = sorted(kernel_times(order).values(), key=lambda k: -k.total_ms)
    if not kernels:
        return None
    notes = [str(n) for n in meta.get("notes", [])]
    notes.append(f"profile: reused the one taken at {meta.get('taken', '?')} of the same tree and commands ({work / 'profile.txt'}; "
                 f"remove {work} to profile again)")
    return Profile(kernels=kernels, sites=[str(x) for x in meta.get("sites", [])], notes=notes, how=str(meta.get("how", "")),
                   launches=order, reused=True)


def measure(tree: Path, work: Path, build_cmd: str, run_cmd: str, *, timeout: float = 1800.0,
            launches: list[LaunchSite] | None = None, kernel_names: set[str] | None = None, reuse: bool = False) -> Profile:
    """One instrumented build and run of the application; kernels ranked by measured time. `launches` and
    `kernel_names` (the names the tree defines kernels by): the tree's scan, where the caller has it. `reuse`: the
    profile WORK holds of the same tree and commands, where it has one (the module's docstring)."""
    from s2s.scan.tree import scan_tree

    from . import _run

    tree = Path(tree).resolve()
    languages: list[str] = []  # the kernels' languages, where this scan knows them
    if launches is None or kernel_names is None:
        index = scan_tree(tree)
        launches = list(index.launches) if launches is None else launches
        kernel_names = {k.name for k in index.kernels} if kernel_names is None else kernel_names
        languages = [k.language for k in index.kernels]
    if not kernel_names:  # GPU work through libraries only (Thrust, cuBLAS, ...): nothing of the tree's to optimize
        raise UserError("auto: the tree defines no kernel of its own (no __global__ function, no OpenCL __kernel); "
                        "its GPU work, if any, is library calls (Thrust, CUB, cuBLAS, ...), which s2s does not rewrite",
                        file=str(tree))
    if not any(s.kind in DEVICE_LAUNCH_KINDS | {"clEnqueueNDRangeKernel"} for s in launches):
        raise UserError(f"auto: no CUDA <<<>>>, {HIP_GGL} or clEnqueueNDRangeKernel launch found to time", file=str(tree))
    hip = uses_hip(tree, launches, languages)
    if hip:  # timed with CUDA events: on an NVIDIA GPU only
        refuse_hip_on_amd()
    work = Path(work).resolve()
    stamp = tree_stamp(tree, build_cmd, run_cmd) if reuse else ""
    if reuse and (kept := _reused(work, stamp)) is not None:
        return kept
    (work / STAMP).unlink(missing_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    root, sites, notes, backend = instrument_all(tree, work, launches, kernel_names)
    log = work / "profile.log"
    out = work / "profile.txt"
    out.unlink(missing_ok=True)
    with hipcc_on_path(hip) as hip_note:  # a HIP application's hipcc where ROCm is not installed
        if hip_note:
            notes.append(hip_note)
        env = profile_env(dict(os.environ), out)
        t0 = time.monotonic()
        _run(build_cmd, root, env, timeout, log, "build")
        built = time.monotonic()
        with device_lock():  # the run's kernel times alone on the device, as every timing of the harness is
            t1 = time.monotonic()  # the run's time, not the wait for the device
            _run(run_cmd, root, env, timeout, log, "run")
            t2 = time.monotonic()
    order = read_launches(out)
    kernels = sorted(kernel_times(order).values(), key=lambda k: -k.total_ms)
    graphed = graphed_launches(out)
    if graphed:
        notes = list(notes) + [f"{sum(graphed.values())} launch(es) recorded into CUDA graphs (stream capture) not timed "
                               f"(they run from cudaGraphLaunch): {', '.join(f'{k} x{n}' for k, n in sorted(graphed.items()))}"]
    if not kernels:  # an application that stops before its GPU part (an input file missing) often exits 0: its words
        raise UserError(f"auto: the run command {run_cmd!r} launched none of the {len(sites)} timed launch sites; its "
                        f"output ends: {run_output_tail(log, run_cmd)}", file=str(log),
                        hint="check that the run command runs the GPU part of the application (its inputs present)")
    how = ("CUDA events around each launch (synchronized after it)" if backend == "cuda"
           else "wall time of each clEnqueueNDRangeKernel between two clFinish")
    if reuse:
        atomic_write(work / STAMP, json.dumps({"stamp": stamp, "sites": sites, "notes": notes, "how": how,
                                               "taken": time.strftime("%Y-%m-%d %H:%M:%S")}).encode())
    return Profile(kernels=kernels, sites=sites, notes=notes, how=how, build_s=built - t0, run_s=t2 - t1, launches=order)
