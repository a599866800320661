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


def environment(pid: int) -> dict[str, str] | None:
    """The environment `pid` was started with (/proc/<pid>/environ), None when it cannot be read."""
    try:
        raw = (PROC / str(pid) / "environ").read_bytes()
    except OSError:
        return None
    out: dict[str, str] = {}
    for item in raw.split(b"\0"):
        name, sep, value = item.partition(b"=")
        if sep:
            out[name.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
    return out


def working_folder(pid: int) -> Path | None:
    try:
        return Path(os.readlink(PROC / str(pid) / "cwd"))
    except OSError:
        return None


def from_ancestors(names: tuple[str, ...], *, levels: int = 8) -> tuple[dict[str, str], Path | None]:
    """The variables `names` as the nearest ancestor process that has any of them was started with, and that
    process's working folder (what a relative path among them is relative to): an MCP client (the SDK's stdio
    client) hands its server only a few variables of its own environment, so what the agent was run with is
    read from the agent's process itself. ({}, None) when no ancestor has any."""
    pid = os.getppid()
    for _ in range(levels):
        if pid <= 1:
            break
        env = environment(pid)
        found = {k: env[k] for k in names if env and (env.get(k) or "").strip()}
        if found:
            return found, working_folder(pid)
        parent = parent_of(pid)
        if parent is None:
            break
        pid = parent
    return {}, None
