"""A stand-in for a model-backed agent: it answers after a fixed latency and counts its calls in flight.

    KIT_AGENT=kit.doubles.slow_agent:sync_agent     # time.sleep, for threads
    KIT_AGENT=kit.doubles.slow_agent:async_agent    # asyncio.sleep, for an event loop

SLOW_AGENT_LATENCY: seconds per call (default 0.4). SLOW_AGENT_COUNTS: a folder where every call, in any
process, counts itself under an flock: `calls` (one byte per call), `now` (in flight) and `peak` (the most
ever in flight at once). What the concurrency tests and bench/real_agent.py read. SLOW_AGENT_MEET=N (with
the counts): after its latency, a call stays in flight until N calls were in flight at once, for at most
MEET_WAIT_S: a cap of N is reached however late a loaded machine starts the hosts that make up the N.
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

MEET_WAIT_S = 5.0


def latency() -> float:
    return float(os.environ.get("SLOW_AGENT_LATENCY", "0.4"))


def _waiting(deadline: float) -> bool:
    """Whether this call still waits for SLOW_AGENT_MEET calls to have been in flight at once."""
    meet, folder = int(os.environ.get("SLOW_AGENT_MEET") or 0), _counts()
    return bool(meet and folder) and read(folder, "peak") < meet and time.monotonic() < deadline


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
        deadline = time.monotonic() + MEET_WAIT_S
        while _waiting(deadline):
            time.sleep(0.01)
    return _trace(text)


async def async_agent(text: Any) -> dict[str, Any]:
    with _in_flight():
        await asyncio.sleep(latency())
        deadline = time.monotonic() + MEET_WAIT_S
        while _waiting(deadline):
            await asyncio.sleep(0.01)
    return _trace(text)
