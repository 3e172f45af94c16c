"""The application before and after: built once each (in copies), run alternately, wall times and outputs compared.

    compare_apps(before, after, build_cmd, run_cmd, runs=3, check_cmd=None) -> AppComparison

Without a check command, the output is unchanged when every run exits as the first original run did and the
numbers the runs print agree within `rtol`: positions whose number differs between the original's own runs
(timings, dates) are left out, and so is nothing else. With `check_cmd`, it is run in the optimized copy after
its last run, with S2S_BEFORE_DIR (the original's copy), S2S_BEFORE_STDOUT and S2S_AFTER_STDOUT (files holding
the last runs' output) in its environment: exit 0 means unchanged.
"""
from __future__ import annotations

import os
import re
import statistics
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from s2s.base.errors import UserError

_NUMBER = re.compile(rb"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|\b(?:nan|inf)\b", re.I)


@dataclass
class Run:
    rc: int
    seconds: float
    stdout: bytes


@dataclass
class AppComparison:
    before: list[Run] = field(default_factory=list)
    after: list[Run] = field(default_factory=list)
    unchanged: bool = False
    how: str = ""
    numbers: int = 0
    ignored: int = 0

    @property
    def wall_before(self) -> float:
        return statistics.median(r.seconds for r in self.before) if self.before else 0.0

    @property
    def wall_after(self) -> float:
        return statistics.median(r.seconds for r in self.after) if self.after else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"wall_before_s": [round(r.seconds, 4) for r in self.before],
                "wall_after_s": [round(r.seconds, 4) for r in self.after],
                "median_before_s": round(self.wall_before, 4), "median_after_s": round(self.wall_after, 4),
                "app_speedup": round(self.wall_before / self.wall_after, 4) if self.wall_after else None,
                "output_unchanged": self.unchanged, "how": self.how}


def _run(cmd: str, cwd: Path, timeout: float, env: dict[str, str] | None = None) -> Run:
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, shell=True, cwd=cwd, capture_output=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise UserError(f"auto: the command {cmd!r} was killed after {timeout:g} s in {cwd}") from None
    return Run(proc.returncode, time.perf_counter() - t0, proc.stdout + b"\n" + proc.stderr)


def numbers(text: bytes) -> list[float]:
    out = []
    for m in _NUMBER.finditer(text):
        try:
            out.append(float(m.group(0)))
        except ValueError:
            out.append(float("nan"))
    return out


def _close(a: float, b: float, rtol: float, atol: float) -> bool:
    if a != a or b != b:
        return a != a and b != b
    return abs(a - b) <= atol + rtol * max(abs(a), abs(b))


def same_output(before: list[Run], after: list[Run], rtol: float, atol: float = 1e-12) -> tuple[bool, str, int, int]:
    """(unchanged?, why, numbers compared, numbers left out as varying between the original's own runs)."""
    ref = before[0]
    bad_rc = [r.rc for r in after if r.rc != ref.rc]
    if bad_rc:
        return False, f"the optimized application exited with {bad_rc[0]}, the original with {ref.rc}", 0, 0
    base = [numbers(r.stdout) for r in before]
    if len({len(b) for b in base}) > 1:
        return False, "the original's own runs print different amounts of numbers; give --check-cmd", 0, 0
    steady = [all(_close(b[k], base[0][k], 0.0, 0.0) for b in base[1:]) for k in range(len(base[0]))]
    for r in after:
        got = numbers(r.stdout)
        if len(got) != len(base[0]):
            return False, f"the optimized application prints {len(got)} numbers, the original {len(base[0])}", 0, 0
        for k, (x, y) in enumerate(zip(base[0], got)):
            if steady[k] and not _close(x, y, rtol, atol):
                return (False, f"number {k + 1} of the output differs: {x!r} before, {y!r} after (rtol {rtol:g})",
                        sum(steady), len(steady) - sum(steady))
    n = sum(steady)
    return (True, f"exit status {ref.rc} and {n} printed numbers equal within rtol {rtol:g} "
                  f"({len(steady) - n} that vary between the original's own runs left out)", n, len(steady) - n)


def compare_apps(before: Path, after: Path, build_cmd: str, run_cmd: str, *, runs: int = 3, check_cmd: str | None = None,
                 rtol: float = 1e-5, timeout: float = 1800.0, log: Any = print) -> AppComparison:
    for where in (before, after):
        b = _run(build_cmd, where, timeout)
        if b.rc != 0:
            tail = b.stdout.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
            raise UserError(f"auto: the build command {build_cmd!r} failed in {where} (exit {b.rc}): {tail[0]}",
                            file=str(where))
    out = AppComparison()
    for k in range(max(1, runs)):  # alternated: before, after, before, after, ...
        out.before.append(_run(run_cmd, before, timeout))
        out.after.append(_run(run_cmd, after, timeout))
        log(f"  run {k + 1}: original {out.before[-1].seconds:.3f} s, optimized {out.after[-1].seconds:.3f} s")
    if check_cmd:
        b_out, a_out = before / ".s2s-before-stdout.txt", after / ".s2s-after-stdout.txt"
        b_out.write_bytes(out.before[-1].stdout)
        a_out.write_bytes(out.after[-1].stdout)
        env = dict(os.environ, S2S_BEFORE_DIR=str(before), S2S_BEFORE_STDOUT=str(b_out), S2S_AFTER_STDOUT=str(a_out))
        chk = _run(check_cmd, after, timeout, env=env)
        out.unchanged = chk.rc == 0 and all(r.rc == out.before[0].rc for r in out.after)
        said = [ln.strip() for ln in chk.stdout.decode("utf-8", "replace").splitlines() if ln.strip()][:2]
        out.how = f"--check-cmd {check_cmd!r} exited {chk.rc}" + (f": {' | '.join(said)}"[:400] if said and chk.rc else "")
        return out
    out.unchanged, out.how, out.numbers, out.ignored = same_output(out.before, out.after, rtol)
    return out
