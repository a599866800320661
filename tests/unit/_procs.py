"""Waiting on processes the tests start and expect to end."""

from __future__ import annotations

import os
import time
from collections.abc import Callable


def gone(pid: int) -> bool:
    """Whether no process has `pid` any more."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def wait_for(what: Callable[[], bool], seconds: float) -> bool:
    """Whether `what()` came true within `seconds` (asked every 50 ms, and once more at the end)."""
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        if what():
            return True
        time.sleep(0.05)
    return what()


def under_a_tracer() -> bool:
    """Whether this process is being traced (the suite run under `strace -f`): a tracer started here could not
    attach to its child, as a process has one tracer at most."""
    try:
        with open("/proc/self/status") as f:
            return any(line.split()[1:] not in ([], ["0"]) for line in f if line.startswith("TracerPid:"))
    except OSError:
        return False
