"""Build and run a sequence MEP's harness: `make` (nvcc) in the MEP, then `./harness REPS`, its JSON line read.

    replay(mep, reps) -> dict      (the harness's result; `verdict` "ok" or "FAILED")

Both commands are argument vectors in their own process group, killed whole on timeout. A harness that did not build,
crashed or printed no JSON line is one UserError naming the MEP and the tail of its output; a build that failed names
the compiler's first error (its location and message, and the source line it quotes), which a tail of "1 error
detected" and make's exit line would hide.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from s2s.base.devicelock import device_lock
from s2s.base.errors import UserError
from s2s.base.procs import run_group
from s2s.mep.backends.cuda import error_excerpt


def _tail(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return " | ".join(lines[-3:]) if lines else "no output"


def _first_error(text: str) -> str:
    """The compiler's first error and the source line it quotes (mep.backends.cuda.error_excerpt), else the tail."""
    first = error_excerpt(text.splitlines(), limit=2)
    return " | ".join(x.strip() for x in first)[:600] if first else _tail(text)


def replay(mep: Path, reps: int = 15, *, arch: str = "sm_90", timeout: float = 600.0) -> dict[str, Any]:
    mep = Path(mep)
    if not (mep / "sequence.json").is_file():
        raise UserError("not a sequence MEP (no sequence.json)", file=str(mep))
    built = run_group(["make", "-s", f"NVCC_ARCH={arch}"], cwd=mep, timeout_s=timeout)
    if built.timed_out or built.returncode != 0:
        raise UserError(f"the sequence harness did not build: {_first_error(built.output)}", file=str(mep / "harness.cu"))
    with device_lock():  # its timings alone on the device, as every timing of s2s is
        ran = run_group(["./harness", str(int(reps))], cwd=mep, timeout_s=timeout)
    if ran.timed_out:
        raise UserError(f"the sequence harness was killed after {timeout:g} s", file=str(mep))
    for line in reversed(ran.output.splitlines()):
        if line.startswith("{"):
            try:
                return dict(json.loads(line))
            except ValueError:
                break
    raise UserError(f"the sequence harness printed no result (exit {ran.returncode}): {_tail(ran.output)}", file=str(mep))
