"""The OpenCL harness: build the reference and a variant with pyopencl, check the variant against the
reference on several input sets, time both in alternation, print one line `S2S_RESULT {json}`.

Run as a child process (so that a hanging kernel can be killed):
    python -m s2s.mep.backends.opencl_runner MEP_DIR [--variant ID] [--no-time] [--build-only] ...
It imports nothing from s2s but its type table (opencl_types.py beside it): `s2s run` copies both into the
MEP (as harness_opencl.py and opencl_types.py), where they run by hand with Python 3.11+ (or tomli), numpy
and pyopencl.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:  # as s2s.mep.backends.opencl_runner
    from .opencl_types import Types, probe_tail, size_scalars
except ImportError:  # as harness_opencl.py in an MEP, beside its copy of opencl_types.py
    from opencl_types import Types, probe_tail, size_scalars  # type: ignore[no-redef]

GUARD = 256
GUARD_BYTE = 0xA5
GUARD_BYTE2 = 0x5A  # the bounds probe: what lies past a buffer, changed
POISON = 0xFF  # outputs before the first run of each kernel on an input set
POISON2 = 0x00  # ... and before the second: an element is unwritten only when it kept both
FILL_MODES = ("uniform", "index", "zeros", "random-struct", "offsets", "shuffle")


class Failure(Exception):
    def __init__(self, verdict: str, message: str, input_error: bool = False) -> None:
        super().__init__(message)
        self.verdict = verdict
        self.message = message
        self.input_error = input_error


def phase(what: str) -> None:
    print(f"S2S_PHASE {what}", file=sys.stderr, flush=True)


def host_phase(what: str) -> None:
    """The host's own work (setup, input fills, comparisons), said only where the device lock is in use, like the holds."""
    if os.environ.get("S2S_HARNESS_LOCK", ""):
        phase(f"host work ({what})")


@contextmanager
def device_held(exclusive: bool, what: str) -> Iterator[None]:
    """The device lock of s2s/base/devicelock.py, where $S2S_HARNESS_LOCK names it (this file cannot import s2s):
    checks shared with other evaluations, the timing exclusive, through the turnstile PATH.turn."""
    path = os.environ.get("S2S_HARNESS_LOCK", "")
    if not path:
        yield
        return
    import fcntl

    with open(path, "a+") as fh, open(f"{path}.turn", "a+") as turn:
        phase(f"waiting for the device ({what})")
        fcntl.flock(turn.fileno(), fcntl.LOCK_EX)
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        fcntl.flock(turn.fileno(), fcntl.LOCK_UN)
        phase(f"device held ({what})")
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
            phase(f"host work ({what})")


# -- mep.toml ---------------------------------------------------------------------------------------
def load_toml(path: Path) -> dict[str, Any]:
    try:
        import tomllib as toml
    except ModuleNotFoundError:  # Python 3.10
        import tomli as toml  # type: ignore[no-redef]
    return dict(toml.loads(path.read_text(encoding="utf-8")))


@dataclass
class Config:
    mep: Path
    kernel: str
    kernel_file: str
    flags: list[str]
    params: list[dict[str, Any]]
    structs: list[dict[str, Any]]
    grid: tuple[int, ...]
    block: tuple[int, ...]
    var_grid: tuple[int, ...]
    var_block: tuple[int, ...]
    rtol: float  # [check]'s: the outputs without their own
    atol: float
    input_sets: int
    seed: int
    reps: int  # the most timed pairs
    warmup: int  # the most warm-up pairs
    variant: str | None
    variant_file: Path
    note: str = ""
    capture: dict[str, Any] = field(default_factory=dict)  # [capture] of mep.toml: the data of a real run
    force_rtol: float | None = None  # --rtol/--atol: every output held to them
    force_atol: float | None = None
    target_s: float = 0.5  # [timing] target_s: device seconds the timed pairs aim at (timing_plan); 0: always `reps`
    var_local: dict[str, int] = field(default_factory=dict)  # variant.json local_counts: __local sizes for the variant's block

    def tolerance(self, p: dict[str, Any]) -> tuple[float, float]:
        """(rtol, atol) that buffer `p` is checked with: --rtol/--atol, else its own in mep.toml, else [check]'s."""
        rtol = self.force_rtol if self.force_rtol is not None else float(p.get("rtol", self.rtol))
        atol = self.force_atol if self.force_atol is not None else float(p.get("atol", self.atol))
        return rtol, atol


def load_config(mep: Path, variant: str | None) -> Config:
    raw = load_toml(mep / "mep.toml")
    launch = raw.get("launch", {})
    check = raw.get("check", {})
    timing = raw.get("timing", {})
    grid = tuple(int(x) for x in launch.get("grid", (1, 1, 1)))
    block = tuple(int(x) for x in launch.get("block", (0, 0, 0)))
    vgrid, vblock, note = grid, block, ""
    vlocal: dict[str, int] = {}
    vfile = mep / raw["kernel_file"]
    if variant:
        vdir = mep / "variants" / variant
        vfile = vdir / raw["kernel_file"]
        vj = vdir / "variant.json"
        if vj.is_file():
            v = json.loads(vj.read_text(encoding="utf-8"))
            vgrid = tuple(int(x) for x in (list(v.get("grid", grid)) + [1, 1])[:3])
            vblock = tuple(int(x) for x in (list(v.get("block", block)) + [1, 1])[:3]) if "block" in v else block
            note = str(v.get("note", ""))
            vlocal = {str(k): int(n) for k, n in dict(v.get("local_counts") or {}).items()}
    return Config(mep=mep, kernel=str(raw["kernel"]).split("::")[-1], kernel_file=raw["kernel_file"],
                  flags=[str(f) for f in raw.get("flags", [])], params=list(raw.get("params", [])),
                  structs=list(raw.get("structs", [])), grid=grid, block=block, var_grid=vgrid, var_block=vblock, var_local=vlocal,
                  rtol=float(check.get("rtol", 1e-3)), atol=float(check.get("atol", 1e-4)),
                  input_sets=int(check.get("input_sets", 3)), seed=int(check.get("seed", 1234)),
                  reps=int(timing.get("repetitions", 30)), warmup=int(timing.get("warmup", 3)),
                  variant=variant, variant_file=vfile, note=note, capture=dict(raw.get("capture", {})),
                  target_s=float(timing.get("target_s", 0.5)))


def components(arr: Any) -> list[tuple[Any, bool]]:
    """Every scalar component of a (possibly structured) 1-D array: (2-D array count x k, is_integer)."""
    np = sys.modules["numpy"]
    dt = arr.dtype
    if dt.names:
        out = []
        for name in dt.names:
            out += components(arr[name].reshape(arr.shape[0], -1) if arr[name].ndim > 1 and arr[name].dtype.names is None
                              else arr[name])
        return out
    if dt.subdtype is not None:
        return components(arr.reshape(arr.shape[0], -1))
    a2 = arr.reshape(arr.shape[0], -1)
    return [(a2, bool(np.issubdtype(dt, np.integer) or dt == np.bool_))]


# -- random inputs ---------------------------------------------------------------------------------
def fill(dtype: Any, count: int, seed: int, stream: int, mode: str, low: float, high: float) -> Any:
    np = sys.modules["numpy"]
    arr = np.zeros(count, dtype=dtype)
    if mode == "zeros":
        return arr
    rng = np.random.default_rng([seed, stream])
    if mode == "offsets" and np.issubdtype(arr.dtype, np.integer) and count > 1:
        arr[:] = offsets(rng.integers(0, 2**62, size=count, dtype=np.int64), high).astype(arr.dtype)
        return arr
    _fill_into(arr, rng, mode, low, high)
    return arr


def offsets(draws: Any, high: float) -> Any:
    """Row pointers from one random draw per element: element i is i * step + u_i, u_i in [0, step] (0 at both ends),
    step = floor(high / (count - 1)), so the sequence never falls, starts at 0, ends at most at `high`, and the
    ranges between neighbours run from empty to twice the mean length (as the CUDA harness's fill_bytes does)."""
    np = sys.modules["numpy"]
    n = len(draws)
    step = int(high) // (n - 1)
    u = (draws.astype(np.uint64) % np.uint64(step + 1)).astype(np.int64)
    u[0] = u[-1] = 0
    return np.arange(n, dtype=np.int64) * step + u


