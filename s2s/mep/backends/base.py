"""What every backend shares: the build target, the build record, running a harness with a timeout and
reading its `S2S_RESULT` line, and the checks of mep.toml that the manifest's own `validate` leaves out.

A backend turns (MEP directory, variant id) into something runnable (`build`) and runs it (`run`).
Build and run are separate so that an optimizer can build many variants in parallel on the CPU and
then evaluate them one at a time on the GPU.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any, ClassVar, Protocol

from s2s.base.devicelock import HARNESS_ENV, WAIT_PHASE, note_hold, note_wait
from s2s.base.errors import UserError
from s2s.mep import probe_record, reference_cache
from s2s.mep.manifest import FILL_IN, LaunchSpec, Manifest, ParamSpec
from s2s.mep.measure import (
    COMPILE_FAILED,
    PHASE_PREFIX,
    RESULT_PREFIX,
    RUNTIME_FAILED,
    TIMED_OUT,
    Measurement,
    failed,
    from_harness,
)
from s2s.mep.variant import FILE as VARIANT_FILE
from s2s.mep.variant import Variant

FILLS = ("uniform", "index", "zeros", "random-struct", "offsets", "null", "shuffle")  # null: a null pointer (count 0;
# CUDA); shuffle: the first captured set's values reordered from the seed (uniform in [low, high] without captured data)
SPACES = ("", "global", "local", "constant", "private")
REF_ID = "ref"  # build directory of the reference-against-itself harness
HOST_PHASE = "host work ("  # the harness's own work between device holds (setup, fills, comparisons)


# -- what to build ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Target:
    """One variant of one MEP, resolved: its kernel file and its launch configuration."""
    mep_dir: Path
    manifest: Manifest
    variant: str | None  # None: the reference against itself
    variant_file: Path
    launch: LaunchSpec  # the variant's (from variants/<id>/variant.json), else the reference's
    note: str = ""

    @property
    def build_dir(self) -> Path:
        return self.mep_dir / "build" / (self.variant or REF_ID)

    @property
    def ref_file(self) -> Path:
        return self.mep_dir / self.manifest.kernel_file

    @property
    def label(self) -> str:
        return self.variant or "reference"


@dataclass(frozen=True)
class BuildResult:
    mep_dir: Path
    variant: str | None
    backend: str
    kernel: str
    ok: bool
    seconds: float
    build_dir: Path
    run_argv: tuple[str, ...] = ()  # what `run_built` executes (without timing/sanitizer options)
    command: tuple[str, ...] = ()  # the build command
    log: str = ""  # compiler output
    messages: tuple[str, ...] = ()
    input_error: str | None = None  # the MEP is wrong (the reference does not build): not the variant's fault
    cached: bool = False
    failure: str = COMPILE_FAILED  # the verdict when not ok (runtime-failed when no device could even build)
    timeout_s: float = 120.0
    env: tuple[tuple[str, str], ...] = ()
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def verdict(self) -> str | None:
        return None if self.ok else self.failure


# -- the backend interface -------------------------------------------------------------------------
class Backend(ABC):
    name: ClassVar[str]
    kernel_suffixes: ClassVar[tuple[str, ...]]

    @abstractmethod
    def write_files(self, mep_dir: Path, manifest: Manifest, *, readme: bool = False) -> list[Path]:
        """Write the generated harness (and Makefile; README.md when `readme` or when missing) into the MEP."""

    @abstractmethod
    def build(self, target: Target) -> BuildResult:
        """Compile (or, for OpenCL, compile-check) the reference and the variant; never raises for a bad variant."""

    @abstractmethod
    def run_argv(self, build: BuildResult, *, time: bool) -> list[str]:
        """The command line that runs a successful build."""

    # the harness keeps a long reference's outputs per input set across evaluations (--ref-cache: reference_cache.py)
    keeps_reference_outputs: ClassVar[bool] = False

    def run_env(self, build: BuildResult) -> dict[str, str]:
        env = dict(os.environ)
        env.update(dict(build.env))
        return env

    def harness_starter(self) -> Starter | None:
        """How this backend starts its harness where not as a plain subprocess (run_harness_process's `start`)."""
        return None

    def run(self, build: BuildResult, *, time: bool = True, sanitize: bool = False, harness_lock: Path | None = None,
            check: bool = True) -> Measurement:
        """Run the harness; with `harness_lock` it takes the device lock itself (checks shared, timing exclusive),
        without it the caller holds the device (or runs alone). `check=False`: timed only (the original against
        itself, where a check holds nothing to anything)."""
        argv = self.run_argv(build, time=time) + ([] if check else ["--time-only"])
        key = str(build.extra.get("probe_key") or "") if check else ""
        record = probe_record.load(build.mep_dir, key) if key else None
        if record is not None and record.fault:  # the reference reads or writes past a buffer: refused as the probe would
            return failed(RUNTIME_FAILED, backend=self.name, kernel=build.kernel, variant=build.variant,
                          build_seconds=build.seconds, messages=[record.message, record.note()], input_error=record.message)
        if record is not None:
            argv.append("--no-probe")
        env = self.run_env(build)
        ref_key = str(build.extra.get("probe_key") or "")
        if check and self.keeps_reference_outputs and not env.get("S2S_SEED"):  # a seed the user gave is theirs
            argv += reference_cache.harness_args(build.mep_dir, ref_key)
        env.pop(HARNESS_ENV, None)
        if harness_lock is not None:
            env[HARNESS_ENV] = str(harness_lock)
        m = run_harness_process(argv, env=env, cwd=build.mep_dir, timeout_s=build.timeout_s,
                                backend=self.name, kernel=build.kernel, variant=build.variant,
                                build_seconds=build.seconds, start=self.harness_starter())
        if self.keeps_reference_outputs:  # timed, or the shortest of the checks' launches of it
            ref_us = m.ref.median_us if m.ref is not None else m.extra.get("reference_check_us")
            reference_cache.note_time(build.mep_dir, ref_key, ref_us if isinstance(ref_us, (int, float)) else None, m.seed)
        if record is not None:
            m = m.with_messages(record.note())
        elif key:
            probe_record.save(build.mep_dir, key, m.extra.get("probe"), seed=m.seed, device=m.device, variant=build.variant)
        if sanitize and m.verdict not in (TIMED_OUT,):
            m = self.sanitize(build, m)
        return m

    def sanitize(self, build: BuildResult, m: Measurement) -> Measurement:
        return m.with_messages(f"--sanitize: no memory checker for the {self.name} backend")

    # -- shared checks of mep.toml ---------------------------------------------------------------
    def check_manifest(self, m: Manifest, path: Path) -> None:
        check_manifest(m, path, self)


# -- running a harness -----------------------------------------------------------------------------
class HarnessProcess(Protocol):
    """What run_harness_process uses of a subprocess.Popen (text mode, both pipes): also a harness that a backend's
    `start` made otherwise (opencl_zygote.Child, forked from a pre-imported runner)."""
    @property
    def pid(self) -> int: ...
    @property
    def stdout(self) -> IO[str] | None: ...
    @property
    def stderr(self) -> IO[str] | None: ...
    @property
    def returncode(self) -> int | Any: ...
    def wait(self, timeout: float | None = None) -> int: ...
    def kill(self) -> None: ...


Starter = Callable[[list[str], Path, dict[str, str]], "HarnessProcess | None"]  # None: start the plain subprocess


def run_harness_process(argv: list[str], *, env: dict[str, str], cwd: Path, timeout_s: float, backend: str, kernel: str,
                        variant: str | None, build_seconds: float, start: Starter | None = None) -> Measurement:
    """Run `argv` in its own process group; kill the group after `timeout_s`; parse its S2S_RESULT line. `start`: the
    backend's own way to start `argv`, in its own session as Popen(start_new_session=True) would (None: Popen)."""
    t0 = time.monotonic()
    try:
        proc = start(argv, cwd, env) if start is not None else None
        if proc is None:
            proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    errors="replace", start_new_session=True)
    except OSError as exc:
        return failed(RUNTIME_FAILED, backend=backend, kernel=kernel, variant=variant, build_seconds=build_seconds,
                      messages=[f"cannot start {argv[0]}: {exc}"])
    from s2s.base.procs import tracked

    with tracked(proc.pid):  # killed with its children on a signal or any error too
        out, err, killed, phase_seconds = _communicate(proc, timeout_s)
    if killed:
        where = last_phase(err)
        return failed(TIMED_OUT, backend=backend, kernel=kernel, variant=variant, build_seconds=build_seconds,
                      run_seconds=time.monotonic() - t0,
                      messages=[f"killed after {timeout_s:g} s (timing.timeout_s)" + (f" while running the {where}" if where else "")])
    seconds = time.monotonic() - t0
    obj = parse_result(out)
    if obj is None:
        tail = _tail(err) or _tail(out)
        why = f"exit status {proc.returncode}" if proc.returncode >= 0 else f"killed by signal {-proc.returncode}"
        where = last_phase(err)
        return failed(RUNTIME_FAILED, backend=backend, kernel=kernel, variant=variant, build_seconds=build_seconds,
                      run_seconds=seconds,
                      messages=[f"the harness ended without a result ({why})" + (f" during the {where}" if where else "")]
                      + ([tail] if tail else []))
    m = from_harness(obj, backend=backend, kernel=kernel, variant=variant, build_seconds=build_seconds, run_seconds=seconds)
    return replace(m, phase_seconds=phase_seconds)


