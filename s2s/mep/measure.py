"""What one evaluation of a variant found: immutable records, and their JSON form.

A harness (CUDA/HIP binary or the OpenCL runner) prints one line `S2S_RESULT {json}`; `from_harness`
turns that object into a `Measurement`. `Measurement.to_json()` is the `s2s run --json` format.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

OK = "ok"
WRONG_OUTPUT = "wrong-output"
COMPILE_FAILED = "compile-failed"
RUNTIME_FAILED = "runtime-failed"
TIMED_OUT = "timed-out"
VERDICTS = (OK, WRONG_OUTPUT, COMPILE_FAILED, RUNTIME_FAILED, TIMED_OUT)

RESULT_PREFIX = "S2S_RESULT "
PHASE_PREFIX = "S2S_PHASE "


@dataclass(frozen=True)
class Timing:
    """Per-launch device time of one kernel over `samples` timed repetitions (µs)."""
    median_us: float
    spread_us: float  # interquartile range (p75 - p25)
    p10_us: float = 0.0
    p90_us: float = 0.0
    min_us: float = 0.0
    samples: int = 0
    batch: int = 1  # launches per timed sample (short kernels are timed in batches)
    warmup: int = 0  # warm-up launches before the timed ones (0: not recorded, an older harness)

    def to_json(self) -> dict[str, Any]:
        return {"median_us": self.median_us, "spread_us": self.spread_us, "p10_us": self.p10_us, "p90_us": self.p90_us,
                "min_us": self.min_us, "samples": self.samples, "batch": self.batch, "warmup": self.warmup}

    @staticmethod
    def from_json(d: dict[str, Any] | None) -> Timing | None:
        if not d or d.get("median_us") is None:
            return None
        return Timing(median_us=float(d["median_us"]), spread_us=float(d.get("spread_us", 0.0)),
                      p10_us=float(d.get("p10_us", 0.0)), p90_us=float(d.get("p90_us", 0.0)),
                      min_us=float(d.get("min_us", 0.0)), samples=int(d.get("samples", 0)), batch=int(d.get("batch", 1)),
                      warmup=int(d.get("warmup", 0) or 0))


@dataclass(frozen=True)
class OutputCheck:
    """The comparison of one buffer of the variant against the reference, over every input set."""
    name: str
    ok: bool
    role: str = "out"
    max_abs_err: float = 0.0
    max_rel_err: float = 0.0
    unwritten: int = 0  # elements the reference wrote and the variant left at the poison value (worst input set)
    first_bad: int | None = None  # first failing element index
    message: str = ""
    rtol: float | None = None  # the tolerances it was held to (None: an input, held unchanged; or an older record)
    atol: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "role": self.role, "ok": self.ok, "max_abs_err": self.max_abs_err,
                "max_rel_err": self.max_rel_err, "unwritten": self.unwritten, "first_bad": self.first_bad,
                "rtol": self.rtol, "atol": self.atol, "message": self.message}

    @staticmethod
    def from_json(d: dict[str, Any]) -> OutputCheck:
        fb = d.get("first_bad")
        return OutputCheck(name=str(d.get("name", "?")), ok=bool(d.get("ok", False)), role=str(d.get("role", "out")),
                           max_abs_err=_num(d.get("max_abs_err")), max_rel_err=_num(d.get("max_rel_err")),
                           unwritten=int(d.get("unwritten", 0) or 0),
                           first_bad=None if fb is None or int(fb) < 0 else int(fb), message=str(d.get("message", "")),
                           rtol=None if d.get("rtol") is None else _num(d["rtol"]),
                           atol=None if d.get("atol") is None else _num(d["atol"]))


@dataclass(frozen=True)
class Measurement:
    verdict: str  # one of VERDICTS
    backend: str
    kernel: str
    variant: str | None  # None: the reference against itself
    device: str = ""
    build_seconds: float = 0.0
    run_seconds: float = 0.0
    ref: Timing | None = None  # the reference's per-launch time
    var: Timing | None = None  # the variant's
    speedup: float | None = None
    outputs: tuple[OutputCheck, ...] = ()
    input_sets: int = 0  # input sets that were checked
    messages: tuple[str, ...] = ()
    input_error: str | None = None  # the MEP itself is wrong (not the variant): `s2s run` exits 2
    seed: int | None = None  # the first seed of the generated input sets (fresh each run unless given)
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    # where the run's time went: start, wait (for the device lock), checks, timing (s2s.mep.backends.base._Phases)
    phase_seconds: dict[str, float] = field(default_factory=dict, compare=False)

    @property
    def ok(self) -> bool:
        return self.verdict == OK

    def with_messages(self, *more: str) -> Measurement:
        return replace(self, messages=self.messages + tuple(m for m in more if m))

    def to_json(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel, "variant_id": self.variant, "backend": self.backend, "device": self.device,
            "build_seconds": round(self.build_seconds, 3), "run_seconds": round(self.run_seconds, 3),
            "reference": self.ref.to_json() if self.ref else None,
            "variant": self.var.to_json() if self.var else None,
            "speedup": self.speedup, "input_sets": self.input_sets,
            "outputs": [o.to_json() for o in self.outputs], "verdict": self.verdict,
            "messages": list(self.messages), "input_error": self.input_error, "seed": self.seed,
            **({"phase_seconds": dict(self.phase_seconds)} if self.phase_seconds else {}),
            **({"ref_cache": dict(self.extra["ref_cache"])} if isinstance(self.extra.get("ref_cache"), dict) else {}),
        }

    @staticmethod
    def from_json(d: dict[str, Any]) -> Measurement:
        return Measurement(
            verdict=str(d["verdict"]), backend=str(d.get("backend", "")), kernel=str(d.get("kernel", "")),
            variant=d.get("variant_id"), device=str(d.get("device", "")), build_seconds=float(d.get("build_seconds", 0.0)),
            run_seconds=float(d.get("run_seconds", 0.0)), ref=Timing.from_json(d.get("reference")),
            var=Timing.from_json(d.get("variant")), speedup=d.get("speedup"), input_sets=int(d.get("input_sets", 0)),
            outputs=tuple(OutputCheck.from_json(o) for o in d.get("outputs", [])), messages=tuple(d.get("messages", [])),
            input_error=d.get("input_error"), seed=None if d.get("seed") is None else int(d["seed"]),
            phase_seconds={str(k): float(v) for k, v in (d.get("phase_seconds") or {}).items()},
            extra={"ref_cache": dict(d["ref_cache"])} if isinstance(d.get("ref_cache"), dict) else {},
        )


def _num(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def from_harness(obj: dict[str, Any], *, backend: str, kernel: str, variant: str | None, build_seconds: float,
                 run_seconds: float, extra_messages: tuple[str, ...] = ()) -> Measurement:
    """The harness's result object (see templates/cuda_harness.cu.j2 and backends/opencl_runner.py)."""
    verdict = str(obj.get("verdict", RUNTIME_FAILED))
    if verdict not in VERDICTS:
        verdict = RUNTIME_FAILED
    ref = Timing.from_json(obj.get("reference"))
    var = Timing.from_json(obj.get("variant"))
    speedup = obj.get("speedup")
    if speedup is None and ref and var and var.median_us > 0:
        speedup = ref.median_us / var.median_us
    return Measurement(
        verdict=verdict, backend=backend, kernel=kernel, variant=variant, device=str(obj.get("device", "")),
        build_seconds=build_seconds, run_seconds=run_seconds, ref=ref, var=var,
        speedup=float(speedup) if speedup is not None else None,
        outputs=tuple(OutputCheck.from_json(c) for c in obj.get("checks", [])), input_sets=int(obj.get("input_sets", 0)),
        messages=tuple(str(m) for m in obj.get("messages", [])) + extra_messages,
        input_error=obj.get("input_error") or None, seed=None if obj.get("seed") is None else int(obj["seed"]),
        extra={**{k: obj[k] for k in ("probe", "ref_cache") if isinstance(obj.get(k), dict)},
               **({"reference_check_us": float(obj["reference_check_us"])}
                  if isinstance(obj.get("reference_check_us"), (int, float)) else {})},
    )


def failed(verdict: str, *, backend: str, kernel: str, variant: str | None, messages: tuple[str, ...] | list[str],
           build_seconds: float = 0.0, run_seconds: float = 0.0, device: str = "", input_error: str | None = None) -> Measurement:
    return Measurement(verdict=verdict, backend=backend, kernel=kernel, variant=variant, device=device,
                       build_seconds=build_seconds, run_seconds=run_seconds, messages=tuple(messages), input_error=input_error)