def _fill_into(view: Any, rng: Any, mode: str, low: float, high: float) -> None:
    np = sys.modules["numpy"]
    dt = view.dtype
    if dt.names:
        for name in dt.names:
            _fill_into(view[name], rng, mode, low, high)
        return
    if dt.subdtype is not None:
        _fill_into(view.reshape(-1), rng, mode, low, high)
        return
    shape = view.shape
    if np.issubdtype(dt, np.floating):
        a, b = (0.0, high) if mode == "index" else (low, high)
        view[...] = rng.uniform(a, b, size=shape).astype(dt)
    else:
        lo = 0 if mode == "index" else math.ceil(low)
        hi = (math.ceil(high) - 1) if mode == "index" else math.floor(high)
        if np.issubdtype(dt, np.unsignedinteger) or dt == np.bool_:
            lo = max(lo, 0)
        hi = max(hi, lo)
        view[...] = rng.integers(lo, hi + 1, size=shape, dtype=np.int64).astype(dt)


# -- comparison ------------------------------------------------------------------------------------
@dataclass
class Check:
    name: str
    role: str
    ok: bool = True
    max_abs: float = 0.0
    max_rel: float = 0.0
    unwritten: int = 0
    first_bad: int = -1
    message: str = ""
    rtol: float = 0.0  # what the buffer was held to (an input is held unchanged: no tolerance)
    atol: float = 0.0

    def fail(self, message: str, at: int) -> None:
        if self.ok:
            self.message, self.first_bad = message, int(at)
        self.ok = False

    def json(self) -> dict[str, Any]:
        return {"name": self.name, "role": self.role, "ok": self.ok, "max_abs_err": _jnum(self.max_abs),
                "max_rel_err": _jnum(self.max_rel), "unwritten": self.unwritten, "first_bad": self.first_bad,
                "rtol": None if self.role == "in" else self.rtol, "atol": None if self.role == "in" else self.atol,
                "message": self.message}


def _jnum(v: float) -> Any:
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return float(v)


def _fmt(v: float) -> str:
    return f"{v:.7g}"


def written_mask(first: bytes, second: bytes, dtype: Any, count: int, fill1: bytes | None = None) -> Any:
    """Elements a kernel wrote: those that did not keep their fill in both runs (first over POISON, or over
    `fill1` where given; second over POISON2). A value equal to a poison is still known to be written."""
    np = sys.modules["numpy"]
    isz = dtype.itemsize
    a = np.frombuffer(first, dtype=np.uint8).reshape(count, isz)
    b = np.frombuffer(second, dtype=np.uint8).reshape(count, isz)
    kept1 = np.all(a == POISON, axis=1) if fill1 is None else np.all(a == np.frombuffer(fill1, dtype=np.uint8).reshape(count, isz), axis=1)
    return ~(kept1 & np.all(b == POISON2, axis=1))


def kept_poison(first: bytes, dtype: Any, count: int) -> bool:
    """Whether some element kept POISON in all its bytes: only then does the second run (over POISON2) tell a written
    all-0xFF value from an element left alone; otherwise every element was written and one run says so."""
    np = sys.modules["numpy"]
    return bool(np.all(np.frombuffer(first, dtype=np.uint8).reshape(count, dtype.itemsize) == POISON, axis=1).any())


def stale_fill(prev: bytes, dtype: Any, count: int) -> bytes:
    """What the variant's first run finds in a stale set: the reference's previous results, except where those are
    all POISON2 bytes (a 0.0, a 0). There the first fill would equal the second run's and a written zero could not be
    told from an element left alone (an exclusive scan's first column, an empty CSR row), so POISON goes there."""
    np = sys.modules["numpy"]
    a = np.frombuffer(prev, dtype=np.uint8).reshape(count, dtype.itemsize).copy()
    a[np.all(a == POISON2, axis=1)] = POISON
    return bytes(a.tobytes())


def compare(c: Check, where: str, dtype: Any, ref: bytes, var: bytes, count: int, rtol: float, atol: float,
            written: Any = None, var_written: Any = None) -> None:
    """Hold `var` to `ref` on the elements the reference wrote (`written`; None: all). With `var_written`, an
    element the reference wrote and the variant did not fails, and so does one the variant wrote and the
    reference did not."""
    np = sys.modules["numpy"]
    if written is None:
        written = np.ones(count, dtype=bool)
    if var_written is not None:
        extra = var_written & ~written
        if extra.any():
            i = int(np.argmax(extra))
            c.fail(f"{where}the variant wrote {int(extra.sum())} element(s) the reference leaves untouched (first at index {i})", i)
    if not written.any():
        return
    unwritten = (written & ~var_written) if var_written is not None else np.zeros(count, dtype=bool)
    mask = written & ~unwritten
    ra = np.frombuffer(ref, dtype=dtype)
    va = np.frombuffer(var, dtype=dtype)
    rcomp, vcomp = components(ra), components(va)
    maxref = 0.0
    for r, is_int in rcomp:
        if is_int:
            continue  # atol is relative to the largest floating-point value
        rw = r[written].astype(np.float64)
        fin = rw[np.isfinite(rw)]
        if fin.size:
            maxref = max(maxref, float(np.max(np.abs(fin))))
    abs_tol = atol * maxref
    bad = np.zeros(count, dtype=bool)
    nan_bad = np.zeros(count, dtype=bool)
    first_vals: tuple[float, float] | None = None
    rvals, vvals = [], []
    for (r, is_int), (v, _) in zip(rcomp, vcomp):
        if is_int:
            diff = (r != v).any(axis=1) & mask
            if diff.any():
                c.max_abs = max(c.max_abs, float(np.max(np.abs(r[mask].astype(np.float64) - v[mask].astype(np.float64)))))
            bad |= diff
            rvals.append(r[mask].astype(np.float64).ravel())
            vvals.append(v[mask].astype(np.float64).ravel())
            continue
        r64, v64 = r.astype(np.float64), v.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            rfin, vfin = np.isfinite(r64), np.isfinite(v64)
            nonfin_ref_bad = (~rfin) & ~((np.isnan(r64) & np.isnan(v64)) | (r64 == v64))
            nan_here = rfin & ~vfin
            err = np.where(rfin & vfin, np.abs(v64 - r64), 0.0)
            tol = rtol * np.abs(np.where(rfin, r64, 0.0)) + abs_tol
            over = (rfin & vfin) & (err > tol)
            denom = np.maximum(np.maximum(np.abs(np.where(rfin, r64, 0.0)), abs_tol), 1e-300)
            rel = err / denom
        m2 = mask[:, None] & np.ones_like(rfin)
        if (m2 & rfin & vfin).any():
            c.max_abs = max(c.max_abs, float(np.max(err[m2])))
            c.max_rel = max(c.max_rel, float(np.max(rel[m2])))
        bad |= ((over | nonfin_ref_bad) & m2).any(axis=1)
        nan_bad |= (nan_here & m2).any(axis=1)
        rvals.append(r64[mask].ravel())
        vvals.append(v64[mask].ravel())
        if first_vals is None and ((over | nonfin_ref_bad) & m2).any():
            idx = int(np.argmax(((over | nonfin_ref_bad) & m2).any(axis=1)))
            k = int(np.argmax(((over | nonfin_ref_bad) & m2)[idx]))
            first_vals = (float(r64[idx, k]), float(v64[idx, k]))
    nun = int(unwritten.sum())
    c.unwritten = max(c.unwritten, nun)  # the worst input set
    if nun:
        i = int(np.argmax(unwritten))
        c.fail(f"{where}{nun} element(s) the reference writes were left unwritten (first at index {i})", i)
    if nan_bad.any():
        i = int(np.argmax(nan_bad))
        c.fail(f"{where}NaN/Inf in {int(nan_bad.sum())} element(s) where the reference is finite (first at index {i})", i)
    if rvals:
        rall, vall = np.concatenate(rvals), np.concatenate(vvals)
        if vall.size and rall.size:
            with np.errstate(invalid="ignore"):
                vconst = bool(np.all((vall == vall[0]) | (np.isnan(vall) & np.isnan(vall[0]))))
                rconst = bool(np.all((rall == rall[0]) | (np.isnan(rall) & np.isnan(rall[0]))))
            if vconst and not rconst:
                what = "all zero" if vall[0] == 0 else f"constant ({_fmt(float(vall[0]))})"
                c.fail(f"{where}output is {what} where the reference's is not", 0)
    if bad.any():
        i = int(np.argmax(bad))
        rv, vv = first_vals if first_vals else (float("nan"), float("nan"))
        if first_vals is None:  # an integer component
            for (r, is_int), (v, _) in zip(rcomp, vcomp):
                if is_int and (r[i] != v[i]).any():
                    k = int(np.argmax(r[i] != v[i]))
                    rv, vv = float(r[i, k]), float(v[i, k])
                    break
        c.fail(f"{where}{int(bad.sum())} value(s) differ beyond tolerance (first at index {i}: reference {_fmt(rv)}, "
               f"variant {_fmt(vv)}; max abs err {_fmt(c.max_abs)}, max rel err {_fmt(c.max_rel)})", i)


