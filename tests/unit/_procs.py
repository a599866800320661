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