class _Phases:
    """Where a harness's time went, from its phase lines as they arrive: "start" (until its first phase line), "wait"
    (for the device lock), "probe", "checks" and "timing" (holding it shared or alone: the bounds probe, the checks,
    the timing), and "host.<what>" (its own work between them: setup, inputs (the fills), probe and checks (the
    comparisons after the device is released), timing). Without the lock the harness prints no phase lines of the
    kind, and everything is "start"."""

    def __init__(self) -> None:
        self.t0 = self.since = time.monotonic()
        self.state = "start"
        self.device = ""  # "wait" or "held" while the harness waits for or holds the device (told to devicelock)
        self.seconds: dict[str, float] = {}

    def line(self, text: str) -> None:
        if self.state == "end":  # closed
            return
        what = text[len(PHASE_PREFIX):]
        if what.startswith(WAIT_PHASE):
            self._enter("wait", "wait")
        elif what.startswith("device held ("):
            self._enter(what[len("device held ("):].rstrip().rstrip(")") or "checks", "held")
        elif what.startswith(HOST_PHASE):
            self._enter("host." + (what[len(HOST_PHASE):].rstrip().rstrip(")") or "work"))

    def _enter(self, state: str, device: str = "") -> None:
        now = time.monotonic()
        self.seconds[self.state] = self.seconds.get(self.state, 0.0) + now - self.since
        self.state, self.since = state, now
        if device != self.device:  # this process's time blocked by another's hold on the device (devicelock.blocked_s)
            if device:
                (note_wait if device == "wait" else note_hold)(True)
            if self.device:
                (note_wait if self.device == "wait" else note_hold)(False)
            self.device = device

    def waited(self) -> float:
        """Seconds spent waiting for the device so far, the wait in progress included."""
        return self.seconds.get("wait", 0.0) + (time.monotonic() - self.since if self.state == "wait" else 0.0)

    def close(self) -> dict[str, float]:
        self._enter("end")
        return {k: round(v, 3) for k, v in self.seconds.items() if v > 0}


