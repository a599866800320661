"""Running many independent jobs with a per-job timeout: in worker processes, in threads, or in turn.

Processes are the default: the agent and the checks are Python, so threads share one core under the GIL.
The pool is our own rather than concurrent.futures' because a hung job must be killable on its own:
its worker is killed and replaced, the job is reported as a timeout, and the other jobs go on.
Workers are forked, so they inherit the loaded suite and agent; only job indices and results cross.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import queue
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any, Generic, TypeVar

J = TypeVar("J")
R = TypeVar("R")

MODES = ("process", "thread", "serial")
GRACE_S = 2.0  # after the timeout, how long a job may still take to report (its own soft timeout fires first)

OnResult = Callable[[int, Any], None]
OnFailure = Callable[[int, str], None]


def default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def execute(
    jobs: Sequence[J],
    work: Callable[[J], R],
    *,
    mode: str = "process",
    workers: int | None = None,
    timeout: float | None = None,
    on_result: OnResult,
    on_failure: OnFailure,
) -> None:
    """Run `work(job)` for every job; report each as `on_result(i, r)` or `on_failure(i, why)`.

    `work` should not raise (the runner's job function records its own errors); if it does, or its worker
    dies, or it overruns `timeout` (+ a grace period), that job is reported through `on_failure`.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    n = min(workers or default_workers(), len(jobs))
    if mode == "serial" or n <= 1:
        for i, job in enumerate(jobs):
            try:
                on_result(i, work(job))
            except Exception as e:
                on_failure(i, f"{type(e).__name__}: {e}")
        return
    pool = _ProcessPool(jobs, work, n, timeout) if mode == "process" else _ThreadPool(jobs, work, n, timeout)
    pool.run(on_result, on_failure)


# --- processes ------------------------------------------------------------------------------------------


PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int) -> None:
    """Ask Linux to SIGKILL this process when its parent dies, so a killed run leaves no worker behind
    (a worker reparented to PID 1 would run its agent on, unseen). Elsewhere a no-op: the workers still
    stop at the end of a run, just not on a SIGKILL of their parent."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        return
    if os.getppid() != parent:  # the parent died before the request was made
        os._exit(1)


def _worker_main(conn: Connection, jobs: Sequence[Any], work: Callable[[Any], Any], parent: int) -> None:
    die_with_parent(parent)
    while True:
        try:
            i = conn.recv()
        except (EOFError, KeyboardInterrupt):
            return
        if i is None:
            return
        try:
            conn.send((i, True, work(jobs[i])))
        except Exception as e:
            conn.send((i, False, f"{type(e).__name__}: {e}"))


class _Proc:
    def __init__(self, ctx: Any, jobs: Sequence[Any], work: Callable[[Any], Any]) -> None:
        parent, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main, args=(child, jobs, work, os.getpid()), daemon=True)
        self.proc.start()
        child.close()
        self.conn: Connection = parent
        self.job: int | None = None
        self.deadline = float("inf")

    def give(self, i: int, timeout: float | None) -> None:
        self.job = i
        self.deadline = time.monotonic() + timeout + GRACE_S if timeout else float("inf")
        self.conn.send(i)

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.conn.send(None)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.join(1)
        self.conn.close()


class _ProcessPool(Generic[J, R]):
    def __init__(self, jobs: Sequence[J], work: Callable[[J], R], n: int, timeout: float | None) -> None:
        self.jobs, self.work, self.n, self.timeout = jobs, work, n, timeout
        self.ctx = mp.get_context("fork")

    def run(self, on_result: OnResult, on_failure: OnFailure) -> None:
        todo = deque(range(len(self.jobs)))
        procs = [_Proc(self.ctx, self.jobs, self.work) for _ in range(self.n)]
        try:
            for p in procs:
                p.give(todo.popleft(), self.timeout)
            while True:
                busy = [p for p in procs if p.job is not None]
                if not busy:
                    break
                wait_s = max(0.0, min(p.deadline for p in busy) - time.monotonic())
                ready = wait([p.conn for p in busy], timeout=min(wait_s, 3600))
                for p in busy:
                    if p.conn in ready:
                        healthy = self._collect(p, on_result, on_failure)
                    elif time.monotonic() >= p.deadline:
                        on_failure(p.job, f"timeout: no result after {self.timeout:g}s (worker killed)")
                        healthy = False
                    else:
                        continue
                    if not healthy:  # a fresh worker takes the slot of a killed or dead one
                        p.job = None
                        p.kill()
                        procs[procs.index(p)] = p = _Proc(self.ctx, self.jobs, self.work)
                    if todo:
                        p.give(todo.popleft(), self.timeout)
        finally:
            for p in procs:
                p.stop()
            for p in procs:
                p.proc.join(2)
                if p.proc.is_alive():
                    p.kill()

    def _collect(self, p: _Proc, on_result: OnResult, on_failure: OnFailure) -> bool:
        """Report the worker's answer; False when the worker died instead of answering."""
        try:
            i, ok, payload = p.conn.recv()
        except (EOFError, OSError):
            p.proc.join(1)
            on_failure(p.job, f"the agent's worker process died (exit code {p.proc.exitcode})")
            return False
        p.job = None
        (on_result if ok else on_failure)(i, payload)
        return True


# --- threads --------------------------------------------------------------------------------------------


class _ThreadPool(Generic[J, R]):
    """Threads cannot be killed: a job that overruns is reported and abandoned, and a new thread
    takes its place so the others keep their share of workers."""

    def __init__(self, jobs: Sequence[J], work: Callable[[J], R], n: int, timeout: float | None) -> None:
        self.jobs, self.work, self.n, self.timeout = jobs, work, n, timeout
        self.todo: queue.Queue[int | None] = queue.Queue()
        self.done: queue.Queue[tuple[int, bool, Any]] = queue.Queue()
        self.started: dict[int, float] = {}
        self.lock = threading.Lock()

    def _loop(self) -> None:
        while True:
            i = self.todo.get()
            if i is None:
                return
            with self.lock:
                self.started[i] = time.monotonic()
            try:
                self.done.put((i, True, self.work(self.jobs[i])))
            except Exception as e:
                self.done.put((i, False, f"{type(e).__name__}: {e}"))

    def _spawn(self) -> None:
        threading.Thread(target=self._loop, daemon=True).start()

    def run(self, on_result: OnResult, on_failure: OnFailure) -> None:
        for i in range(len(self.jobs)):
            self.todo.put(i)
        for _ in range(self.n):
            self._spawn()
        remaining = set(range(len(self.jobs)))
        limit = self.timeout + GRACE_S if self.timeout else None
        while remaining:
            try:
                i, ok, payload = self.done.get(timeout=0.05 if limit else None)
            except queue.Empty:
                pass
            else:
                if i in remaining:
                    remaining.discard(i)
                    (on_result if ok else on_failure)(i, payload)
            now = time.monotonic()
            with self.lock:
                overdue = [i for i, t in self.started.items() if i in remaining and limit and now - t > limit]
            for i in overdue:
                remaining.discard(i)
                on_failure(i, f"timeout: no result after {self.timeout:g}s (thread abandoned)")
                self._spawn()
        for _ in range(self.n):
            self.todo.put(None)
