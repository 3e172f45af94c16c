"""The sessions our child commands run in, found again after we died: `run_group` starts each command as a session
leader, so every process it forks keeps that session id, even one that left the process group. A journal records
(session id, leader's start time); `end_session` kills what is left of it before the originals are put back.

Linux keeps a pid from reuse while a session or group of that id lives, so members with the recorded id are ours
when the leader is gone; a live leader whose start time differs is a stranger that got the number later: left alone.
"""
from __future__ import annotations

import os

import psutil


def start_time(pid: int) -> float | None:
    try:
        return float(psutil.Process(pid).create_time())
    except (psutil.Error, OSError):
        return None


def _members(sid: int, started: float) -> list[int]:
    leader = start_time(sid) if _alive(sid) else None
    if leader is not None and abs(leader - started) > 0.05:
        return []  # the number was reused by another process
    out = []
    for pid in psutil.pids():
        try:
            if os.getsid(pid) != sid or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                continue
        except (OSError, psutil.Error):
            continue
        born = start_time(pid)
        if born is not None and born + 0.05 >= started:
            out.append(pid)
    return out


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def end_session(sid: int, started: float, timeout_s: float = 10.0) -> bool:
    """SIGKILL every live process of session `sid` (begun at `started`); True once none is left."""
    from .procs import kill_until_none

    return kill_until_none(lambda: _members(sid, started), timeout_s, pause_s=0.05)