def _communicate(proc: HarnessProcess, timeout_s: float) -> tuple[str, str, bool, dict[str, float]]:
    """stdout, stderr, whether the process was killed after `timeout_s` of its own work (the time it waits for the
    device lock is not counted), and the seconds of each of its phases (`_Phases`)."""
    out: list[str] = []
    err: list[str] = []
    phases = _Phases()

    def read_err() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            err.append(line)
            if line.startswith(PHASE_PREFIX):
                phases.line(line.rstrip("\n"))

    readers = [threading.Thread(target=lambda: out.append(proc.stdout.read() if proc.stdout else ""), daemon=True),
               threading.Thread(target=read_err, daemon=True)]
    for r in readers:
        r.start()
    killed = False
    try:
        while True:
            try:
                proc.wait(timeout=0.1)
                break
            except subprocess.TimeoutExpired:
                if time.monotonic() - phases.t0 - phases.waited() > timeout_s:
                    _kill_group(proc)
                    proc.wait()
                    killed = True
                    break
        for r in readers:
            r.join()
    finally:
        seconds = phases.close()  # also on an interrupt: this process no longer waits for the device through it
    return "".join(out), "".join(err), killed, seconds


def _kill_group(proc: HarnessProcess) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def parse_result(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            try:
                obj = json.loads(line[len(RESULT_PREFIX):])
            except json.JSONDecodeError:
                return None
            return obj if isinstance(obj, dict) else None
    return None


def last_phase(stderr: str) -> str:
    for line in reversed(stderr.splitlines()):
        if line.startswith(PHASE_PREFIX):
            return line[len(PHASE_PREFIX):].strip()
    return ""


def _tail(text: str, lines: int = 12) -> str:
    keep = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith(PHASE_PREFIX)]
    return "\n".join(keep[-lines:])


