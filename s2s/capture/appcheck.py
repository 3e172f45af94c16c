"""The application before and after: built once each (in copies), run alternately, wall times and outputs compared.

    compare_apps(before, after, build_cmd, run_cmd, runs=3, check_cmd=None) -> AppComparison

Each copy is run once first, untimed (one-time costs such as an OpenCL kernel compilation stay out of the medians).
Without a check command, the output is unchanged when every run exits as the first original run did and the lines
every original run prints (matched by their text without the numbers) come out again with their numbers equal
within `rtol`: numbers that differ between the original's own runs (timings, dates) and lines only some of its runs
print are left out (`same_output`). The runs are the user's commands in their own sessions, killed whole on timeout,
their output bounded. With `check_cmd`, it is run in the optimized copy after
its last run, with S2S_BEFORE_DIR (the original's copy), S2S_BEFORE_STDOUT and S2S_AFTER_STDOUT (files holding
the last runs' output) in its environment: exit 0 means unchanged.
"""
from __future__ import annotations

import os
import re
import statistics
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
    builds: list[Run] = field(default_factory=list)  # before's, after's
    warmups: list[Run] = field(default_factory=list)  # before's, after's: run once, not timed
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


def run_app(cmd: str, cwd: Path, timeout: float, env: dict[str, str] | None = None) -> Run:
    """The user's command in its own session, killed whole on timeout; its output bounded (the first and last MB)."""
    from s2s.base.procs import run_group

    done = run_group(cmd, cwd=cwd, timeout_s=timeout, env=env)
    if done.timed_out:
        raise UserError(f"auto: the command {cmd!r} was killed after {timeout:g} s in {cwd} (with every process it started)")
    return Run(done.returncode, done.seconds, done.output.encode("utf-8", "replace"))


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


_ALARM = re.compile(rb"\b(fail(ed|ure)?|error|mismatch|incorrect|wrong)\b", re.I)
# a line that reports how long something took or how fast it went: its numbers are the application's measurement of
# itself, which an optimization is meant to change (a time printed at 2 decimals can be equal in the original's runs)
_TIMING = re.compile(rb"\b(times?|elapsed|duration|runtime|seconds?|secs?|ms|msecs?|us|usecs?|ns|microseconds?|"
                     rb"milliseconds?|nanoseconds?|throughput|bandwidth|gflops?|tflops?)\b|\((s|ms|us|ns)\)|[gmkt]i?b/s|"
                     rb"flop/s|ops/s", re.I)
_NOT_TIMING = re.compile(rb"\btime[ _-]?steps?\b|\btimesteps?\b", re.I)  # a simulation's time step is its state


def timing_line(skeleton: bytes) -> bool:
    """Whether a line (its text, numbers taken out) reports a time or a rate rather than a result."""
    return bool(_TIMING.search(skeleton)) and not _NOT_TIMING.search(skeleton)


def _lines(text: bytes) -> dict[tuple[bytes, int], list[float]]:
    """Each line by its text with the numbers taken out (and its occurrence of that text): the numbers it prints."""
    seen: dict[bytes, int] = {}
    out: dict[tuple[bytes, int], list[float]] = {}
    for line in text.splitlines():
        skel = b" ".join(_NUMBER.sub(b"#", line).split())
        if not skel:
            continue
        k = seen.get(skel, 0)
        seen[skel] = k + 1
        out[(skel, k)] = numbers(line)
    return out


