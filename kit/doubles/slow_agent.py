"""A stand-in for a model-backed agent: it answers after a fixed latency and counts its calls in flight.

    KIT_AGENT=kit.doubles.slow_agent:sync_agent     # time.sleep, for threads
    KIT_AGENT=kit.doubles.slow_agent:async_agent    # asyncio.sleep, for an event loop

SLOW_AGENT_LATENCY: seconds per call (default 0.4). SLOW_AGENT_COUNTS: a folder where every call, in any
process, counts itself under an flock: `calls` (one byte per call), `now` (in flight) and `peak` (the most
ever in flight at once). What the concurrency tests and bench/real_agent.py read.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def latency() -> float:
    return float(os.environ.get("SLOW_AGENT_LATENCY", "0.4"))


def _counts() -> Path | None:
    folder = os.environ.get("SLOW_AGENT_COUNTS")
    return Path(folder) if folder else None


def _bump(delta: int) -> None:
    folder = _counts()
    if folder is None:
        return
    with open(folder / "lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        now = read(folder, "now") + delta
        (folder / "now").write_text(str(now))
        if delta > 0:
            with open(folder / "calls", "a") as calls:
                calls.write("x")
            if now > read(folder, "peak"):
                (folder / "peak").write_text(str(now))


def read(folder: Path, name: str) -> int:
    """A counter (`now`, `peak`) or, for `calls`, the number of calls made."""
    try:
        text = (folder / name).read_text()
    except FileNotFoundError:
        return 0
    return len(text) if name == "calls" else int(text or 0)


@contextlib.contextmanager
def _in_flight() -> Iterator[None]:
    _bump(1)
    try:
        yield
    finally:
        _bump(-1)


def _trace(text: Any) -> dict[str, Any]:
    return {"final_output": f"echo {text}", "finish_reason": "finish", "spans": []}


def sync_agent(text: Any) -> dict[str, Any]:
    with _in_flight():
        time.sleep(latency())
    return _trace(text)


async def async_agent(text: Any) -> dict[str, Any]:
    with _in_flight():
        await asyncio.sleep(latency())
    return _trace(text)
