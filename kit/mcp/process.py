"""Processes the kit's MCP server is tied to: a process is its pid and its start time (`/proc/<pid>/stat`), so a
file made for one process is never taken for a later process that reuses the pid."""

from __future__ import annotations

import os
from pathlib import Path

PROC = Path("/proc")


def start_time(pid: int) -> int | None:
    """When `pid` started (clock ticks since boot, field 22 of /proc/<pid>/stat), None when there is no such
    process (or no /proc to ask)."""
    try:
        stat = (PROC / str(pid) / "stat").read_text(encoding="ascii", errors="replace")
    except (OSError, ValueError):
        return None
    # The command name (field 2) is in parentheses and may hold spaces or ')': the fields after its last ')'.
    fields = stat[stat.rfind(")") + 2 :].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def parent_of(pid: int) -> int | None:
    try:
        stat = (PROC / str(pid) / "stat").read_text(encoding="ascii", errors="replace")
        return int(stat[stat.rfind(")") + 2 :].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def identity(pid: int | None = None) -> tuple[int, int | None]:
    """(pid, start time) of a process (default: this one)."""
    pid = os.getpid() if pid is None else pid
    return pid, start_time(pid)


def alive(pid: int, started: int | None) -> bool:
    """Whether the process that started at `started` as `pid` still runs (not a later one given its pid)."""
    now = start_time(pid)
    if now is None:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except (PermissionError, OSError):
            return True
        return started is None  # no /proc: the pid alone
    return now == started
