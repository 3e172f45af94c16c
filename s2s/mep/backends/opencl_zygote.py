"""A pre-imported OpenCL harness: one process per s2s process, started on the first OpenCL evaluation, that has
imported numpy, pyopencl and opencl_runner and forks one child per evaluation, which runs opencl_runner's `main`.

A fresh `python -m s2s.mep.backends.opencl_runner` spent about half of a small evaluation's time (0.23 of 0.46 s on
the 2-core CI machine) starting Python and importing numpy, pyopencl and s2s's backends. The fork happens before
any OpenCL platform is asked for (the zygote only imports pyopencl; the ICD loader and PoCL start in each child),
so every child starts its driver as a fresh process would, from the environment of its request.

Each child is what `subprocess.Popen(argv, cwd=, env=, start_new_session=True)` gave: its own session (the
caller's `killpg` on a timeout kills it whole), its stdout and stderr on the caller's pipes, its cwd and its
environment (the driver's, the device lock's and the seed's variables are read in the child). `start` returns
None, and the caller starts the plain subprocess, when the zygote cannot serve the request: it does not start
(pyopencl missing: the plain harness then says so), the argv is not the runner's, a variable that numpy or pyopencl
read at import time differs from the zygote's, $S2S_OPENCL_ZYGOTE is 0, or the zygote died.

Nothing outlives s2s: the zygote ends when its control socket reaches EOF (s2s exited, however, kill -9 included)
or its parent changes, and SIGKILLs its children's groups first; each child asks for SIGKILL when the zygote ends
(opencl_runner's _die_with_parent, with $S2S_PARENT_PID the zygote's). The zygote's socket is closed in any
process that s2s forks, so that only s2s holds it.
"""
from __future__ import annotations

import array
import atexit
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

RUNNER_MODULE = "s2s.mep.backends.opencl_runner"
SWITCH = "S2S_OPENCL_ZYGOTE"  # 0: every evaluation starts a fresh Python (the plain subprocess)
# read by Python, numpy (OpenBLAS) or pyopencl when they start or import: a request that differs runs as a subprocess
IMPORT_ENV_PREFIXES = ("PYTHON", "OPENBLAS", "GOTO", "OMP_", "MKL_", "NUMPY", "PYOPENCL", "LD_")
READY_TIMEOUT_S = 120.0  # the zygote's imports on a loaded machine
ENTRY = f"from {__name__} import serve_fd; serve_fd()"  # not -m: the package imports this module first
MAX_MSG = 1 << 22  # one request: argv, cwd and the environment


# -- the caller's side -------------------------------------------------------------------------------------------
class Child:
    """A harness forked by the zygote, with what run_harness_process uses of a Popen: pid, stdout, stderr (text,
    undecodable bytes replaced), wait(timeout) raising TimeoutExpired, kill(), returncode."""

    def __init__(self, pid: int, reply: socket.socket, out_fd: int, err_fd: int, argv: list[str]) -> None:
        self.pid = pid
        self.args = argv
        self.returncode: int | None = None
        self._reply = reply
        self.stdout = open(out_fd, encoding=None, errors="replace")  # noqa: SIM115 (closed by the caller's reads)
        self.stderr = open(err_fd, encoding=None, errors="replace")  # noqa: SIM115

    def poll(self) -> int | None:
        return self.returncode if self.returncode is not None else self._read_exit(0.0)

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None and self._read_exit(timeout) is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        assert self.returncode is not None
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def _read_exit(self, timeout: float | None) -> int | None:
        ready, _, _ = select.select([self._reply], [], [], timeout)
        if not ready:
            return None
        msg = self._reply.recv(64)
        self._reply.close()
        # "exit RC"; nothing: the zygote died, and its children with it (SIGKILL, _die_with_parent)
        self.returncode = int(msg.split()[1]) if msg.startswith(b"exit ") else -int(signal.SIGKILL)
        return self.returncode


