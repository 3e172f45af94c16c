"""Child commands in their own process group: on timeout, error, exit or signal the whole group is killed, so no
build or run outlives the step that started it. Output is streamed into a bounded buffer (its first and last
`keep` bytes), never held whole; `Interrupted` turns SIGTERM/SIGINT into an exception so callers can roll back.

A process that leaves the group (`setsid`, a daemon's double fork) is still ours: every command gets a marker in its
environment (S2S_RUN_ID, unique per command), which its descendants inherit, and whatever of ours still carries it
when the command ends is killed too (found through /proc/PID/environ; on Linux only). A process that starts with a
cleared environment (`env -i`) and leaves the session escapes this.
"""
from __future__ import annotations

import itertools
import os
import secrets
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

KEEP = 1 << 20  # bytes kept from the start and from the end of a command's output
MARKER = "S2S_RUN_ID"  # in every command's environment: its descendants are found by it, wherever their session
_live: dict[int, str] = {}  # process groups running now (from any thread) and their markers: a signal kills them all
_serial = itertools.count(1)


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived; `signo` says which. Not an Exception: only cleanup code catches it."""

    def __init__(self, signo: int, message: str = "") -> None:
        super().__init__(message or f"interrupted by {signal.Signals(signo).name}")
        self.signo = signo
        self.message = message or f"interrupted by {signal.Signals(signo).name}"


@contextmanager
def signals_raise() -> Iterator[None]:
    """Within the block, SIGTERM and SIGINT raise Interrupted (in the main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signo: int, _frame: object) -> None:
        kill_all()  # builds running in worker threads end now, so the threads return and the exception gets through
        raise Interrupted(signo)

    old = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


class BoundedOutput:
    """The first and the last `keep` bytes of a stream, and how many bytes were left out between them."""

    def __init__(self, keep: int = KEEP) -> None:
        self.keep = keep
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_len = 0
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.keep - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail.append(chunk)
            self.tail_len += len(chunk)
            while self.tail and self.tail_len - len(self.tail[0]) >= self.keep:
                self.tail_len -= len(self.tail.popleft())

    def bytes(self) -> bytes:
        tail = b"".join(self.tail)[-self.keep:] if self.tail else b""
        skipped = self.total - len(self.head) - len(tail)
        gap = f"\n[s2s: {skipped} bytes of output left out here]\n".encode() if skipped > 0 else b""
        return bytes(self.head) + gap + tail

    def text(self) -> str:
        return self.bytes().decode("utf-8", "replace")


@dataclass(frozen=True)
class Finished:
    returncode: int  # -N: killed by signal N; 124: timed out; 127: could not start
    output: str  # stdout and stderr together, bounded
    seconds: float
    timed_out: bool = False
    total_bytes: int = 0


@contextmanager
def tracked(pid: int, marker: str = "") -> Iterator[None]:
    """Group `pid` is killed with the others when a signal arrives (`kill_all`), and whatever way the block ends;
    with `marker` (its S2S_RUN_ID), so is every process that carries it, in whatever session."""
    _live[pid] = marker
    try:
        yield
    finally:
        _live.pop(pid, None)
        kill_group(pid)
        if marker:
            kill_marked(marker)


def kill_all() -> None:
    for pid, marker in list(_live.items()):
        kill_group(pid)
        if marker:
            kill_marked(marker)


def new_marker() -> str:
    """A value of S2S_RUN_ID no other command of any s2s on this machine has."""
    return f"{os.getpid()}.{next(_serial)}.{secrets.token_hex(4)}"


def marked(marker: str, var: str = MARKER) -> list[int]:
    """The live processes whose environment holds S2S_RUN_ID=`marker` (or `var`=`marker`: a caller's own variable,
    which every command s2s starts below it inherits) (those this user may read: ours)."""
    needle = f"{var}={marker}".encode()
    out: list[int] = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as fh:
                env = fh.read()
        except OSError:  # gone, or another user's
            continue
        if needle in env.split(b"\0"):  # a zombie's environment reads empty: only the living are found
            out.append(int(name))
    return out


def kill_until_none(members: Callable[[], Iterable[int]], timeout_s: float, pause_s: float = 0.02,
                    confirm_s: float = 0.02) -> bool:
    """SIGKILL the processes `members()` names until it names none twice, `confirm_s` apart (one that forks meanwhile
    is found on the next pass; a process in the middle of an execve reads an empty /proc/PID/environ, so one empty
    scan let a marked writer escape); False if some were still there after `timeout_s`. Every command s2s runs ends
    here twice (run_group): the pause is an execve's, not more (0.1 s added 0.2 s to every compile and run)."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = list(members())
        if not left:
            time.sleep(confirm_s)
            left = list(members())
            if not left:
                return True
        if time.monotonic() > deadline:
            return False
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(pause_s)


def kill_marked(marker: str, timeout_s: float = 5.0) -> bool:
    """SIGKILL every process carrying `marker` until none is left; False if some were still there after `timeout_s`."""
    return kill_until_none(lambda: marked(marker), timeout_s)


def kill_group(pid: int) -> None:
    """SIGKILL to every process of group `pid` (a no-op when none is left)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_group(cmd: list[str] | str, *, cwd: Path | str, timeout_s: float | None, env: Mapping[str, str] | None = None,
              keep: int = KEEP, log: Path | None = None, on_start: Callable[[int, str], None] | None = None) -> Finished:
    """Run `cmd` (an argument vector; a string only for the user's own --build-cmd/--run-cmd/--test-cmd, through
    /bin/sh) in a new session. The group is killed when the command ends, times out or this process is interrupted.
    `log`: the bounded output is also written there. `on_start(pid, marker)`: told the new session's id and the
    command's marker first (a journal records them, so that a later `--restore` can end what a killed s2s left
    running, also what left the session). Every process the command starts
    carries S2S_RUN_ID in its environment and is killed when it ends, even one that left the session."""
    t0 = time.monotonic()
    marker = new_marker()
    try:
        proc = subprocess.Popen(cmd, shell=isinstance(cmd, str), cwd=cwd,
                                env={**(os.environ if env is None else env), MARKER: marker},
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True)
    except OSError as exc:
        return Finished(127, f"cannot start {cmd if isinstance(cmd, str) else cmd[0]}: {exc}", time.monotonic() - t0)
    if on_start is not None:
        try:
            on_start(proc.pid, marker)
        except BaseException:
            kill_group(proc.pid)
            proc.wait()
            kill_marked(marker)
            raise
    out = BoundedOutput(keep)
    assert proc.stdout is not None
    stream = proc.stdout

    def pump() -> None:
        for chunk in iter(lambda: stream.read1(1 << 16), b""):  # type: ignore[attr-defined]
            out.feed(chunk)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    timed_out = False
    with tracked(proc.pid, marker):
        try:
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
        finally:
            if proc.poll() is None:
                kill_group(proc.pid)
            proc.wait()
            kill_group(proc.pid)  # leftovers too: nothing the command started outlives it
            kill_marked(marker)  # nor what left its session (tracked's exit looks once more)
            reader.join(timeout=5)
            stream.close()
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as fh:
            fh.write(out.bytes())
    rc = 124 if timed_out else proc.returncode
    return Finished(rc, out.text(), time.monotonic() - t0, timed_out, out.total)
