"""A cap on agent calls in flight across processes: N lock files in one folder, one call per file.

    env = prepare(8)            # the pipeline: a fresh folder for one `make evals`, as KIT_SLOTS_DIR
    slots = from_env()          # every process that calls the agent (None when the variable is unset)
    with slots.held():          # a sync call (threads wait in the kernel on a gate, one of them scans)
        ...
    async with slots.held_async():  # an `async def` agent's call (polls, never blocks the event loop)
        ...

A slot is an exclusive `flock` on `slot-<i>`: the kernel drops it when its holder's file is closed,
so a process that dies (SIGKILL included) frees its slots at once. Locks belong to open files, not to
processes or threads, so each process opens its own files (again after a fork) and tracks which slots
its own threads hold. The folder's `size` file holds N, so every process agrees on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import random
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

ENV_DIR = "KIT_SLOTS_DIR"
SIZE_FILE = "size"
POLL_S = (0.001, 0.01)  # a waiter's first and longest pause between scans


def prepare(n: int, parent: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """A fresh slots folder for `n` calls in flight; returns the environment the processes that share it
    need (KIT_SLOTS_DIR and KIT_CONCURRENCY). The caller removes the folder when they are done."""
    if n < 1:
        raise ValueError(f"concurrency must be at least 1, got {n}")
    folder = Path(tempfile.mkdtemp(prefix="kit-slots-", dir=parent))
    (folder / SIZE_FILE).write_text(str(n))
    return {ENV_DIR: str(folder), "KIT_CONCURRENCY": str(n)}


def from_env(environ: dict[str, str] | None = None) -> Slots | None:
    """The slots the settings this process runs under name (kit.settings.current_settings: the plan
    document's `slots_dir`, else KIT_SLOTS_DIR; N from the folder, else `concurrency`), or None when unset.
    `environ`: the environment to read (default: this process's)."""
    from kit.settings import current_settings

    settings = current_settings(environ)
    if settings.slots_dir is None:
        return None
    return _shared(str(settings.slots_dir), str(settings.concurrency))


_SHARED: dict[str, Slots] = {}
_SHARED_LOCK = threading.Lock()


def _shared(folder: str, fallback: str) -> Slots:
    """One Slots per folder in a process: its threads must see each other's slots."""
    with _SHARED_LOCK:
        found = _SHARED.get(folder)
        if found is None:
            path = Path(folder)
            try:
                n = int((path / SIZE_FILE).read_text().strip())
            except (OSError, ValueError):
                try:
                    n = int(fallback)
                except ValueError:
                    n = 1
            found = _SHARED[folder] = Slots(path, max(1, n))
        return found


class Slots:
    def __init__(self, folder: Path, n: int) -> None:
        self.folder, self.n = Path(folder), n
        self._lock = threading.Lock()  # guards the files and `mine`
        self._gate = threading.Lock()  # one scanning thread per process (the gate file: per machine)
        self._pid = -1
        self._fds: list[int] = []
        self._gate_fd = -1
        self._mine: set[int] = set()

    def _files(self) -> list[int]:
        """This process's own open slot files (reopened after a fork: a child must not share the parent's)."""
        if self._pid != os.getpid():
            self.folder.mkdir(parents=True, exist_ok=True)
            flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC
            self._fds = [os.open(self.folder / f"slot-{i}", flags, 0o644) for i in range(self.n)]
            self._gate_fd = os.open(self.folder / "gate", flags, 0o644)
            self._mine = set()
            self._gate = threading.Lock()
            self._pid = os.getpid()
        return self._fds

    def try_acquire(self) -> int | None:
        """A free slot's number, now held, or None when all N are taken."""
        with self._lock:
            fds = self._files()
            start = random.randrange(self.n)  # spread the scans over the files
            for k in range(self.n):
                i = (start + k) % self.n
                if i in self._mine:
                    continue
                try:
                    fcntl.flock(fds[i], fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue
                self._mine.add(i)
                return i
        return None

    def release(self, i: int) -> None:
        with self._lock:
            if i in self._mine and self._pid == os.getpid():
                fcntl.flock(self._fds[i], fcntl.LOCK_UN)
                self._mine.discard(i)

    def acquire(self) -> int:
        """Wait for a slot. Waiters queue on the gate (in the kernel, no CPU); the one through it scans."""
        got = self.try_acquire()
        if got is not None:
            return got
        with self._gate:
            with self._lock:
                self._files()
                gate_fd = self._gate_fd
            fcntl.flock(gate_fd, fcntl.LOCK_EX)
            try:
                pause = POLL_S[0]
                while (got := self.try_acquire()) is None:
                    time.sleep(pause)
                    pause = min(pause * 1.5, POLL_S[1])
                return got
            finally:
                fcntl.flock(gate_fd, fcntl.LOCK_UN)

    async def acquire_async(self) -> int:
        pause = POLL_S[0]
        while (got := self.try_acquire()) is None:
            await asyncio.sleep(pause)
            pause = min(pause * 1.5, POLL_S[1])
        return got

    @contextlib.contextmanager
    def held(self) -> Iterator[int]:
        i = self.acquire()
        try:
            yield i
        finally:
            self.release(i)

    @contextlib.asynccontextmanager
    async def held_async(self) -> AsyncIterator[int]:
        i = await self.acquire_async()
        try:
            yield i
        finally:
            self.release(i)