class Zygote:
    """The zygote process and its control socket, as this process started it."""

    def __init__(self, env: dict[str, str]) -> None:
        self.owner = os.getpid()
        self.import_env = _import_env(env)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock = ours
        self.lock = threading.Lock()
        try:
            self.proc = subprocess.Popen([sys.executable, "-c", ENTRY, str(theirs.fileno())], env=env,
                                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                         pass_fds=[theirs.fileno()], start_new_session=True)
        finally:
            theirs.close()
        ready, _, _ = select.select([ours], [], [], READY_TIMEOUT_S)
        if not ready or ours.recv(64) != b"ready":
            self.close()
            raise OSError("the OpenCL zygote did not start")

    def spawn(self, argv: list[str], cwd: Path, env: dict[str, str]) -> Child:
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        reply, child_reply = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            msg = json.dumps({"argv": argv[3:], "cwd": str(cwd), "env": env}).encode()
            fds = array.array("i", [child_reply.fileno(), out_w, err_w])
            with self.lock:
                self.sock.sendmsg([msg], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
        except OSError:
            for fd in (out_r, err_r):
                os.close(fd)
            reply.close()
            raise
        finally:
            child_reply.close()
            os.close(out_w)
            os.close(err_w)
        ready, _, _ = select.select([reply], [], [], READY_TIMEOUT_S)
        answer = reply.recv(64) if ready else b""
        if not answer.startswith(b"pid "):
            for fd in (out_r, err_r):
                os.close(fd)
            reply.close()
            raise OSError("the OpenCL zygote did not fork the harness")
        return Child(int(answer.split()[1]), reply, out_r, err_r, argv)

    def close(self) -> None:
        self.sock.close()  # the zygote's EOF: it kills its children and ends
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


_zygote: Zygote | None = None
_failed = False  # the zygote could not start or died: the plain subprocess from now on
_start_lock = threading.Lock()


def start(argv: list[str], cwd: Path, env: dict[str, str]) -> Child | None:
    """`argv` (the runner's command line) forked from the zygote, started on first use; None: run it as a subprocess."""
    global _zygote, _failed
    if os.environ.get(SWITCH, "1") == "0" or argv[:3] != [sys.executable, "-m", RUNNER_MODULE] or _failed:
        return None
    with _start_lock:
        if _zygote is None:
            try:
                _zygote = Zygote(env)
            except OSError:
                _failed = True
                return None
        zygote = _zygote
    if zygote.import_env != _import_env(env):
        return None
    try:
        return zygote.spawn(argv, cwd, env)
    except OSError:
        with _start_lock:
            _failed = True
            if _zygote is zygote:
                _zygote = None
                zygote.close()
        return None


def _import_env(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(IMPORT_ENV_PREFIXES)}


def stop() -> None:
    """End the zygote (at exit; a later evaluation starts another)."""
    global _zygote
    with _start_lock:
        if _zygote is not None and _zygote.owner == os.getpid():
            _zygote.close()
        _zygote = None


def _forget_in_child() -> None:
    """In a process forked from s2s (a scan worker): close the copy of the socket, so that s2s's exit still ends the
    zygote, and never use s2s's zygote (its children would be s2s's); a lock another thread held at the fork is free."""
    global _zygote, _start_lock
    if _zygote is not None:
        _zygote.sock.close()
    _zygote = None
    _start_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_in_child)
atexit.register(stop)