def run_tool(argv: list[str], *, cwd: Path, timeout_s: float = 900.0, env: dict[str, str] | None = None) -> tuple[int, str, float]:
    """A compiler run in its own process group (killed whole on timeout): (exit status, stdout+stderr, seconds).
    A missing tool is status 127, a timeout 124."""
    from s2s.base.procs import run_group

    res = run_group(argv, cwd=cwd, timeout_s=timeout_s, env=env)
    if res.timed_out:
        return 124, f"{argv[0]}: killed after {timeout_s:g} s", res.seconds
    return res.returncode, res.output, res.seconds


# -- targets ---------------------------------------------------------------------------------------
def resolve_target(mep_dir: Path, manifest: Manifest, variant: str | None) -> Target:
    mep_dir = Path(mep_dir).resolve()
    ref = mep_dir / manifest.kernel_file
    if not ref.is_file():
        raise UserError(f"kernel_file = {manifest.kernel_file!r}: the file does not exist", file=str(mep_dir / "mep.toml"))
    if variant is None:
        return Target(mep_dir, manifest, None, ref, manifest.launch)
    if not re.fullmatch(r"[A-Za-z0-9_.\-]+", variant) or variant in (".", ".."):
        raise UserError(f"variant id {variant!r}: use letters, digits, '_', '-' and '.'", file=str(mep_dir))
    vdir = mep_dir / "variants" / variant
    vfile = vdir / manifest.kernel_file
    if not vfile.is_file():
        have = sorted(p.name for p in (mep_dir / "variants").iterdir() if p.is_dir()) if (mep_dir / "variants").is_dir() else []
        raise UserError(f"variant {variant!r}: {vfile.relative_to(mep_dir)} does not exist",
                        file=str(mep_dir), hint=f"variants here: {', '.join(have) or 'none'}")
    v = Variant.read(vdir)
    launch = manifest.launch
    if v.grid is not None or v.block is not None or v.shared_mem is not None:
        launch = LaunchSpec(grid=v.grid or launch.grid, block=v.block or launch.block,
                            shared_mem=launch.shared_mem if v.shared_mem is None else v.shared_mem, source=str(vdir / VARIANT_FILE))
    note = v.note
    return Target(mep_dir, manifest, variant, vfile, launch, note)