def same_output(before: list[Run], after: list[Run], rtol: float, atol: float = 1e-12) -> tuple[bool, str, int, int]:
    """(unchanged?, why, numbers compared, numbers left out as varying between the original's own runs).

    Lines are matched by their text with the numbers taken out: a line every run of the original prints must be
    printed after too, with its numbers equal within `rtol`, except the numbers that differ between the original's
    own runs (timings, dates), the numbers of a line that reports a time or a rate (timing_line), and lines only some
    of the original's runs print. A line the optimized application
    prints that no original run printed fails the check only when it reports a failure or an error."""
    ref = before[0]
    bad_rc = [r.rc for r in after if r.rc != ref.rc]
    if bad_rc:
        return False, f"the optimized application exited with {bad_rc[0]}, the original with {ref.rc}", 0, 0
    base = [_lines(r.stdout) for r in before]
    keys = [k for k in base[0] if all(k in b for b in base[1:])]  # the lines every original run prints, in order
    steady: dict[tuple[bytes, int], list[bool]] = {}
    for k in keys:
        vals = [b[k] for b in base]
        if len({len(v) for v in vals}) > 1 or timing_line(k[0]):
            steady[k] = []  # a varying count of numbers, or a timing: only the line's presence is checked
        else:
            steady[k] = [all(_close(v[i], vals[0][i], 0.0, 0.0) for v in vals[1:]) for i in range(len(vals[0]))]
    compared = sum(sum(v) for v in steady.values())
    ignored = sum(len(base[0][k]) - sum(steady[k]) for k in keys)
    ordinal = {}
    n = 0
    for k in keys:
        for i in range(len(steady[k])):
            n += 1
            ordinal[(k, i)] = n
    seen_before = {k for b in base for k in b}
    for r in after:
        got = _lines(r.stdout)
        for k in keys:
            if k not in got:
                return (False, f"the optimized application no longer prints a line every run of the original prints: "
                               f"{k[0].decode('utf-8', 'replace')[:120]!r}", compared, ignored)
            mask = steady[k]
            if mask and len(got[k]) != len(mask):
                return (False, f"the optimized application prints {len(got[k])} numbers in the line "
                               f"{k[0].decode('utf-8', 'replace')[:120]!r}, the original {len(mask)}", compared, ignored)
            for i, ok in enumerate(mask):
                x, y = base[0][k][i], got[k][i]
                if ok and not _close(x, y, rtol, atol):
                    return (False, f"number {ordinal[(k, i)]} of the output differs: {x!r} before, {y!r} after (rtol {rtol:g}) "
                                   f"in the line {k[0].decode('utf-8', 'replace')[:100]!r}", compared, ignored)
        extra = [k for k in got if k not in seen_before and _ALARM.search(k[0])]
        if extra:
            return (False, f"the optimized application prints a line no run of the original printed: "
                           f"{extra[0][0].decode('utf-8', 'replace')[:120]!r}", compared, ignored)
    return (True, f"exit status {ref.rc} and {compared} printed numbers equal within rtol {rtol:g} "
                  f"({ignored} that vary between the original's own runs or report a time or a rate left out)",
            compared, ignored)


def compare_apps(before: Path, after: Path, build_cmd: str, run_cmd: str, *, runs: int = 3, check_cmd: str | None = None,
                 rtol: float = 1e-5, timeout: float = 1800.0, log: Any = print, warmup: bool = True) -> AppComparison:
    out = AppComparison()
    for where in (before, after):
        b = run_app(build_cmd, where, timeout)
        out.builds.append(b)
        if b.rc != 0:
            from . import _tail

            raise UserError(f"auto: the build command {build_cmd!r} failed in {where} (exit {b.rc}): "
                            f"{_tail(b.stdout.decode('utf-8', 'replace'), 2)}",
                            file=str(where))
    if warmup:  # the first run after a build pays one-time costs (an OpenCL kernel compilation, lazy loading): not timed
        out.warmups = [run_app(run_cmd, before, timeout), run_app(run_cmd, after, timeout)]
    from s2s.base.devicelock import device_lock

    for k in range(max(1, runs)):  # alternated: before, after, before, after, ...
        with device_lock():  # each timed run alone on the device, as every timing of s2s is
            out.before.append(run_app(run_cmd, before, timeout))
        with device_lock():
            out.after.append(run_app(run_cmd, after, timeout))
        log(f"  run {k + 1}: original {out.before[-1].seconds:.3f} s, optimized {out.after[-1].seconds:.3f} s")
    if check_cmd:
        b_out, a_out = before / ".s2s-before-stdout.txt", after / ".s2s-after-stdout.txt"
        b_out.write_bytes(out.before[-1].stdout)
        a_out.write_bytes(out.after[-1].stdout)
        env = dict(os.environ, S2S_BEFORE_DIR=str(before), S2S_BEFORE_STDOUT=str(b_out), S2S_AFTER_STDOUT=str(a_out))
        chk = run_app(check_cmd, after, timeout, env=env)
        out.unchanged = chk.rc == 0 and all(r.rc == out.before[0].rc for r in out.after)
        said = [ln.strip() for ln in chk.stdout.decode("utf-8", "replace").splitlines() if ln.strip()][:2]
        out.how = f"--check-cmd {check_cmd!r} exited {chk.rc}" + (f": {' | '.join(said)}"[:400] if said and chk.rc else "")
        return out
    out.unchanged, out.how, out.numbers, out.ignored = same_output(out.before, out.after, rtol)
    return out