# -- the zygote --------------------------------------------------------------------------------------------------
def serve(control: socket.socket) -> None:
    """Fork one harness per request until the control socket closes or the parent changes."""
    before = dict(os.environ)
    import numpy  # noqa: F401 (imported once, here, for every child)
    import numpy.random  # noqa: F401 (the runner's fills import it when they start: 20 ms a child)
    import pyopencl  # noqa: F401

    from s2s.mep.backends import opencl_runner  # noqa: F401

    # what the imports put in the environment, as they would in a fresh harness (pyopencl's PYOPENCL_HOME, which the
    # ICD loader of its wheel reads, unchecked, on the first clGetPlatformIDs)
    imported = {k: v for k, v in os.environ.items() if before.get(k) != v}

    parent = os.getppid()
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    replies: dict[int, socket.socket] = {}
    control.send(b"ready")
    try:
        while os.getppid() == parent:
            ready, _, _ = select.select([control.fileno(), wake_r], [], [], 1.0)
            if wake_r in ready:
                os.read(wake_r, 4096)
            _reap(replies)
            if control.fileno() in ready:
                msg, anc, _flags, _addr = control.recvmsg(MAX_MSG, socket.CMSG_SPACE(3 * array.array("i").itemsize))
                if not msg:
                    break  # s2s closed its end or exited
                fds = array.array("i")
                for level, kind, data in anc:
                    if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                        fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
                _fork_one(json.loads(msg), list(fds), imported, control, (wake_r, wake_w), replies)
    finally:
        for pid in replies:
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def _fork_one(req: dict[str, object], fds: list[int], imported: dict[str, str], control: socket.socket,
              wake: tuple[int, int], replies: dict[int, socket.socket]) -> None:
    reply_fd, out_fd, err_fd = fds
    reply = socket.socket(fileno=reply_fd)
    sync_r, sync_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(sync_r)
        _child(req, imported, out_fd, err_fd, sync_w, [control.fileno(), reply_fd, *wake, *(r.fileno() for r in replies.values())])
    os.close(sync_w)
    os.read(sync_r, 1)  # the child is in its own session (or died): the caller's killpg reaches it
    os.close(sync_r)
    for fd in (out_fd, err_fd):
        os.close(fd)
    try:
        reply.send(f"pid {pid}".encode())
    except OSError:  # the caller gave up already
        os.killpg(pid, signal.SIGKILL)
    replies[pid] = reply


def _reap(replies: dict[int, socket.socket]) -> None:
    while replies:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        reply = replies.pop(pid, None)
        if reply is not None:
            try:
                reply.send(f"exit {os.waitstatus_to_exitcode(status)}".encode())
            except OSError:
                pass
            reply.close()


def _child(req: dict[str, object], imported: dict[str, str], out_fd: int, err_fd: int, sync_w: int, close: list[int]) -> None:
    """In the forked child: become what Popen(start_new_session=True) starts, then run the harness; never returns."""
    code = 1
    try:
        os.setsid()
        os.write(sync_w, b"1")
        os.close(sync_w)
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # SIGPIPE stays ignored, as Python's start leaves it
        signal.signal(signal.SIGINT, signal.default_int_handler)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        for fd in {null, out_fd, err_fd, *close} - {0, 1, 2}:
            os.close(fd)
        zygote = os.getppid()
        env = dict(req["env"])  # type: ignore[call-overload]
        env.update(imported)
        env["S2S_PARENT_PID"] = str(zygote)  # the harness dies with the zygote, which dies with s2s
        os.chdir(str(req["cwd"]))
        os.environ.clear()
        os.environ.update(env)
        argv = [str(a) for a in req["argv"]]  # type: ignore[attr-defined]
        _name("s2s-ocl-build" if "--build-only" in argv else "s2s-ocl-run")
        from s2s.mep.backends import opencl_runner

        sys.argv = [opencl_runner.__file__, *argv]
        try:
            code = opencl_runner.main(argv)
        except SystemExit as exc:  # argparse's errors, as the interpreter ends on them
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if exc.code is not None and not isinstance(exc.code, int):
                print(exc.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 (the child's own end, as an uncaught exception ends an interpreter)
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _name(name: str) -> None:
    """The child's name in ps and /proc/PID/comm (its command line is the zygote's)."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(15, name.encode()[:15])  # PR_SET_NAME
    except (OSError, AttributeError):
        pass


def serve_fd() -> None:
    """The zygote's entry: serve the control socket whose descriptor is its one argument."""
    control = socket.socket(fileno=int(sys.argv[1]))
    try:
        serve(control)
    except ImportError:
        pass  # no "ready": the caller runs the plain subprocess, which says what is missing
    finally:
        control.close()

