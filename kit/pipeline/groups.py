"""The process groups of the stages' tools, ended with `make evals`.

Each tool runs in a process group of its own (so a deadline can kill it with its children), which also
puts it out of reach of the terminal's Ctrl-C and of a parent that dies. So the groups now running are
known here, and:
- SIGTERM, SIGINT or SIGHUP to the pipeline ends every group (TERM, a moment, then KILL), then the pipeline;
- the pipeline's parent (make) dying does the same, as a SIGTERM would;
- the pipeline dying any other way (SIGKILL, a crash) is seen by a guard process, which holds the other end
  of a pipe from the pipeline: at its end of file it ends every group still running, and every process that
  carries the pipeline's mark in its environment (each tool gets it, and its children inherit it): a tool
  started but not yet listed when the pipeline died, and whatever it started.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import IO

GRACE_S = 1.0  # seconds a group has to exit after TERM before KILL
PARENT_POLL_S = 0.5  # how often the pipeline asks whether its parent is still there
ENDING = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)

MARK = "KIT_STAGE_GUARD"  # the environment variable each tool gets, holding its pipeline's mark
# Run by `python -I -S -c _GUARD GRACE_S MARK=VALUE`: reads "+pgid" / "-pgid" lines; at end of file (the pipeline is
# gone, however it went), ends the groups still listed and the processes that carry the mark (read from /proc
# where there is one). It ignores the signals that end the pipeline, so a Ctrl-C sent to the whole terminal
# cannot take it down first.
_GUARD = """
import os, signal, sys, time
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(s, signal.SIG_IGN)
mark = sys.argv[2].encode()
live = set()
for line in sys.stdin:
    (live.add if line[0] == "+" else live.discard)(int(line[1:]))

def marked():
    found = set()
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if name.isdigit():
            try:
                with open("/proc/" + name + "/environ", "rb") as f:
                    if mark in f.read().split(bytes(1)):
                        found.add(int(name))
            except OSError:
                pass
    return found

def leads(pid):
    try:
        return os.getpgid(pid) == pid
    except OSError:
        return False

for sig in (signal.SIGTERM, signal.SIGKILL):
    strays = marked()
    for pgid in live | {pid for pid in strays if leads(pid)}:
        try:
            os.killpg(pgid, sig)
        except OSError:
            pass
    for pid in strays:
        try:
            os.kill(pid, sig)
        except OSError:
            pass
    if sig == signal.SIGTERM and (live or strays):
        time.sleep(float(sys.argv[1]))
"""

_lock = threading.Lock()
_live: set[int] = set()
_guard: IO[str] | None = None
_mark = ""  # this process's mark, set with its guard
LAUNCH_WAIT_S = 2.0  # how long a stopping pipeline waits for the groups being started to be listed
_launching = 0  # stage threads between starting a tool and listing its group
_main_launching = False  # the main thread is there (a stage that runs alone)
_deferred: int | None = None  # a stop signal that came meanwhile, acted on once the group is listed


def _start_guard() -> IO[str]:
    """This process's guard, started on first use (the caller holds `_lock`)."""
    global _guard, _mark
    if _guard is None:
        _mark = f"{os.getpid()}-{secrets.token_hex(8)}"
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _GUARD, str(GRACE_S), f"{MARK}={_mark}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            text=True,
        )
        assert proc.stdin is not None
        _guard = proc.stdin
    return _guard


def _tell_guard(line: str) -> None:
    guard = _start_guard()
    try:
        guard.write(line + "\n")
        guard.flush()
    except OSError:  # the guard is gone: the signal handlers still end the groups
        pass


def marked() -> dict[str, str]:
    """The environment entry each tool is started with: the guard ends what carries it, listed or not."""
    with _lock:
        _start_guard()
        return {MARK: _mark}


def started(pgid: int) -> None:
    """A tool's process group is running."""
    with _lock:
        _live.add(pgid)
        _tell_guard(f"+{pgid}")


def ended(pgid: int) -> None:
    """A tool's process group is done with (reaped, or killed)."""
    with _lock:
        _live.discard(pgid)
        _tell_guard(f"-{pgid}")


@contextlib.contextmanager
def launching() -> Iterator[None]:
    """Around a tool's start and its `started()`: a stop signal that comes in between never leaves that group
    unlisted, so running after the pipeline. On another thread the signal's handler (on the main thread) waits for
    the group to be listed; on the main thread, where the handler would run before the listing, it is acted on
    right after it."""
    global _launching, _main_launching
    if threading.current_thread() is threading.main_thread():
        _main_launching = True
        try:
            yield
        finally:
            _main_launching = False
            if _deferred is not None:
                _end(_deferred, None)
        return
    with _lock:
        _launching += 1
    try:
        yield
    finally:
        with _lock:
            _launching -= 1


def kill_group(pgid: int) -> None:
    """End one process group: TERM, a moment to exit, then KILL."""
    kill_groups([pgid])


def kill_groups(pgids: list[int]) -> None:
    """End process groups together: TERM to each, up to GRACE_S for all to exit, then KILL to any left."""
    left = []
    for pgid in pgids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGTERM)
            left.append(pgid)
    until = time.monotonic() + GRACE_S
    while left and time.monotonic() < until:
        time.sleep(0.05)
        left = [g for g in left if _alive(g)]
    for pgid in left:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)


def _alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _end(signum: int, _frame: object) -> None:
    """The pipeline is told to stop: its stages' groups end first, then it exits as the signal says."""
    global _deferred
    if _main_launching:
        _deferred = signum
        return
    with contextlib.suppress(Exception):  # never a lock here: the main thread may hold it
        until = time.monotonic() + LAUNCH_WAIT_S
        while _launching and time.monotonic() < until:
            time.sleep(0.01)
        live = _copy_live()
        kill_groups(live)
        name = signal.Signals(signum).name
        os.write(2, f"\nmake evals: stopped by {name}; {len(live)} stage process group(s) ended\n".encode())
    os._exit(128 + signum)


def _copy_live() -> list[int]:
    for _ in range(10):  # another thread may add or drop a group while it is copied
        with contextlib.suppress(RuntimeError):
            return sorted(_live)
    return []


@contextlib.contextmanager
def ending_with_this_process() -> Iterator[None]:
    """While stages run: the signals that stop the pipeline, and its parent's death, end their groups too.
    Off the main thread (where no handler can be set) only the guard holds. The guard starts here, before any
    stage: started at a stage's first group, a pipeline killed outright while it started would leave that group
    running."""
    with _lock:
        _start_guard()
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {sig: signal.signal(sig, _end) for sig in ENDING}
    parent, done, main = os.getppid(), threading.Event(), threading.get_ident()

    def watch_parent() -> None:
        while not done.wait(PARENT_POLL_S):
            if os.getppid() != parent:  # reparented: whoever started make evals is gone
                # To the main thread, whose handler ends the groups. Sent to the process, the signal may be
                # taken by this thread (always under strace -f), leaving the main thread asleep in its join.
                signal.pthread_kill(main, signal.SIGTERM)
                return

    watcher = threading.Thread(target=watch_parent, name="parent-watch", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        for sig, handler in before.items():
            signal.signal(sig, handler)