def list_variants(mep_dir: Path, manifest: Manifest) -> list[str]:
    vroot = Path(mep_dir) / "variants"
    if not vroot.is_dir():
        return []
    return sorted(p.name for p in vroot.iterdir() if (p / manifest.kernel_file).is_file())


# -- every check of the values in mep.toml, in one place --------------------------------------------------
def check_manifest(m: Manifest, path: Path, backend: Backend | None = None) -> None:
    """One UserError naming the first bad entry. Manifest.unfilled() must already be empty."""
    from s2s.mep.manifest import line_of

    def bad(entry: str, msg: str, needle: str, after: str = "", hint: str | None = None) -> None:
        raise UserError(f"{entry}: {msg}", file=str(path), line=line_of(path, needle, after), hint=hint)

    if not m.kernel.strip():
        bad("kernel", "empty kernel name", "kernel =")
    if backend is not None and backend.kernel_suffixes and not m.kernel_file.endswith(backend.kernel_suffixes):
        bad("kernel_file", f"{m.kernel_file!r} does not look like a {m.backend} source "
            f"({' or '.join(backend.kernel_suffixes)})", "kernel_file")
    if len(m.launch.grid) != 3 or len(m.launch.block) != 3:
        bad("launch", "grid and block need three dimensions each", "[launch]")
    if not isinstance(m.launch.shared_mem, int) or m.launch.shared_mem < 0:
        bad("launch.shared_mem", f"{m.launch.shared_mem} is negative", "shared_mem")
    runtime_local = m.backend == "opencl" and tuple(m.launch.block) == (0, 0, 0)  # a NULL local size
    if any(not isinstance(d, int) or d <= 0 for d in tuple(m.launch.grid) + (() if runtime_local else tuple(m.launch.block))):
        bad("launch", f"a zero, negative or non-integer dimension in grid {m.launch.grid} x block {m.launch.block}", "[launch]")
    threads = m.launch.block[0] * m.launch.block[1] * m.launch.block[2]
    if threads > 1024:
        bad("launch.block", f"{m.launch.block} has {threads} threads; devices allow at most 1024", "block")
    names = set()
    for p in m.params:
        if p.name in names:
            bad(f"params.{p.name}", "the name appears twice", f'"{p.name}"')
        names.add(p.name)
        _check_tolerances(p, bad)
        if p.role == "scalar":
            if isinstance(p.value, int) and not isinstance(p.value, bool):
                _check_int_range(p, bad)
            if isinstance(p.value, bool) or isinstance(p.value, (int, float)):
                continue
            if p.value == "random" or (isinstance(p.value, dict) and all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) for v in p.value.values())):
                continue
            bad(f"params.{p.name}.value", f"{p.value!r} is not a number (or \"random\" for a struct)", f'"{p.name}"')
        else:
            if not isinstance(p.count, int) or isinstance(p.count, bool):
                bad(f"params.{p.name}.count", f"{p.count!r} is not a number of elements"
                    + (f" (expression: {p.count_expr})" if p.count_expr else ""), f'"{p.name}"',
                    hint="write the element count as an integer")
            if isinstance(p.count, int) and p.fill == "null" and (p.count != 0 or m.backend == "opencl"):
                bad(f"params.{p.name}.fill", "null passes a null pointer: its count is 0 (CUDA and HIP only)", f'"{p.name}"')
            elif isinstance(p.count, int) and p.count <= 0 and p.fill != "null":
                bad(f"params.{p.name}.count", f"{p.count}: a buffer needs at least one element", f'"{p.name}"',
                    hint="set the element count of the buffer")
            if p.fill not in FILLS:
                bad(f"params.{p.name}.fill", f"{p.fill!r}: one of {', '.join(FILLS[:3])}, offsets", f'"{p.name}"')
            if p.low > p.high:
                bad(f"params.{p.name}.low", f"low = {p.low} is above high = {p.high}", f'"{p.name}"')
            if p.fill == "shuffle" and not m.capture:
                bad(f"params.{p.name}.fill", "shuffle reorders the values of captured data; this MEP has none", f'"{p.name}"',
                    hint="use uniform, or capture the kernel (s2s capture)")
            if p.fill == "index" and p.high < 1:
                bad(f"params.{p.name}.high", f"an index fill draws from [0, high): high = {p.high} leaves nothing", f'"{p.name}"')
            if p.fill == "offsets" and p.high < 1:
                bad(f"params.{p.name}.high", f"an offsets fill rises from 0 to high: high = {p.high} leaves every range empty",
                    f'"{p.name}"', hint="the count of the buffer the offsets range over")
        if p.space not in SPACES:
            bad(f"params.{p.name}.space", f"{p.space!r}: one of global, local, constant", f'"{p.name}"')
        if not str(p.elem).strip() or p.elem == FILL_IN:
            bad(f"params.{p.name}.elem", "the element type is missing", f'"{p.name}"')
    for s in m.symbols:
        if s.count <= 0:
            bad(f"symbols.{s.name}.count", f"{s.count}: a symbol needs at least one element", f'"{s.name}"')
    for st in m.structs:
        if not st.fields:
            bad(f"structs.{st.name}.fields", "no fields", f'"{st.name}"')
    # input_sets = 0: the captured sets only (the reference faulted on generated inputs); needs captured data
    for label, v, lo in (("check.input_sets", m.input_sets, 0 if m.capture else 1), ("timing.repetitions", m.repetitions, 1),
                         ("timing.warmup", m.warmup, 0)):
        if not isinstance(v, int) or v < lo:
            bad(label, f"{v!r} must be an integer >= {lo}", label.split(".")[1])
    if isinstance(m.target_s, bool) or not isinstance(m.target_s, (int, float)) or not 0 <= m.target_s < float("inf"):
        bad("timing.target_s", f"{m.target_s!r} must be a number of seconds >= 0 (0: always timing.repetitions)", "target_s")
    if not m.timeout_s or m.timeout_s <= 0:
        bad("timing.timeout_s", f"{m.timeout_s!r} must be positive", "timeout_s")
    if m.rtol < 0 or m.atol < 0:
        bad("check.rtol", "tolerances must not be negative", "rtol")