# -- the run ---------------------------------------------------------------------------------------
def select_device(cl: Any, want: str = "") -> tuple[Any, Any]:
    """The first device, on any platform, that builds a trivial program (some ICDs are listed but broken)."""
    errors = []
    for platform in cl.get_platforms():
        try:
            devices = platform.get_devices()
        except cl.Error as exc:
            errors.append(f"{platform.name}: {exc}")
            continue
        for dev in devices:
            label = f"{platform.name} / {dev.name}"
            if want and want.lower() not in label.lower():
                continue
            try:
                ctx = cl.Context([dev])
                cl.Program(ctx, "__kernel void s2s_probe(__global int* a) { a[0] = 1; }").build()
                return ctx, dev
            except Exception as exc:  # noqa: BLE001 - a broken ICD raises anything
                errors.append(f"{label}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
    raise Failure("runtime-failed", "no working OpenCL device" + (f" matching {want!r}" if want else "")
                  + (": " + "; ".join(errors) if errors else ""))


@dataclass
class Buf:
    spec: dict[str, Any]
    index: int
    dtype: Any
    count: int
    base: Any = None
    data: Any = None
    saved: Any = None
    init: Any = None
    ref_after: bytes = b""  # over POISON
    ref_after2: bytes = b""  # over POISON2
    var_after: bytes = b""
    var_after2: bytes = b""
    prev_ref: bytes = b""  # the reference's output of the previous input set, as stale_fill gives it
    front: int = GUARD

    @property
    def name(self) -> str:
        return str(self.spec["name"])

    @property
    def role(self) -> str:
        return str(self.spec.get("role", "in"))

    @property
    def nbytes(self) -> int:
        return self.count * self.dtype.itemsize


@dataclass
class Captured:
    label: str
    before: dict[int, Any] = field(default_factory=dict)  # parameter index -> array
    after: dict[int, Any] = field(default_factory=dict)


@dataclass
class Run:
    cfg: Config
    cl: Any
    np: Any
    ctx: Any = None
    dev: Any = None
    queue: Any = None
    device: str = "?"
    bufs: list[Buf] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    ref_kernel: Any = None
    var_kernel: Any = None
    types: Any = None
    build_seconds: float = 0.0
    scalar_types: dict[int, Any] = field(default_factory=dict)
    scalar_override: dict[int, int] = field(default_factory=dict)  # the smaller size's set: index -> value
    probe: dict[str, str] | None = None  # the bounds probe's outcome (state: clean | fault | skipped, message)
    shuffle_source: Captured | None = None  # the first captured set, where there is one (the "shuffle" fill)
    ref_cache: Path | None = None  # --ref-cache: the reference's outputs per input set, kept across runs (load_reference)
    ref_read: int = 0
    ref_written: int = 0
    ref_check_us: float | None = None  # the shortest reference launch of the checks, for the caller

    # -- build ----
    def build(self, want_device: str = "") -> None:
        cl = self.cl
        self.ctx, self.dev = select_device(cl, want_device)
        self.device = f"{self.dev.name.strip()} ({self.dev.platform.name.strip()})"
        self.queue = cl.CommandQueue(self.ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
        ref_src = (self.cfg.mep / self.cfg.kernel_file).read_text(encoding="utf-8", errors="replace")
        self.types = Types(self.cfg.flags, self.cfg.structs, ref_src)
        opts = [*self.cfg.flags, *_include(self.cfg.mep)]
        t0 = time.monotonic()
        phase("building the reference")
        ref_prg = self._program(ref_src, [*opts, "-cl-kernel-arg-info"], reference=True)
        self.ref_kernel = self._kernel(ref_prg, reference=True)
        if self.cfg.variant is None:
            var_src = ref_src
        else:
            try:
                var_src = self.cfg.variant_file.read_text(encoding="utf-8", errors="replace")
            except OSError as exc:
                raise Failure("compile-failed", f"cannot read the variant: {exc}") from None
        phase("building the variant")
        var_prg = self._program(var_src, [*opts, *_include(self.cfg.variant_file.parent)], reference=False)
        self.var_kernel = self._kernel(var_prg, reference=False)
        self.build_seconds = time.monotonic() - t0
        self._check_signature()

    def _program(self, src: str, opts: list[str], reference: bool) -> Any:
        """Build `src`; the options reach clBuildProgram as one string split at spaces (pyopencl joins them, and
        PoCL honours no quotes), so a directory is given as `_include` spells it."""
        cl = self.cl
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return cl.Program(self.ctx, src).build(options=opts)
        except cl.Error as exc:
            # PoCL names the source by its cache's copy: under kcache/ by default, under $POCL_CACHE_DIR when set
            cache = os.environ.get("POCL_CACHE_DIR", "").rstrip("/")
            where = r"\S*kcache/\S*?\.cl" + (rf"|{re.escape(cache)}/\S*?\.cl" if cache else "")
            log = [re.sub(where, self.cfg.kernel_file if reference else
                          str(self.cfg.variant_file.relative_to(self.cfg.mep)), ln) for ln in _build_log(str(exc))]
            if reference:
                raise Failure("compile-failed", f"{self.cfg.kernel_file}: the reference does not compile: "
                              + (log[0] if log else str(exc).splitlines()[0]), input_error=True) from None
            raise Failure("compile-failed", "the variant does not compile:\n" + "\n".join(log[:25])) from None

    def _kernel(self, prg: Any, reference: bool) -> Any:
        cl = self.cl
        try:
            return cl.Kernel(prg, self.cfg.kernel)
        except cl.Error:
            names = [k.function_name for k in prg.all_kernels()]
            if reference:
                raise Failure("compile-failed", f"kernel = {self.cfg.kernel!r}: no such kernel in {self.cfg.kernel_file} "
                              f"(kernels: {', '.join(names) or 'none'})", input_error=True) from None
            raise Failure("compile-failed", f"the variant has no kernel named {self.cfg.kernel!r} "
                          f"(kernels: {', '.join(names) or 'none'})") from None

    def _check_signature(self) -> None:
        cl = self.cl
        n = len(self.cfg.params)
        if self.ref_kernel.num_args != n:
            raise Failure("compile-failed", f"params: the kernel takes {self.ref_kernel.num_args} arguments, mep.toml lists {n}",
                          input_error=True)
        if self.var_kernel.num_args != n:
            raise Failure("compile-failed", f"the variant's kernel takes {self.var_kernel.num_args} arguments, the reference's {n}")
        aq = cl.kernel_arg_address_qualifier
        for i, p in enumerate(self.cfg.params):
            name = p["name"]
            try:
                q = self.ref_kernel.get_arg_info(i, cl.kernel_arg_info.ADDRESS_QUALIFIER)
                tname = str(self.ref_kernel.get_arg_info(i, cl.kernel_arg_info.TYPE_NAME))
            except cl.Error:
                return  # no argument information from this implementation
            is_ptr = tname.endswith("*")
            if p.get("role") == "scalar" and is_ptr:
                raise Failure("compile-failed", f"params.{name}.role: scalar, but the kernel's argument {i} is {tname}", True)
            if p.get("role") != "scalar" and not is_ptr:
                raise Failure("compile-failed", f"params.{name}.role: {p.get('role')}, but the kernel's argument {i} is {tname}", True)
            if p.get("role") != "scalar" and q == aq.LOCAL and p.get("space") != "local":
                raise Failure("compile-failed", f"params.{name}.space: the kernel's argument {i} is __local; set space = \"local\"", True)
            try:
                declared, _ = self.types.resolve(tname.rstrip("*"))
                mine, _ = self.types.resolve(str(p.get("elem", "")))
                if declared.itemsize != mine.itemsize:
                    raise Failure("compile-failed", f"params.{name}.elem = {p.get('elem')!r} ({mine.itemsize} bytes) differs from "
                                  f"the kernel's {tname} ({declared.itemsize} bytes)", True)
            except KeyError:
                pass

    # -- buffers ----
    def allocate(self) -> None:
        cl, np = self.cl, self.np
        align = max(1, int(self.dev.mem_base_addr_align) // 8)
        front = max(GUARD, align)
        for i, p in enumerate(self.cfg.params):
            name = p["name"]
            try:
                dtype, _ = self.types.resolve(str(p.get("elem", "")))
            except KeyError:
                raise Failure("runtime-failed", f"params.{name}.elem = {p.get('elem')!r}: not a type the OpenCL harness knows "
                              "(a primitive, a vector type, a [[structs]] entry, or an alias given by -D or typedef)",
                              input_error=True) from None
            if p.get("role") == "scalar":
                self.scalar_types[i] = dtype
                continue
            count = int(p.get("count", 0))
            if count <= 0:
                raise Failure("runtime-failed", f"params.{name}.count = {count}: a buffer needs at least one element", True)
            b = Buf(spec=p, index=i, dtype=dtype, count=count, front=front)
            if p.get("space") == "local":
                self.bufs.append(b)
                continue
            total = front + b.nbytes + GUARD
            if total > int(self.dev.max_mem_alloc_size):
                raise Failure("runtime-failed", f"params.{name}.count = {count}: {b.nbytes >> 20} MiB exceed the device's "
                              f"largest allocation ({int(self.dev.max_mem_alloc_size) >> 20} MiB)", True)
            b.base = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, total)
            cl.enqueue_fill_buffer(self.queue, b.base, np.uint8(GUARD_BYTE), 0, total)
            b.data = b.base.get_sub_region(front, b.nbytes)
            if b.role != "out":
                b.init = np.zeros(count, dtype=dtype)
            self.bufs.append(b)
            rtol, atol = self.cfg.tolerance(p)
            self.checks.append(Check(name, b.role, rtol=rtol, atol=atol))
        self.queue.finish()

    def check_of(self, b: Buf) -> Check:
        return next(c for c in self.checks if c.name == b.name)

    def guard_violation(self, b: Buf) -> str:
        cl, np = self.cl, self.np
        lo = np.empty(b.front, dtype=np.uint8)
        hi = np.empty(GUARD, dtype=np.uint8)
        cl.enqueue_copy(self.queue, lo, b.base, src_offset=0)
        cl.enqueue_copy(self.queue, hi, b.base, src_offset=b.front + b.nbytes)
        self.queue.finish()
        nlo, nhi = int((lo != GUARD_BYTE).sum()), int((hi != GUARD_BYTE).sum())
        if not nlo and not nhi:
            return ""
        cl.enqueue_fill_buffer(self.queue, b.base, np.uint8(GUARD_BYTE), 0, b.front)
        cl.enqueue_fill_buffer(self.queue, b.base, np.uint8(GUARD_BYTE), b.front + b.nbytes, GUARD)
        self.queue.finish()
        parts = []
        if nhi:
            parts.append(f"wrote {nhi} byte(s) past the end of the buffer ({b.count} elements)")
        if nlo:
            parts.append(f"wrote {nlo} byte(s) before its start")
        return "; ".join(parts)

    def fill_set(self, seed: int, captured: Captured | None = None) -> None:
        host_phase("inputs")
        for b in self.bufs:
            if b.base is None or b.role == "out":
                continue
            if captured is not None:
                b.init = captured.before[b.index].copy()
                continue
            p = b.spec
            source = self.shuffle_source.before.get(b.index) if self.shuffle_source is not None else None
            if p.get("fill") == "shuffle" and source is not None and len(source) == b.count:
                # the application's own values in an order drawn from the seed (the CUDA harness's FILL_SHUFFLE): one
                # permutation for every buffer of one length, so values valid together (start and end) stay together
                b.init = source[self.np.random.default_rng([seed, 0x5EED]).permutation(b.count)].copy()
                continue
            b.init = fill(b.dtype, b.count, seed, b.index, str(p.get("fill", "uniform")), float(p.get("low", -1.0)),
                          float(p.get("high", 1.0)))

    def reset(self, poison: int = POISON) -> None:
        cl, np = self.cl, self.np
        for b in self.bufs:
            if b.base is None:
                continue
            if b.role == "out":
                cl.enqueue_fill_buffer(self.queue, b.data, np.uint8(poison), 0, b.nbytes)
            else:
                cl.enqueue_copy(self.queue, b.data, b.init)
        self.queue.finish()

    def set_args(self, kernel: Any, seed: int, reference: bool = True) -> None:
        cl, np = self.cl, self.np
        bufs = {b.index: b for b in self.bufs}
        for i, p in enumerate(self.cfg.params):
            if i in bufs:
                b = bufs[i]
                local = b.nbytes if reference or b.name not in self.cfg.var_local else self.cfg.var_local[b.name] * b.dtype.itemsize
                kernel.set_arg(i, cl.LocalMemory(local) if b.base is None else b.data)
                continue
            dtype = self.scalar_types[i]
            value = self.scalar_override.get(i, p.get("value", 0))
            if value == "random" or isinstance(value, dict):
                arr = fill(dtype, 1, seed, 1000 + i, "uniform", float(p.get("low", -1.0)), float(p.get("high", 1.0)))
                for field_name, field_value in (value.items() if isinstance(value, dict) else ()):
                    if dtype.names and field_name in dtype.names:
                        arr[0][field_name] = field_value
            else:
                arr = np.zeros(1, dtype=dtype)
                if dtype.names:
                    raise Failure("runtime-failed", f"params.{p['name']}.value = {value!r}: a struct is filled with \"random\"", True)
                arr[0] = value
            kernel.set_arg(i, arr[0])

    def sizes(self, grid: tuple[int, ...], block: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
        dims = 3 if grid[2] > 1 or (len(block) > 2 and block[2] > 1) else 2 if grid[1] > 1 or (len(block) > 1 and block[1] > 1) else 1
        g = tuple(int(x) for x in grid[:dims])
        local = None if not any(block) else tuple(int(x) for x in block[:dims])
        return g, local

    def launch(self, kernel: Any, reference: bool, seed: int, when: str) -> Any:
        cl = self.cl
        phase(f"{'reference' if reference else 'variant'} kernel, {when}")
        grid, block = (self.cfg.grid, self.cfg.block) if reference else (self.cfg.var_grid, self.cfg.var_block)
        g, lsz = self.sizes(grid, block)
        try:
            self.set_args(kernel, seed, reference)
            t0 = time.perf_counter()
            ev = cl.enqueue_nd_range_kernel(self.queue, kernel, g, lsz)
            ev.wait()
            if reference and not self.scalar_override:  # the shortest reference launch, for the caller (a long one's
                us = (time.perf_counter() - t0) * 1e6   # outputs are kept across evaluations: reference_cache.py)
                self.ref_check_us = us if self.ref_check_us is None else min(self.ref_check_us, us)
            return ev
        except cl.Error as exc:
            msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            if reference:
                raise Failure("runtime-failed", f"launch: the reference kernel failed ({when}): {msg}; check launch.grid "
                              f"{tuple(grid)} and launch.block {tuple(block)} in mep.toml", True) from None
            raise Failure("runtime-failed", f"the variant kernel failed ({when}): {msg}") from None

    def download(self, b: Buf) -> bytes:
        out = self.np.empty(b.nbytes, dtype=self.np.uint8)
        self.cl.enqueue_copy(self.queue, out, b.data)
        self.queue.finish()
        return out.tobytes()

    # -- captured data (s2s capture) ----
    def load_captured(self, first_only: bool = False) -> list[Captured]:
        """The replayed launches of [capture] in mep.toml, each buffer's contents before and after (`first_only`: the
        first of them alone, for the timing)."""
        np = self.np
        cap = self.cfg.capture
        index_path = self.cfg.mep / str(cap.get("index", "capture/index.json"))
        try:
            index = json.loads(index_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise Failure("runtime-failed", f"capture.index: cannot read {index_path}: {exc}", True) from None
        wanted = {int(x) for x in cap.get("sets", [])}
        out = []
        for entry in index.get("sets", []):
            if wanted and int(entry.get("launch", 0)) not in wanted:
                continue
            if not entry.get("replayed", True):
                continue
            c = Captured(label=f"captured input set (launch {entry.get('launch')} of the application, {entry.get('site', '?')})")
            for b in self.bufs:
                if b.base is None:
                    continue
                info = entry.get("params", {}).get(b.name)
                if not info or info.get("kind") != "buffer":
                    raise Failure("runtime-failed", f"params.{b.name}: no captured data for this buffer in {index_path.name}", True)
                arrays = []
                for key in ("before", "after"):
                    path = self.cfg.mep / str(info[key])
                    try:
                        raw = np.load(path, allow_pickle=False).tobytes()
                    except (OSError, ValueError) as exc:
                        raise Failure("runtime-failed", f"params.{b.name}: cannot read the captured {path}: {exc}", True) from None
                    if len(raw) != b.nbytes:
                        raise Failure("runtime-failed", f"params.{b.name}.count = {b.count}, but the captured buffer "
                                      f"{info[key]} holds {len(raw) // b.dtype.itemsize} elements of {b.dtype.itemsize} "
                                      "bytes", True)
                    arrays.append(np.frombuffer(raw, dtype=b.dtype).copy())
                c.before[b.index], c.after[b.index] = arrays
            out.append(c)
            if first_only:
                break
        if not out:
            raise Failure("runtime-failed", f"capture.sets: no replayable launch in {index_path}", True)
        return out

    def reproduce(self, c: Captured, key: str = "") -> None:
        """The reference on the captured inputs must give the captured outputs (every buffer, as the real
        run left it); otherwise the MEP is not the application's kernel and nothing it says can be trusted.
        With --ref-cache, once per captured set (`key`) over all runs."""
        mark = self.ref_cache / f"{key}.reproduced" if self.ref_cache is not None and key else None
        if mark is not None and mark.exists():
            return
        cl = self.cl
        for b in self.bufs:
            if b.base is not None:
                cl.enqueue_copy(self.queue, b.data, c.before[b.index])
        self.queue.finish()
        self.launch(self.ref_kernel, True, self.cfg.seed, c.label)
        bad = []
        for b in self.bufs:
            if b.base is None:
                continue
            got = self.download(b)
            chk = Check(b.name, b.role)
            compare(chk, "", b.dtype, c.after[b.index].tobytes(), got, b.count, *self.cfg.tolerance(b.spec))
            if not chk.ok:
                bad.append(f"params.{b.name}: " + chk.message.replace("reference ", "application ").replace("variant ", "MEP "))
        if bad:
            raise Failure("runtime-failed", f"capture: the reference kernel on the {c.label} does not reproduce the "
                          f"outputs the application produced: {'; '.join(bad)}; the MEP does not reproduce the real run "
                          "(check kernel_file, flags, the counts and the launch in mep.toml) and must not be optimized",
                          True)
        self.messages.append(f"the reference reproduces the application's outputs on the {c.label}")
        if mark is not None:
            mark.touch()

    # -- the reference's outputs of an input set, kept across runs (--ref-cache DIR; the CUDA harness's same) ----
    # After a set's reference runs, DIR/<key>.bin holds its outputs (and its second run's, over POISON2: which elements
    # it writes); a later check of the same set reads them instead of launching the reference. A file that does not
    # match the buffers is ignored.
    def load_reference(self, key: str) -> bool | None:
        """Each buffer's ref_after (and ref_after2) from the kept file of `key`: whether the reference ran twice, or
        None when nothing usable is kept."""
        if self.ref_cache is None or not key:
            return None
        try:
            with open(self.ref_cache / f"{key}.bin", "rb") as fh:
                meta = json.loads(fh.readline())
                bufs = [b for b in self.bufs if b.base is not None]
                if meta.get("v") != 1 or [tuple(x[:2]) for x in meta["bufs"]] != [(b.index, b.nbytes) for b in bufs]:
                    return None
                got = [(b, fh.read(n), fh.read(n) if has2 else b"") for b, (_i, n, has2) in zip(bufs, meta["bufs"])]
                if any(len(first) != b.nbytes or (has2 and len(second) != b.nbytes)
                       for (b, first, second), (_i, _n, has2) in zip(got, meta["bufs"])) or fh.read(1):
                    return None
        except (OSError, ValueError, KeyError, TypeError):
            return None
        host_phase("reference outputs")
        for b, first, second in got:
            b.ref_after, b.ref_after2 = first, second
        self.ref_read += 1
        return bool(meta.get("twice"))

    def store_reference(self, key: str, twice: bool) -> None:
        if self.ref_cache is None or not key:
            return
        host_phase("reference outputs")
        bufs = [b for b in self.bufs if b.base is not None]
        has2 = [twice and len(b.ref_after2) == b.nbytes for b in bufs]
        head = json.dumps({"v": 1, "twice": twice, "bufs": [[b.index, b.nbytes, h] for b, h in zip(bufs, has2)]}).encode()
        path = self.ref_cache / f"{key}.bin"
        tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
        try:
            with open(tmp, "wb") as fh:
                fh.write(head + b"\n")
                for b, h in zip(bufs, has2):
                    fh.write(b.ref_after)
                    if h:
                        fh.write(b.ref_after2)
            os.replace(tmp, path)
        except OSError:
            tmp.unlink(missing_ok=True)
            self.messages.append(f"--ref-cache: could not write {path}; the reference runs again next time")
            return
        self.ref_written += 1

    def run_reference(self, seed: int, label: str, poison: int) -> None:
        """The reference over outputs filled with `poison`; its results go to ref_after (POISON) or ref_after2."""
        self.reset(poison)
        self.launch(self.ref_kernel, True, seed, label)
        for b in self.bufs:
            if b.base is None:
                continue
            g = self.guard_violation(b)
            if g:
                raise Failure("runtime-failed", f"params.{b.name}.count = {b.count}: the reference {g}; the count is smaller "
                              "than what the kernel writes at the MEP's sizes", True)
            if poison == POISON:
                b.ref_after = self.download(b)
            else:
                b.ref_after2 = self.download(b)

    def check_set(self, seed: int, label: str, stale: bool = False, captured: Captured | None = None,
                  refuse_empty: bool = True, key: str = "") -> bool:
        """One input set: the reference twice (outputs poisoned with POISON, then POISON2: the elements it
        writes are known exactly), then the variant twice on the same inputs. With `stale`, the variant's
        first run finds the reference's results of the previous set in its outputs (as stale memory would)
        instead of the poison, so that a variant that keeps what it finds there fails. With `captured`, the
        inputs are those of a real run."""
        self.fill_set(seed, captured)
        with device_held(False, "checks"):  # the device for the runs only: the comparisons below run on the host
            written, prefill = self._run_set(seed, label, stale, refuse_empty, captured is not None or not self.cfg.capture,
                                             captured, key)
        return self._compare_set(label, written, prefill)

    def outputs_ignore_prior_contents(self, c: Captured, written: dict[int, Any], label: str) -> None:
        """An output is poisoned before every run: on the application's captured inputs the reference must then write
        what the application's launch left there, else the kernel reads the output's prior contents and its role is
        inout (the CUDA harness's check of the same name)."""
        for b in self.bufs:
            if b.base is None or b.role != "out" or b.index not in written or b.index not in c.after:
                continue
            chk = Check(b.name, b.role)
            compare(chk, "", b.dtype, c.after[b.index].tobytes(), b.ref_after, b.count, *self.cfg.tolerance(b.spec),
                    written[b.index])
            if not chk.ok:
                m = chk.message.replace("reference ", "application ", 1).replace("variant ", "reference over poison ", 1)
                raise Failure("runtime-failed", f"params.{b.name}: role out, but on the {label} the reference writes other "
                              f"values when the buffer starts poisoned ({m}): the kernel reads its prior contents; its "
                              "role is inout", True)

    def _run_set(self, seed: int, label: str, stale: bool, refuse_empty: bool,
                 fatal: bool = True, captured: Captured | None = None, key: str = "") -> tuple[dict[int, Any], dict[int, bytes]]:
        """check_set's device part: the reference twice (or its kept outputs, `key`), then the variant twice; what
        each wrote is downloaded."""
        np = self.np
        outs = [b for b in self.bufs if b.base is not None and b.role == "out"]
        twice = self.load_reference(key)
        cached = twice is not None
        if not cached:
            self.run_reference(seed, label, POISON)
            # the reference's second run only where its first left an output element holding the poison: elsewhere
            # every element is known written and the first run's outputs are all the checks need
            twice = any(kept_poison(b.ref_after, b.dtype, b.count) for b in outs)
            if twice:
                self.run_reference(seed, label + ", outputs poisoned with zeros", POISON2)
            self.store_reference(key, twice)
        if twice:
            written = {b.index: written_mask(b.ref_after, b.ref_after2, b.dtype, b.count) for b in outs}
        else:
            written = {b.index: np.ones(b.count, dtype=bool) for b in outs}
            note = ("the reference ran once per input set where its outputs held no poisoned element (each element it "
                    "writes is known from that run)")
            if note not in self.messages and not cached:
                self.messages.append(note)
        if captured is not None and not cached:  # a kept set's was checked when it was kept
            self.outputs_ignore_prior_contents(captured, written, label)
        if refuse_empty:
            self.refuse_empty_reference(written, label, fatal)
        prefill: dict[int, bytes] = {}
        if stale:
            prefill = {b.index: b.prev_ref for b in self.bufs if b.base is not None and b.role == "out" and len(b.prev_ref) == b.nbytes}
        for run_no, poison in ((1, POISON), (2, POISON2)):
            self.reset(poison)
            if run_no == 1 and prefill:
                for b in self.bufs:
                    if b.index in prefill:
                        self.cl.enqueue_copy(self.queue, b.data, np.frombuffer(prefill[b.index], dtype=np.uint8))
                self.queue.finish()
            self.launch(self.var_kernel, False, seed, label if run_no == 1 else label + ", outputs poisoned with zeros")
            for b in self.bufs:
                if b.base is None:
                    continue
                g = self.guard_violation(b)
                if g:
                    self.check_of(b).fail(f"{label}: {g}", b.count)
                if run_no == 1:
                    b.var_after = self.download(b)
                else:
                    b.var_after2 = self.download(b)
        return written, prefill

    def _compare_set(self, label: str, written: dict[int, Any], prefill: dict[int, bytes]) -> bool:
        """check_set's host part: the variant's outputs against the reference's; False when a check failed."""
        np = self.np
        where = label + (" with outputs pre-filled with the previous set's results" if prefill else "") + ": "
        all_ok = True
        for b in self.bufs:
            if b.base is None:
                continue
            c = self.check_of(b)
            if b.role == "in":
                for after in (b.var_after, b.var_after2):
                    if b.ref_after != after:
                        ra = np.frombuffer(b.ref_after, dtype=np.uint8)
                        va = np.frombuffer(after, dtype=np.uint8)
                        k = int(np.argmax(ra != va)) // b.dtype.itemsize
                        c.fail(where + f"the variant modified this input (first at element {k}); the reference leaves it unchanged", k)
                        break
            elif b.role == "out":
                vw = written_mask(b.var_after, b.var_after2, b.dtype, b.count, prefill.get(b.index))
                rtol, atol = self.cfg.tolerance(b.spec)
                compare(c, where, b.dtype, b.ref_after, b.var_after, b.count, rtol, atol, written[b.index], vw)
                compare(c, label + ", second run: ", b.dtype, b.ref_after, b.var_after2, b.count, rtol, atol, written[b.index], vw)
                b.prev_ref = stale_fill(b.ref_after, b.dtype, b.count)
            else:
                rtol, atol = self.cfg.tolerance(b.spec)
                compare(c, where, b.dtype, b.ref_after, b.var_after, b.count, rtol, atol)
                compare(c, label + ", second run: ", b.dtype, b.ref_after, b.var_after2, b.count, rtol, atol)
            all_ok = all_ok and c.ok
        return all_ok

    def refuse_empty_reference(self, written: dict[int, Any], label: str, fatal: bool = True) -> None:
        """An MEP whose reference writes nothing holds no variant to anything: bad input. Not `fatal` on generated
        inputs when the application's captured data exist (a kernel whose writes depend on its data may write nothing
        on random inputs: the captured sets decide), only said."""
        if any(m.any() for m in written.values()):
            return
        outs = [b for b in self.bufs if b.base is not None and b.role != "in"]
        if any(b.role == "inout" and b.ref_after != b.init.tobytes() for b in outs):
            return
        names = ", ".join(b.name for b in outs) or "none"
        if not fatal:
            self.messages.append(f"{label}: the reference writes nothing on these generated inputs; the application's "
                                 "captured data decide")
            return
        raise Failure("runtime-failed", f"params: the reference writes nothing on {label} (outputs: {names}); nothing "
                      "could tell a variant from it (check the roles, the scalars and the launch in mep.toml)", True)

    def check_smaller_size(self, seed: int) -> bool | None:
        """One more input set with every size scalar (opencl_types.size_scalars) halved: a variant specialized
        to the MEP's one size fails. None when there is no size scalar or the reference cannot run that size."""
        sizes = size_scalars(self.cfg.params, (self.cfg.mep / self.cfg.kernel_file).read_text(encoding="utf-8", errors="replace"))
        if not sizes:
            return None
        self.scalar_override = sizes
        what = ", ".join(f"{self.cfg.params[i]['name']} = {v}" for i, v in sorted(sizes.items()))
        label = f"smaller size ({what}; seed {seed})"
        try:
            return self.check_set(seed, label, refuse_empty=False, key=f"smaller-seed{seed}")
        except Failure as f:
            if not f.input_error:
                raise
            self.messages.append(f"the {label} was not checked: the reference cannot run it ({f.message.splitlines()[0]})")
            return None
        finally:
            self.scalar_override = {}

    # -- bounds ----
    def probe_bounds(self, seed: int, captured: Captured | None = None) -> None:
        """A count smaller than what the kernel reads: run the reference on copies of the buffers followed by a
        large region (opencl_types.probe_tail) holding GUARD_BYTE, then GUARD_BYTE2. A reference
        whose results change reads past a buffer; one buffer at a time then names it. Bad input. The device is held
        for the launches and copies only; the comparisons run after it is released. The outcome (self.probe) is a
        property of the reference and mep.toml: the caller records it and passes --no-probe to later runs of the same
        reference (s2s/mep/probe_record.py). On the application's first captured set where there is one: a kernel that
        indexes through its data (cell starts, neighbour lists) reads anywhere on random inputs."""
        cl, np = self.cl, self.np
        real = [b for b in self.bufs if b.base is not None]
        if not real:
            return
        tail = probe_tail(self.cfg.params, max(b.nbytes for b in real))
        if sum(b.nbytes + tail for b in real) > int(self.dev.global_mem_size) // 2 or tail + max(b.nbytes for b in real) > int(self.dev.max_mem_alloc_size):
            msg = "bounds probe skipped: the buffers and their probe regions exceed the device's memory"
            self.probe = {"state": "skipped", "message": msg}
            self.messages.append(msg)
            return
        self.fill_set(seed, captured)

        def fault(msg: str) -> Failure:
            self.probe = {"state": "fault", "message": msg}
            return Failure("runtime-failed", msg, True)

        def run(tail_bytes: dict[int, int]) -> tuple[dict[int, bytes], dict[int, Any]]:
            """One launch over `tail_bytes` past the buffers (the device held): the outputs, and what lies past each."""
            with device_held(False, "probe"):
                for b in real:
                    pb = probes[b.index]
                    cl.enqueue_fill_buffer(self.queue, pb, np.uint8(tail_bytes[b.index]), b.nbytes, tail)
                    if b.role == "out":
                        cl.enqueue_fill_buffer(self.queue, pb, np.uint8(POISON), 0, b.nbytes)
                    else:
                        cl.enqueue_copy(self.queue, pb, b.init)
                self.queue.finish()
                self.launch(self.ref_kernel, True, seed, "bounds probe")
                out, tails = {}, {}
                for b in real:
                    t = np.empty(tail, dtype=np.uint8)
                    cl.enqueue_copy(self.queue, t, probes[b.index], src_offset=b.nbytes)
                    self.queue.finish()
                    tails[b.index] = t
                    if b.role != "in":
                        out[b.index] = self.download(b)
            for b in real:
                if (tails[b.index] != tail_bytes[b.index]).any():
                    raise fault(f"params.{b.name}.count = {b.count}: the reference writes past the end of "
                                "this buffer; the count is smaller than what the kernel writes at the MEP's sizes")
            return out, tails

        def differs(a: dict[int, bytes], z: dict[int, bytes]) -> bool:
            for b in real:
                if b.index in a:
                    chk = Check(b.name, b.role)
                    compare(chk, "", b.dtype, a[b.index], z[b.index], b.count, *self.cfg.tolerance(b.spec))
                    if not chk.ok:
                        return True
            return False

        probes = {b.index: cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, b.nbytes + tail) for b in real}
        saved = {b.index: b.data for b in real}
        try:
            for b in real:
                b.data = probes[b.index].get_sub_region(0, b.nbytes)
            first = run({b.index: GUARD_BYTE for b in real})[0]
            if differs(first, run({b.index: GUARD_BYTE2 for b in real})[0]):
                for suspect in real:
                    if differs(first, run({b.index: GUARD_BYTE2 if b is suspect else GUARD_BYTE for b in real})[0]):
                        raise fault(f"params.{suspect.name}.count = {suspect.count}: the reference reads "
                                    "past the end of this buffer (its results change with what lies after it); the count "
                                    "is smaller than what the kernel reads at the MEP's sizes")
                raise fault("params: the reference's results change with what lies past its buffers; "
                            "a count in mep.toml is smaller than what the kernel reads at the MEP's sizes")
        finally:
            for b in real:
                b.data = saved[b.index]
        msg = f"bounds probe: the reference reads and writes within every buffer ({tail} bytes after each watched)"
        self.probe = {"state": "clean", "message": msg}
        self.messages.append(msg)

    # -- timing ----
    def time_both(self, seed: int) -> tuple[dict[str, Any], dict[str, Any]]:
        """Both kernels timed in alternation on the input set of `seed`, which the caller filled (fill_set) before it
        took the device: the host's fill is no part of the held time."""
        cl, np = self.cl, self.np
        self.reset()
        for b in self.bufs:
            if b.base is not None and b.role == "inout":
                b.saved = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=b.init)
        cache = int(getattr(self.dev, "global_mem_cache_size", 0) or 0)
        flush_bytes = min(max(2 * cache, 1 << 20), 256 << 20)
        flush = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, flush_bytes)
        self.set_args(self.ref_kernel, seed)
        self.set_args(self.var_kernel, seed, reference=False)
        rg, rl = self.sizes(self.cfg.grid, self.cfg.block)
        vg, vl = self.sizes(self.cfg.var_grid, self.cfg.var_block)

        def timed(kernel: Any, g: Any, lsz: Any, batch: int, reference: bool) -> float:
            for b in self.bufs:
                if b.base is None:
                    continue
                if b.role == "out":
                    cl.enqueue_fill_buffer(self.queue, b.data, np.uint8(POISON), 0, b.nbytes)
                elif b.role == "inout":
                    cl.enqueue_copy(self.queue, b.data, b.saved)
            cl.enqueue_fill_buffer(self.queue, flush, np.uint8(0x5A), 0, flush_bytes)
            try:
                evs = [cl.enqueue_nd_range_kernel(self.queue, kernel, g, lsz) for _ in range(batch)]
                evs[-1].wait()
                return (evs[-1].profile.end - evs[0].profile.start) / 1e3 / batch
            except cl.Error as exc:
                raise Failure("runtime-failed", f"the {'reference' if reference else 'variant'} kernel failed while timed: "
                              f"{str(exc).splitlines()[0]}", reference) from None

        phase("warm-up")
        wr: list[float] = []
        wv: list[float] = []
        while len(wr) < max(1, self.cfg.warmup) and warm_more(wr, wv, self.cfg.target_s):
            wr.append(timed(self.ref_kernel, rg, rl, 1, True))
            wv.append(timed(self.var_kernel, vg, vl, 1, False))
        est = min(_quantile(wr, 0.5), _quantile(wv, 0.5))
        batch = 1 if est >= 10.0 else int(min(1000, math.ceil(20.0 / max(est, 0.02))))
        if batch > 1:
            self.messages.append(f"kernels under 10 us: timed in batches of {batch} launches (per-launch time reported)")
        pair_us = (_quantile(wr, 0.5) + _quantile(wv, 0.5)) * batch
        reps = timed_pairs(pair_us, self.cfg.reps, self.cfg.target_s)
        self.messages.append(timing_note(reps, len(wr), pair_us, self.cfg.reps, self.cfg.target_s))
        phase("timing")
        tr, tv = [], []
        for r in range(reps):
            if r % 2 == 0:
                tr.append(timed(self.ref_kernel, rg, rl, batch, True))
                tv.append(timed(self.var_kernel, vg, vl, batch, False))
            else:
                tv.append(timed(self.var_kernel, vg, vl, batch, False))
                tr.append(timed(self.ref_kernel, rg, rl, batch, True))
        self.messages.append(f"device caches flushed before every timed launch ({flush_bytes >> 20} MiB written)")
        return _stats(tr, batch, len(wr)), _stats(tv, batch, len(wv))


# -- how many pairs: the same rule as the CUDA harness's (s2s_harness_common.cuh, timed_pairs) --------------------
MIN_TIMED_PAIRS = 3  # the fewest timed pairs of a timing, however long the kernel (a median of three at least)


def warm_more(wr: list[float], wv: list[float], target_s: float) -> bool:
    """Whether to run one more warm-up pair: always a first one (it also estimates the pair's time); then while the
    warm-ups so far and one more pair (as long as the last) stay within a quarter of `target_s` (0: no limit)."""
    if not wr:
        return True
    if target_s <= 0:
        return True
    return sum(wr) + sum(wv) + wr[-1] + wv[-1] <= target_s * 1e6 / 4


def timed_pairs(pair_us: float, max_reps: int, target_s: float) -> int:
    """Timed pairs for a pair (reference and variant, one sample each) of `pair_us` µs of device time: as many as fit
    `target_s`, at least MIN_TIMED_PAIRS, at most `max_reps` (timing.repetitions); `target_s` 0: `max_reps`."""
    if target_s <= 0 or pair_us <= 0:
        return max_reps
    return min(max_reps, max(MIN_TIMED_PAIRS, int(target_s * 1e6 / pair_us)))


def timing_note(reps: int, warmups: int, pair_us: float, max_reps: int, target_s: float) -> str:
    """The result's message saying how many pairs the timing used, and why."""
    if reps >= max_reps:
        return f"timed {reps} alternated pairs after {warmups} warm-up pair(s) ({pair_us / 1e3:.3g} ms a pair)"
    return (f"timed {reps} alternated pairs of at most {max_reps} (timing.repetitions) after {warmups} warm-up pair(s): "
            f"{pair_us / 1e3:.3g} ms a pair, timing.target_s = {target_s:g} s of device time per timing")


def _quantile(v: list[float], q: float) -> float:
    if not v:
        return 0.0
    s = sorted(v)
    pos = q * (len(s) - 1)
    i = int(pos)
    frac = pos - i
    return s[i] * (1 - frac) + s[i + 1] * frac if i + 1 < len(s) else s[i]


def _stats(us: list[float], batch: int, warmup: int) -> dict[str, Any]:
    return {"median_us": _quantile(us, 0.5), "spread_us": _quantile(us, 0.75) - _quantile(us, 0.25),
            "p10_us": _quantile(us, 0.1), "p90_us": _quantile(us, 0.9), "min_us": min(us) if us else 0.0,
            "samples": len(us), "batch": batch, "warmup": warmup}


def _build_log(text: str) -> list[str]:
    keep = [ln for ln in text.splitlines() if ln.strip() and "clBuildProgram failed" not in ln and not ln.startswith("Build on")
            and not ln.startswith("(options:")]
    return keep or text.splitlines()[:5]


def _dims(s: str) -> tuple[int, int, int]:
    v = [int(x) for x in s.split(",") if x.strip()]
    v = (v + [1, 1])[:3]
    return v[0], v[1], v[2]


def fresh_seed() -> int:
    return int.from_bytes(os.urandom(4), "little") & 0x7FFFFFFF


def _include(directory: Path) -> list[str]:
    """`-I DIR` with DIR relative to the working directory, which the harness runs in (the MEP): the build options
    are part of PoCL's cache key (with the preprocessed source, so a changed header still builds again), and the
    absolute path made every copy of a MEP (a work copy, a cluster worker's, each test's) compile its kernels again.
    The relative path also survives the options' split at spaces (the MEP under "My Documents"). A directory outside
    the working directory: its absolute path, the relative one where that has a space."""
    rel = os.path.relpath(directory, os.getcwd())
    path = str(directory) if rel.split(os.sep, 1)[0] == ".." else rel
    if any(c.isspace() for c in path):
        path = rel
    if any(c.isspace() for c in path):
        raise Failure("compile-failed", f"{directory}: a directory with a space in its name cannot be passed to the "
                      "OpenCL compiler; move the MEP", input_error=True)
    return ["-I", path]


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this harness when the s2s that started it dies (kill -9 included, which no handler of
    s2s sees); $S2S_PARENT_PID, set by s2s, tells whether that already happened before the request."""
    parent = os.environ.get("S2S_PARENT_PID", "")
    if not parent.isdigit() or not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != int(parent):
        os._exit(137)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="opencl_runner", description="Check and time an OpenCL variant against the reference.")
    ap.add_argument("mep", help="the MEP directory (holds mep.toml)")
    ap.add_argument("--variant", default=None, help="variants/<ID>/ (default: the reference against itself)")
    ap.add_argument("--no-time", action="store_true", help="check only")
    ap.add_argument("--time-only", action="store_true", help="time without checking")
    ap.add_argument("--no-post-check", action="store_true", help="skip the check with a fresh input set after timing")
    ap.add_argument("--no-probe", action="store_true", help="skip the bounds probe (the caller recorded its result for this "
                    "reference)")
    ap.add_argument("--build-only", action="store_true", help="build both programs and stop")
    ap.add_argument("--ref-cache", type=Path, default=None, help="read the reference's outputs of an input set from this "
                    "directory where an earlier run wrote them, else write them there (with a fixed --seed; the set after "
                    "timing stays fresh)")
    ap.add_argument("--input-sets", type=int, default=None)
    ap.add_argument("--seed", type=int, default=None, help="first seed (default: fresh from the OS each run, or $S2S_SEED; "
                    "the seeds used are in the result)")
    ap.add_argument("--reps", type=int, default=None, help="the most timed pairs")
    ap.add_argument("--warmup", type=int, default=None, help="the most warm-up pairs")
    ap.add_argument("--target-s", type=float, default=None, help="device seconds the timed pairs aim at (fewer pairs for a "
                    "long kernel, never fewer than 3 nor more than --reps; 0: always --reps)")
    ap.add_argument("--rtol", type=float, default=None, help="rtol of every output (default: each output's from mep.toml)")
    ap.add_argument("--atol", type=float, default=None, help="atol of every output (default: each output's from mep.toml)")
    ap.add_argument("--var-grid", type=_dims, default=None, help="X,Y,Z global size of the variant")
    ap.add_argument("--var-block", type=_dims, default=None, help="X,Y,Z local size of the variant (0,0,0: none)")
    ap.add_argument("--device", default=os.environ.get("S2S_OPENCL_DEVICE", ""), help="substring of 'platform / device'")
    args = ap.parse_args(argv)
    _die_with_parent()

    if "OCL_ICD_VENDORS" not in os.environ and os.path.isdir("/etc/OpenCL/vendors"):
        os.environ["OCL_ICD_VENDORS"] = "/etc/OpenCL/vendors"
    mep = Path(args.mep).resolve()
    result: dict[str, Any] = {"schema": 1, "backend": "opencl", "device": "?", "verdict": "runtime-failed", "input_sets": 0,
                              "checks": [], "reference": None, "variant": None, "speedup": None, "messages": [],
                              "input_error": None}
    run: Run | None = None
    try:
        cfg = load_config(mep, args.variant)
        result["kernel"] = cfg.kernel
        for name in ("input_sets", "seed", "reps", "warmup", "target_s"):
            if getattr(args, name) is not None:
                setattr(cfg, name, getattr(args, name))
        if args.seed is None:  # fresh inputs every run: a variant cannot be fitted to one seed
            cfg.seed = int(os.environ["S2S_SEED"]) if os.environ.get("S2S_SEED", "").isdigit() else fresh_seed()
        result["seed"] = cfg.seed
        cfg.force_rtol, cfg.force_atol = args.rtol, args.atol
        if args.var_grid:
            cfg.var_grid = args.var_grid
        if args.var_block:
            cfg.var_block = args.var_block
        try:
            import numpy as np
            import pyopencl as cl
        except ImportError as exc:
            raise Failure("runtime-failed", f"the OpenCL harness needs numpy and pyopencl: {exc}", True) from None
        host_phase("setup")
        run = Run(cfg=cfg, cl=cl, np=np, ref_cache=args.ref_cache if args.ref_cache and args.ref_cache.is_dir() else None)
        run.build(args.device)
        result["device"] = run.device
        result["build_seconds"] = run.build_seconds
        if args.build_only:
            result["verdict"] = "ok"
        else:
            run.allocate()
            ok = True
            sets = 0
            # each check holds the device (shared with other evaluations' checks) for its runs only
            caps = run.load_captured() if not args.time_only and cfg.capture else []
            run.shuffle_source = caps[0] if caps else None  # the values a "shuffle" fill reorders for generated sets
            if not args.time_only and not args.no_probe:
                run.probe_bounds(cfg.seed, caps[0] if caps else None)
            elif not args.time_only:
                run.messages.append("bounds probe: not repeated (--no-probe: the caller holds its record)")
            for cap in caps:
                key = f"captured{sets + 1}"
                with device_held(False, "checks"):
                    run.reproduce(cap, key)
                ok = run.check_set(cfg.seed, cap.label, captured=cap, key=key) and ok
                sets += 1
            captured_only = cfg.input_sets <= 0 and bool(caps)  # [check] input_sets = 0: the captured data only
            if captured_only:
                run.messages.append("checked on the application's captured data only ([check] input_sets = 0: no "
                                    "generated input set, no smaller size, no fresh set after timing)")
            elif cfg.input_sets < 1:
                cfg.input_sets = 1
            if not args.time_only:
                for s in range(cfg.input_sets):
                    seed = cfg.seed + s
                    ok = run.check_set(seed, f"input set {s + 1} (seed {seed})", stale=s % 2 == 1, key=f"seed{seed}") and ok
                    sets += 1
                smaller = None if captured_only else run.check_smaller_size(cfg.seed + 7919)
                if smaller is not None:
                    ok = smaller and ok
                    sets += 1
            verdict = "ok" if ok else "wrong-output"
            if ok and not args.no_time:
                # the first captured set as the checks loaded it; a time-only run reads it here
                caps = caps[:1] or (run.load_captured(first_only=True) if cfg.capture else [])
                run.fill_set(cfg.seed, caps[0] if caps else None)  # the application's data, where captured
                if caps:
                    run.messages.append(f"timed on the {caps[0].label}")
                with device_held(True, "timing"):
                    ref, var = run.time_both(cfg.seed)
                result["reference"], result["variant"] = ref, var
                result["speedup"] = ref["median_us"] / var["median_us"] if var["median_us"] > 0 else None
                if not args.time_only and not args.no_post_check and not captured_only:
                    # fresh where the other sets' reference outputs are kept (--ref-cache): one set no earlier run saw
                    seed = cfg.seed + cfg.input_sets if run.ref_cache is None else fresh_seed()
                    if not run.check_set(seed, f"after timing, fresh input set (seed {seed})"):
                        verdict = "wrong-output"
                    sets += 1
            if args.time_only:
                run.messages.append("outputs were not checked (--time-only)")
            result["verdict"] = verdict
            result["input_sets"] = sets
    except Failure as f:
        result["verdict"] = f.verdict
        result["messages"].extend(f.message.splitlines() or [f.message])
        if f.input_error:
            result["input_error"] = f.message.splitlines()[0] if f.message else f.verdict
    except (OSError, KeyError, ValueError, TypeError) as exc:
        result["verdict"] = "runtime-failed"
        result["messages"].append(f"{type(exc).__name__}: {exc}")
        result["input_error"] = f"mep.toml: {type(exc).__name__}: {exc}" if isinstance(exc, (KeyError, TypeError)) else None
    if run is not None:
        result["device"] = run.device
        result["probe"] = run.probe
        if run.ref_check_us is not None:
            result["reference_check_us"] = run.ref_check_us
        if run.ref_cache is not None:
            result["ref_cache"] = {"read": run.ref_read, "written": run.ref_written}
            if not args.time_only:
                run.messages.append(f"the reference's outputs of {run.ref_read} input set(s) read from --ref-cache, of "
                                    f"{run.ref_written} computed and kept there (computed once per input set for a long kernel)")
        result["checks"] = [c.json() for c in run.checks]
        result["messages"] = run.messages + result["messages"]
    print("S2S_RESULT " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
