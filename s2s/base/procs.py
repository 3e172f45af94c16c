"""Child commands in their own process group: on timeout, error, exit or signal the whole group is killed, so no
build or run outlives the step that started it. Output is streamed into a bounded buffer (its first and last
`keep` bytes), never held whole; `Interrupted` turns SIGTERM/SIGINT into an exception so callers can roll back.
"""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

KEEP = 1 << 20  # bytes kept from the start and from the end of a command's output
_live: set[int] = set()  # process groups running now (from any thread): a signal kills them all


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
def tracked(pid: int) -> Iterator[None]:
    """Group `pid` is killed with the others when a signal arrives (`kill_all`), and whatever way the block ends."""
    _live.add(pid)
    try:
        yield
    finally:
        _live.discard(pid)
        kill_group(pid)


def kill_all() -> None:
    for pid in list(_live):
        kill_group(pid)


def kill_group(pid: int) -> None:
    """SIGKILL to every process of group `pid` (a no-op when none is left)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_group(cmd: list[str] | str, *, cwd: Path | str, timeout_s: float | None, env: Mapping[str, str] | None = None,
              keep: int = KEEP, log: Path | None = None, on_start: Callable[[int], None] | None = None) -> Finished:
    """Run `cmd` (an argument vector; a string only for the user's own --build-cmd/--run-cmd/--test-cmd, through
    /bin/sh) in a new session. The group is killed when the command ends, times out or this process is interrupted.
    `log`: the bounded output is also written there. `on_start(pid)`: told the new session's id first (a journal
    records it, so that a later `--restore` can end what a killed s2s left running)."""
    t0 = time.monotonic()
    try:
        proc = subprocess.Popen(cmd, shell=isinstance(cmd, str), cwd=cwd, env=dict(env) if env is not None else None,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True)
    except OSError as exc:
        return Finished(127, f"cannot start {cmd if isinstance(cmd, str) else cmd[0]}: {exc}", time.monotonic() - t0)
    if on_start is not None:
        try:
            on_start(proc.pid)
        except BaseException:
            kill_group(proc.pid)
            proc.wait()
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
    with tracked(proc.pid):
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
            reader.join(timeout=5)
            stream.close()
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as fh:
            fh.write(out.bytes())
    rc = 124 if timed_out else proc.returncode
    return Finished(rc, out.text(), time.monotonic() - t0, timed_out, out.total)
