"""One DuckDB connection at a time across processes: an flock around every open, with patient retries.

Writers never come here (they append to their spools); only mergers and readers do, briefly. A process
outside the kit (say, the duckdb CLI) holding the file is waited for, never reported as an error until
the timeout passes.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from kit import duck
from kit.errors import KitInputError

if TYPE_CHECKING:
    import duckdb

# None: the settings' store_lock_timeout (KIT_STORE_LOCK_TIMEOUT), read when a writer first waits.
DEFAULT_TIMEOUT_S: float | None = None


def _default_timeout() -> float:
    if DEFAULT_TIMEOUT_S is not None:
        return DEFAULT_TIMEOUT_S
    from kit.settings import process_settings

    return process_settings().store_lock_timeout


class StoreBusyError(RuntimeError):
    """The store stayed locked for longer than the timeout."""


class StoreError(KitInputError):
    """The store cannot be used as it is (not a DuckDB file, a folder, a full disk): exit 2, naming it."""


# Locks each thread of this process holds, so a nested `store.connect()` (or a merge inside one) re-enters
# instead of waiting on itself: flock treats a second open of the same file as a stranger. Per thread: another
# thread of the process (two in-process stages of `make evals`) is a stranger too, and waits its turn.
_held: dict[tuple[int, int, str], int] = {}
_held_guard = threading.Lock()


@contextlib.contextmanager
def exclusive(lock_path: Path, timeout_s: float | None = None) -> Iterator[None]:
    timeout_s = _default_timeout() if timeout_s is None else timeout_s
    key = (os.getpid(), threading.get_ident(), str(lock_path.resolve()))
    with _held_guard:
        if key in _held:
            _held[key] += 1
            reentered = True
        else:
            reentered = False
    if reentered:
        try:
            yield
        finally:
            with _held_guard:
                _held[key] -= 1
        return
    try:
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise StoreError(f"cannot take the store lock: {e.strerror or e}", file=str(lock_path)) from None
    try:
        deadline = time.monotonic() + timeout_s
        delay = 0.001
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise StoreBusyError(f"{lock_path}: still locked after {timeout_s:.0f}s") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.05)
        with _held_guard:
            _held[key] = 1
        try:
            yield
        finally:
            with _held_guard:
                _held.pop(key, None)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def connect(db_path: Path, timeout_s: float | None = None) -> duckdb.DuckDBPyConnection:
    """Open the file, waiting out a lock held by some other program."""
    import duckdb

    timeout_s = _default_timeout() if timeout_s is None else timeout_s
    deadline = time.monotonic() + timeout_s
    delay = 0.01
    while True:
        try:
            return duck.connect(str(db_path))
        except duckdb.IOException as e:
            if "lock" not in str(e).lower() or time.monotonic() > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.5)