_INT_BITS = {"char": (8, True), "signed char": (8, True), "int8_t": (8, True), "unsigned char": (8, False), "uchar": (8, False),
             "uint8_t": (8, False), "short": (16, True), "int16_t": (16, True), "unsigned short": (16, False),
             "ushort": (16, False), "uint16_t": (16, False), "int": (32, True), "int32_t": (32, True), "signed": (32, True),
             "unsigned": (32, False), "unsigned int": (32, False), "uint": (32, False), "uint32_t": (32, False),
             "long": (64, True), "long long": (64, True), "int64_t": (64, True), "ptrdiff_t": (64, True),
             "unsigned long": (64, False), "unsigned long long": (64, False), "ulong": (64, False), "uint64_t": (64, False),
             "size_t": (64, False)}


def _check_int_range(p: ParamSpec, bad: Callable[..., None]) -> None:
    """An integer scalar must fit its C type: the harness would otherwise fail (or wrap) on its own."""
    elem = " ".join(re.sub(r"\b(const|volatile|std::)\b", " ", str(p.elem)).replace("std::", "").split())
    bits = _INT_BITS.get(elem)
    if bits is None:
        return
    n, signed = bits
    lo, hi = (-(1 << (n - 1)), (1 << (n - 1)) - 1) if signed else (0, (1 << n) - 1)
    if not lo <= int(p.value) <= hi:  # type: ignore[arg-type]
        bad(f"params.{p.name}.value", f"{p.value} does not fit its type {elem} ({lo} .. {hi})", f'"{p.name}"')


