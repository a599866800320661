"""Per-process journal files: how many processes write to one store at once without a lock.

DuckDB lets one process write at a time. Instead of queueing on that lock, every writer appends JSON lines
to its own spool file (one `os.write` per event, so a finished `record()` is in the kernel's hands and
survives SIGKILL of the writer). The merger (`kit.store.merge`) folds the spools into the DuckDB file.
"""

from __future__ import annotations

import os
import socket
import threading
import uuid
from pathlib import Path
from typing import Any

from kit.store.values import encode_line

SUFFIX = ".jsonl"


def spool_dir(store_path: Path) -> Path:
    return store_path.with_name(store_path.name + ".spool")


def process_identity(pid: int | None = None) -> str:
    """host:pid:start-time. The start time tells a live writer from a later process that reused its pid."""
    pid = os.getpid() if pid is None else pid
    return f"{socket.gethostname()}:{pid}:{_start_time(pid)}"


def _start_time(pid: int) -> str:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return "?"
    # Field 22 (starttime) counts from after the ")" that closes the command name, which may hold spaces.
    return stat.rsplit(")", 1)[1].split()[19]


def is_alive(identity: str | None) -> bool:
    """False only when we can tell the owner is gone: same host, and its pid is dead or reused."""
    if not identity:
        return False
    try:
        host, pid_s, started = identity.split(":")
        pid = int(pid_s)
    except ValueError:
        return False
    if host != socket.gethostname():
        return True  # another machine's writer: assume alive rather than mislabel its run
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return started == "?" or _start_time(pid) == started


def identity_of_spool(name: str) -> str:
    """Spool names are `<host>:<pid>:<start>~<uuid>.jsonl`, so the merger can tell whose file it is."""
    return name.split("~", 1)[0]


class SpoolWriter:
    """Appends events for this process. Re-opens a fresh file after fork, so two processes never share one."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._fd: int | None = None
        self._pid: int | None = None
        self._seq = 0  # lines written to this file: the merger tells a lost record by a gap
        self.path: Path | None = None
        # One writer at a time per process: two threads sharing a store once opened a file each and wrote the
        # same line numbers, the numbers the merger reads to tell a cut file and the records lost with it.
        self._lock = threading.Lock()
        self._lock_pid = os.getpid()

    def _guard(self) -> threading.Lock:
        if self._lock_pid != os.getpid():  # a forked child: the parent's lock may have been held at the fork
            self._lock, self._lock_pid = threading.Lock(), os.getpid()
        return self._lock

    def _open(self) -> int:
        if self._fd is not None and self._pid == os.getpid():
            return self._fd
        self.directory.mkdir(parents=True, exist_ok=True)
        self._pid = os.getpid()
        self._seq = 0
        name = f"{process_identity()}~{uuid.uuid4().hex[:12]}{SUFFIX}"
        self.path = self.directory / name
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        return self._fd

    def write(self, event: dict[str, Any]) -> None:
        self.write_many([event])

    def write_many(self, events: list[dict[str, Any]]) -> None:
        if not events:
            return
        with self._guard():
            fd = self._open()
            first = self._seq + 1
            lines = [encode_line({**event, "seq": first + i}) for i, event in enumerate(events)]
            data = b"\n".join(lines) + b"\n"
            view = memoryview(data)
            while view:  # a regular file takes it all at once; loop only for safety against short writes
                written = os.write(fd, view)
                view = view[written:]
            self._seq += len(events)

    def sync(self) -> None:
        if self._fd is not None and self._pid == os.getpid():
            os.fsync(self._fd)

    def close(self) -> None:
        with self._guard():
            if self._fd is not None and self._pid == os.getpid():
                os.close(self._fd)
            self._fd = None
