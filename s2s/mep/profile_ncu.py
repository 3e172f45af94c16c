"""Profiler feedback: one Nsight Compute run of a built MEP, for the original or one variant: achieved DRAM bandwidth,
FLOP rate, occupancy and the limiting unit. Stored in the history (meta `ncu:original`, `ncu:VARIANT`) for the report,
the cost model and the LLM prompt. Only where `ncu` is on the machine; with `--clock-control none`, as the timings run.
"""
from __future__ import annotations

import csv
import io
import json
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from s2s.base.devicelock import device_lock
from s2s.base.errors import UserError
from s2s.base.procs import run_group

TIME = "gpu__time_duration.sum"
DRAM_BYTES = "dram__bytes.sum"
SM_PCT = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
MEM_PCT = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
OCCUPANCY = "sm__warps_active.avg.pct_of_peak_sustained_active"
FADD = "sm__sass_thread_inst_executed_op_fadd_pred_on.sum"
FMUL = "sm__sass_thread_inst_executed_op_fmul_pred_on.sum"
FFMA = "sm__sass_thread_inst_executed_op_ffma_pred_on.sum"
METRICS = (TIME, DRAM_BYTES, SM_PCT, MEM_PCT, OCCUPANCY, FADD, FMUL, FFMA)
_NS = {"nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6, "second": 1e9, "s": 1e9}
_BYTES = {"byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "KB": 1e3, "MB": 1e6, "GB": 1e9}


@dataclass(frozen=True)
class Profile:
    kernel: str  # the profiled kernel's name as ncu printed it
    time_us: float
    dram_gbs: float  # achieved DRAM bandwidth
    gflops: float  # FP32 adds + multiplies + 2 x FMAs per second
    occupancy_pct: float  # achieved: active warps over the maximum, averaged over the SMs
    sm_pct: float  # compute throughput, % of peak
    memory_pct: float  # memory throughput, % of peak
    limiter: str  # compute | memory | latency (neither unit above 60 % of its peak)


def available() -> bool:
    return shutil.which("ncu") is not None


def command(run_argv: list[str], namespace: str, ncu: str = "ncu") -> list[str]:
    """ncu over a harness run without timing on one input set: the first launch of the kernel in `namespace`
    (s2s_ref: the original; s2s_var: the variant), every metric the Profile needs, CSV raw page."""
    return [ncu, "--csv", "--page", "raw", "--clock-control", "none", "--kernel-name-base", "demangled",
            "--kernel-name", f"regex:^{namespace}::", "--launch-count", "1", "--metrics", ",".join(METRICS),
            *run_argv, "--input-sets", "1"]


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def parse(csv_text: str) -> Profile | None:
    """The first profiled kernel of an `ncu --csv --page raw` output (a header row, a units row, one row per kernel)."""
    lines = [ln for ln in csv_text.splitlines() if ln.startswith('"')]  # ncu's own messages start with ==PROF==
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    if len(rows) < 3:
        return None
    head, units, data = rows[0], rows[1], rows[2]
    col = {name: i for i, name in enumerate(head)}

    def value(metric: str, scale: dict[str, float] | None = None) -> float:
        i = col.get(metric)
        if i is None or i >= len(data):
            return 0.0
        v = _number(data[i]) or 0.0
        return v * (scale.get(units[i], 1.0) if scale else 1.0)

    t_ns = value(TIME, _NS)
    if t_ns <= 0:
        return None
    flops = value(FADD) + value(FMUL) + 2 * value(FFMA)
    sm, mem = value(SM_PCT), value(MEM_PCT)
    limiter = "latency" if max(sm, mem) < 60 else ("compute" if sm >= mem else "memory")
    name = data[col["Kernel Name"]] if "Kernel Name" in col else ""
    return Profile(kernel=name, time_us=t_ns / 1e3, dram_gbs=value(DRAM_BYTES, _BYTES) / t_ns, gflops=flops / t_ns,
                   occupancy_pct=value(OCCUPANCY), sm_pct=sm, memory_pct=mem, limiter=limiter)


def profile(mep_dir: Path, variant: str | None = None, timeout_s: float = 300.0) -> Profile | dict[str, str]:
    """Build and profile the original (variant None) or a variant; a Profile, or {"error": why} when ncu cannot."""
    from .backends import get_backend
    from .evaluate import build

    if not available():
        return {"error": "ncu is not on this machine"}
    try:
        b = build(Path(mep_dir), variant)
    except UserError as exc:  # a variant that is not there, an MEP that cannot build: no profile, and why
        return {"error": exc.one_line()}
    if not b.ok:
        return {"error": f"build failed: {'; '.join(b.messages)[:300]}"}
    backend = get_backend(b.backend)
    cmd = command(backend.run_argv(b, time=False), "s2s_var" if variant else "s2s_ref")
    with device_lock():  # never beside a timed evaluation; in a session of its own, killed whole on timeout
        p = run_group(cmd, cwd=b.mep_dir, timeout_s=timeout_s, env=backend.run_env(b))
    if p.timed_out:
        return {"error": f"ncu ran past {timeout_s:.0f} s"}
    prof = parse(p.output)  # its rows start with a quote; its messages (==PROF==) and the harness's lines do not
    return prof if prof is not None else {"error": f"no profile in ncu's output (rc {p.returncode}): {p.output[-300:]}"}


def record(history: Any, key: str, result: Profile | dict[str, str]) -> None:
    """meta `ncu:KEY` (KEY: original or a variant id) in a History."""
    history.set_meta(f"ncu:{key}", json.dumps(asdict(result) if isinstance(result, Profile) else result))


def recorded(history: Any, key: str) -> Profile | None:
    raw = history.meta(f"ncu:{key}")
    try:
        d = json.loads(raw) if raw else None
        return Profile(**d) if isinstance(d, dict) and "error" not in d else None
    except (ValueError, TypeError):
        return None


def feedback(mep_dir: Path, history: Any, variant: str | None, timeout_s: float = 120.0) -> Profile | None:
    """The original's (variant None) or a variant's profile, measured once: what the history already holds, else one
    ncu run where ncu is on the machine, recorded in the history (an error too, so a failing profile is not retried)."""
    key = variant or "original"
    have = recorded(history, key)
    if have is not None or history.meta(f"ncu:{key}") is not None or not available():
        return have
    result = profile(Path(mep_dir), variant, timeout_s)
    record(history, key, result)
    return result if isinstance(result, Profile) else None