def _check_tolerances(p: ParamSpec, bad: Callable[..., None]) -> None:
    """A buffer's own rtol/atol: numbers >= 0, on an output (inputs are checked unchanged, scalars not at all)."""
    for key in ("rtol", "atol"):
        v = getattr(p, key)
        if v is None:
            continue
        entry, needle, after = f"params.{p.name}.{key}", f"{key} =", f'name = "{p.name}"'
        if p.role not in ("out", "inout"):
            bad(entry, f"a parameter of role {p.role} is not compared to a tolerance", needle, after,
                hint="remove it, or set it on an out or inout buffer")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v:
            bad(entry, f"{v!r} is not a number", needle, after)
        if v < 0:
            bad(entry, f"{v!r} is negative", needle, after,
                hint=f"an error bound >= 0; without one the output is held to [check] {key}")


# -- source scanning shared by the C-family backends -------------------------------------------------
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"]+)[>"]', re.M)
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)", re.M)


@dataclass(frozen=True)
class SourceScan:
    system_includes: tuple[str, ...]  # as written: "<cuda_runtime.h>", "\"cuda_fp16.h\"" (quoted but not found locally)
    local_files: tuple[Path, ...]  # quoted includes found next to the file or on the -I path
    macros: tuple[str, ...]  # every macro name #defined by the file and its local headers


def scan_source(path: Path, include_dirs: list[Path], *, depth: int = 0, seen: set[Path] | None = None) -> SourceScan:
    """#includes and #defines of a kernel file and, recursively, of the local headers it includes."""
    seen = seen if seen is not None else set()
    path = path.resolve()
    seen.add(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return SourceScan((), (), ())
    systems: list[str] = []
    locals_: list[Path] = []
    macros: list[str] = list(dict.fromkeys(_DEFINE.findall(text)))
    for kind, name in _INCLUDE.findall(text):
        if kind == "<":
            systems.append(f"<{name}>")
            continue
        found = next((d / name for d in [path.parent, *include_dirs] if (d / name).is_file()), None)
        if found is None:
            systems.append(f'"{name}"')
            continue
        locals_.append(found.resolve())
        if found.resolve() not in seen and depth < 8:
            sub = scan_source(found, include_dirs, depth=depth + 1, seen=seen)
            systems += sub.system_includes
            locals_ += sub.local_files
            macros += sub.macros
    return SourceScan(tuple(dict.fromkeys(systems)), tuple(dict.fromkeys(locals_)), tuple(dict.fromkeys(macros)))


def guarded_local_includes(path: Path, include_dirs: list[Path]) -> list[str]:
    """The kernel file's own `#include "..."` lines (as written, quotes kept) that name a header of the tree read once
    a translation unit (`#pragma once`, an include guard). The harness holds the kernel file twice, in two namespaces:
    such a header is empty the second time, so it is included once before both, its names reached from each."""
    from s2s.scan.includes import is_guarded

    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    out: list[str] = []
    for kind, name in _INCLUDE.findall(text):
        if kind != '"':
            continue
        found = next((d / name for d in [path.parent, *include_dirs] if (d / name).is_file()), None)
        try:
            if found is not None and is_guarded(found.read_bytes()):
                out.append(f'"{name}"')
        except OSError:
            continue
    return list(dict.fromkeys(out))


def include_dirs_of(flags: list[str], base: Path) -> list[Path]:
    dirs: list[Path] = []
    it = iter(flags)
    for f in it:
        if f == "-I":
            nxt = next(it, None)
            if nxt:
                dirs.append((base / nxt).resolve())
        elif f.startswith("-I"):
            dirs.append((base / f[2:]).resolve())
    return dirs


_write_lock = threading.Lock()


def write_if_changed(path: Path, text: str) -> bool:
    """Atomic write, skipped when the content is already there (parallel builds share generated files)."""
    from s2s.base.fsutil import atomic_write

    with _write_lock:
        try:
            if path.read_text(encoding="utf-8") == text:
                return False
        except OSError:
            pass
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, text.encode("utf-8"))
        return True
