"""Running many independent calls with a per-call timeout: in host processes, in threads, or in turn.

`dispatch(jobs, call, ...)`: a job's `call` (an agent's call: a user's agent mostly waits on a model) runs up
to `concurrency` at once, in threads or, for an `async def` agent (`acall`), as tasks on an event loop; its
result lands in the calling process, which does the rest (the runner judges there). In `process` mode the
calls run in host processes, so nothing the agent does reaches the process that judges; a host that dies
fails only its own calls and is replaced. The pool is our own rather than concurrent.futures' because a
hung call must be killable on its own: its host is killed and replaced, the call is reported as a timeout,
and the other calls go on.

Hosts are spawned, on every platform: fresh interpreters (`python -c`) handed the jobs and the call pickled
(an agent travels by name and is imported there). They inherit no threads, locks or Objective-C state, and
the parent's `__main__` never runs in them (as it would under multiprocessing's spawn). Nothing is forked:
forking a process that loaded the Objective-C runtime is unsafe on macOS (an httpx client, so the openai
SDK, reads the proxy settings through `_scproxy`), a fork copies whatever locks the parent's threads held,
and the forked workers the reference agent once had saved too little to keep (bench/start_method.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any, Generic, TypeVar

J = TypeVar("J")
R = TypeVar("R")

MODES = ("process", "thread", "serial")
GRACE_S = 2.0  # after the timeout, how long a job may still take to report (its own soft timeout fires first)

OnResult = Callable[[int, Any], None]
OnFailure = Callable[[int, str], None]


def default_workers() -> int:
    affinity = getattr(os, "sched_getaffinity", None)  # Linux only
    if affinity is not None:
        return max(1, len(affinity(0)))
    return max(1, os.cpu_count() or 1)


def _in_turn(jobs: Sequence[J], work: Callable[[J], Any], on_result: OnResult, on_failure: OnFailure) -> None:
    """Every job here, one after another. A job's SystemExit or KeyboardInterrupt fails that job, not the
    run; a real Ctrl-C (SIGINT) stops the run once the job it interrupted is reported."""
    with _interrupts() as interrupted:
        for i, job in enumerate(jobs):
            try:
                payload = work(job)
            except BaseException as e:
                on_failure(i, _failed(e))
            else:
                on_result(i, payload)
            if interrupted.is_set():
                raise KeyboardInterrupt


def _failed(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}".rstrip(": ")


Call = Callable[[Any, Callable[[], None]], Any]  # (job, on_start) -> payload; on_start: the call began
ACall = Callable[[Any, Callable[[], None]], Any]  # the same, returning an awaitable


def dispatch(
    jobs: Sequence[J],
    call: Call,
    *,
    acall: ACall | None = None,
    mode: str = "process",
    workers: int | None = None,
    concurrency: int = 1,
    timeout: float | None = None,
    on_result: OnResult,
    on_failure: OnFailure,
    retire: Callable[[Any], bool] | None = None,
) -> None:
    """Every job's call, at most `concurrency` at once; each result reported in this thread as
    `on_result(i, payload)`, or `on_failure(i, why)` when the call raised, overran `timeout` (+ a grace
    period, counted from `on_start`: waiting for a shared slot is not the agent's time) or its host died.

    `serial`: one call at a time, here. `thread`: threads (or, with `acall`, tasks on one event loop in a
    thread) of this process. `process`: min(workers, concurrency) host processes sharing the cap, each
    running its calls the same way; `jobs`, `call`, `acall` and `call`'s payload must pickle (the first
    three are handed to each host as it starts). A host whose payload `retire` flags
    (a call that overran and left its thread behind) takes no more calls, and is replaced once its others
    have landed."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if not jobs:
        return
    cap = max(1, min(concurrency, len(jobs)))
    if mode == "serial" or (mode == "thread" and cap == 1 and acall is None):
        _in_turn(jobs, lambda job: call(job, _nothing), on_result, on_failure)
        return
    if mode == "thread":
        pool: _InProcess = _AsyncPool(jobs, acall, cap, timeout) if acall else _ThreadPool(jobs, call, cap, timeout)
        pool.run(on_result, on_failure)
        return
    hosts = max(1, min(workers or default_workers(), cap))
    _HostPool(jobs, call, acall, hosts, cap, timeout, retire).run(on_result, on_failure)


def _nothing() -> None:
    return None


@contextlib.contextmanager
def _interrupts() -> Iterator[threading.Event]:
    """Calls on this thread: a KeyboardInterrupt an agent raises is its run's error, but a real Ctrl-C
    (SIGINT) still stops the run once the call has ended. Set when SIGINT arrived."""
    seen = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield seen
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is not signal.default_int_handler:  # someone else's handler: theirs to keep
        yield seen
        return

    def handler(signum: int, frame: Any) -> None:
        seen.set()
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, handler)
    try:
        yield seen
    finally:
        signal.signal(signal.SIGINT, previous)


# --- processes ------------------------------------------------------------------------------------------


WATCH_S = 0.25  # how often a child looks whether its parent is still there


def die_with_parent(parent: int) -> None:
    """End this process soon after its parent dies, so a killed run leaves no worker behind (a child
    reparented to init, or to a subreaper, would run its agent on, unseen). A daemon thread watches the
    parent's pid (`os.getppid` changes when the parent is gone): the same on Linux and macOS, no prctl."""
    if os.getppid() != parent:  # the parent died before we got here
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(WATCH_S)
        os._exit(1)

    threading.Thread(target=watch, name="kit-parent-watch", daemon=True).start()


class _Spawned:
    """A child in a fresh interpreter (`python -c`), handed the parent's import path and then its target and
    arguments, pickled, over a socket pair. Unlike multiprocessing's spawn it never runs the parent's
    `__main__` again: a script that calls the runner needs no `if __name__ == "__main__"` guard, and nothing
    of the parent's main module is imported or run in the child. Stands where a multiprocessing.Process
    would (kill, join, is_alive, exitcode)."""

    def __init__(self, target: Callable[..., None], args: tuple[Any, ...]) -> None:
        ours, theirs = socket.socketpair()
        flags = getattr(subprocess, "_args_from_interpreter_flags", list)()  # -W, -X, -O as the parent's
        try:
            self.popen = subprocess.Popen(
                [sys.executable, *flags, "-c", _SPAWNED_MAIN, str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
            )
        finally:
            theirs.close()
        self.conn = Connection(ours.detach())
        try:
            self.conn.send(list(sys.path))  # first: the child unpickles what follows with it (a user's agent)
            self.conn.send((target, args))
        except BaseException:  # what cannot be pickled (or a Ctrl-C): no child is left waiting for it
            self.kill()
            self.join(1)
            self.conn.close()
            raise

    @property
    def exitcode(self) -> int | None:
        return self.popen.poll()

    def is_alive(self) -> bool:
        return self.popen.poll() is None

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.popen.kill()

    def join(self, timeout: float | None = None) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout)


_SPAWNED_MAIN = "import sys; from kit.runner.pool import spawned_main; spawned_main(int(sys.argv[1]))"


def spawned_main(fd: int) -> None:
    """A spawned child's start (`_Spawned`): the parent's import path, then its target, run with this end."""
    conn = Connection(fd)
    try:
        sys.path[:] = conn.recv()
        target, args = conn.recv()
    except (EOFError, OSError, KeyboardInterrupt):  # the parent went away before handing the work over
        os._exit(1)
    target(conn, *args)


class _Child:
    """A host process (`_Spawned`) and its end of the pipe: sent job indexes, `None` to stop, killed if need be."""

    def __init__(self, target: Callable[..., None], *args: Any) -> None:
        self.proc = _Spawned(target, (*args, os.getpid()))
        self.conn: Connection = self.proc.conn

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.conn.send(None)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.join(1)
        self.conn.close()


# --- threads and event loops, in this process ----------------------------------------------------------


class _InProcess:
    """Calls running in this process, their results collected here. Threads cannot be killed: a call that
    overruns is reported and abandoned (a new thread takes its place, so the others keep their share)."""

    def __init__(self, jobs: Sequence[Any], n: int, timeout: float | None) -> None:
        self.jobs, self.n, self.timeout = jobs, n, timeout
        self.done: queue.Queue[tuple[int, bool, Any]] = queue.Queue()
        self.started: dict[int, float] = {}
        self.lock = threading.Lock()

    def on_start(self, i: int) -> Callable[[], None]:
        def started() -> None:
            with self.lock:
                self.started[i] = time.monotonic()

        return started

    def start(self) -> None:
        raise NotImplementedError

    def replace_abandoned(self) -> None:
        """A worker was abandoned to a call that overran: start another in its place."""

    def stop(self) -> None:
        """No more calls will be collected."""

    def run(self, on_result: OnResult, on_failure: OnFailure) -> None:
        self.start()
        remaining = set(range(len(self.jobs)))
        limit = self.timeout + GRACE_S if self.timeout else None
        try:
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
                    self.replace_abandoned()
        finally:
            self.stop()


class _ThreadPool(_InProcess, Generic[J, R]):
    def __init__(self, jobs: Sequence[J], work: Call, n: int, timeout: float | None) -> None:
        super().__init__(jobs, n, timeout)
        self.work = work
        self.todo: queue.Queue[int | None] = queue.Queue()

    def _loop(self) -> None:
        while True:
            i = self.todo.get()
            if i is None:
                return
            try:
                self.done.put((i, True, self.work(self.jobs[i], self.on_start(i))))
            except BaseException as e:  # a call's SystemExit fails that call, not the thread's next ones
                self.done.put((i, False, _failed(e)))

    def _spawn(self) -> None:
        threading.Thread(target=self._loop, name="kit-call", daemon=True).start()

    def start(self) -> None:
        for i in range(len(self.jobs)):
            self.todo.put(i)
        for _ in range(self.n):
            self._spawn()

    def replace_abandoned(self) -> None:
        self._spawn()

    def stop(self) -> None:
        for _ in range(self.n):
            self.todo.put(None)


class _AsyncPool(_InProcess):
    """An `async def` agent's calls as tasks on one event loop (in a thread of its own), `n` at a time."""

    def __init__(self, jobs: Sequence[Any], acall: ACall, n: int, timeout: float | None) -> None:
        super().__init__(jobs, n, timeout)
        self.acall = acall
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._serve, name="kit-agent-loop", daemon=True)

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    async def _all(self) -> None:
        gate = asyncio.Semaphore(self.n)

        async def one(i: int) -> None:
            async with gate:
                try:
                    payload = await self.acall(self.jobs[i], self.on_start(i))
                except asyncio.CancelledError:
                    raise
                except BaseException as e:
                    self.done.put((i, False, _failed(e)))
                else:
                    self.done.put((i, True, payload))

        await asyncio.gather(*(one(i) for i in range(len(self.jobs))))

    def start(self) -> None:
        self.thread.start()
        self.future = asyncio.run_coroutine_threadsafe(self._all(), self.loop)

    def stop(self) -> None:
        # Abandoned tasks are cancelled; a loop an agent blocks stays with its daemon thread until exit.
        self.future.cancel()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(1)
        if not self.thread.is_alive():
            self.loop.close()


# --- host processes ---------------------------------------------------------------------------------------


def _host_main(conn: Connection, jobs: Sequence[Any], call: Call, acall: ACall | None, parent: int) -> None:
    """A host: takes job indices from the parent, runs each call in a thread (or a task), sends
    ("start", i) when the call begins and ("done", i, ok, payload) when it ends."""
    die_with_parent(parent)
    send_lock = threading.Lock()

    def send(message: tuple[Any, ...]) -> None:
        with send_lock:
            try:
                conn.send(message)
            except (BrokenPipeError, EOFError, OSError):
                os._exit(0)  # the parent is gone
            except BaseException as e:  # an unpicklable result: that call's error
                if message[0] != "done":
                    raise
                conn.send(("done", message[1], False, f"the agent's result could not be sent: {_failed(e)}"))

    def started(i: int) -> Callable[[], None]:
        return lambda: send(("start", i))

    if acall is not None:
        _host_loop(conn, jobs, acall, send, started)
    else:
        while True:
            try:
                i = conn.recv()
            except (EOFError, OSError, KeyboardInterrupt):
                break
            if i is None:
                break

            def run(i: int = i) -> None:
                try:
                    send(("done", i, True, call(jobs[i], started(i))))
                except BaseException as e:
                    send(("done", i, False, _failed(e)))

            threading.Thread(target=run, name=f"kit-call-{i}", daemon=True).start()
    conn.close()
    # Not a normal exit: an agent's atexit hooks or a thread it left running must not hold the host open.
    os._exit(0)


def _host_loop(
    conn: Connection,
    jobs: Sequence[Any],
    acall: ACall,
    send: Callable[[tuple[Any, ...]], None],
    started: Callable[[int], Callable[[], None]],
) -> None:
    """An async host: the event loop reads job indices from the parent's pipe as they come."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    stop = loop.create_future()
    tasks: set[asyncio.Task[None]] = set()

    async def one(i: int) -> None:
        try:
            payload = await acall(jobs[i], started(i))
        except BaseException as e:
            send(("done", i, False, _failed(e)))
        else:
            send(("done", i, True, payload))

    def readable() -> None:
        while conn.poll():
            try:
                i = conn.recv()
            except (EOFError, OSError):
                i = None
            if i is None:
                if not stop.done():
                    stop.set_result(None)
                return
            task = loop.create_task(one(i))
            tasks.add(task)
            task.add_done_callback(tasks.discard)

    loop.add_reader(conn.fileno(), readable)
    try:
        loop.run_until_complete(stop)
    finally:
        loop.remove_reader(conn.fileno())


class _Host(_Child):
    def __init__(self, jobs: Sequence[Any], call: Call, acall: ACall | None) -> None:
        super().__init__(_host_main, jobs, call, acall)
        self.calls: dict[int, float] = {}  # job -> deadline (inf until the call starts)
        self.retiring = False  # takes no more calls; replaced once its own have landed

    def give(self, i: int) -> None:
        self.calls[i] = float("inf")
        self.conn.send(i)


class _HostPool:
    def __init__(
        self,
        jobs: Sequence[Any],
        call: Call,
        acall: ACall | None,
        hosts: int,
        cap: int,
        timeout: float | None,
        retire: Callable[[Any], bool] | None = None,
    ) -> None:
        self.jobs, self.call, self.acall, self.timeout, self.retire = jobs, call, acall, timeout, retire
        self.n, self.cap = hosts, cap
        self.share = -(-cap // hosts)  # calls per host, rounded up; the total stays under `cap`

    def _new(self) -> _Host:
        return _Host(self.jobs, self.call, self.acall)

    def run(self, on_result: OnResult, on_failure: OnFailure) -> None:
        todo = deque(range(len(self.jobs)))
        hosts = [self._new() for _ in range(self.n)]
        limit = self.timeout + GRACE_S if self.timeout else float("inf")
        try:
            while True:
                for k, h in enumerate(hosts):
                    if h.retiring and not h.calls and todo:
                        h.kill()
                        hosts[k] = self._new()
                in_flight = sum(len(h.calls) for h in hosts)
                for h in sorted((h for h in hosts if not h.retiring), key=lambda h: len(h.calls)):
                    while todo and in_flight < self.cap and len(h.calls) < self.share and not h.retiring:
                        i = todo.popleft()
                        try:
                            h.give(i)
                        except OSError:  # the host died before taking it: the call goes to another
                            del h.calls[i]
                            todo.appendleft(i)
                            h.retiring = True
                            break
                        in_flight += 1
                if not in_flight:
                    if not todo:
                        break
                    continue  # every host refused its call: fresh ones take them at the top
                nearest = min((d for h in hosts for d in h.calls.values()), default=float("inf"))
                wait_s = min(max(0.0, nearest - time.monotonic()), 3600)
                ready = wait([h.conn for h in hosts if h.calls], timeout=wait_s)
                for k, h in enumerate(hosts):
                    if h.conn in ready and not self._collect(h, limit, on_result, on_failure):
                        why = f"the agent's host process died (exit code {h.proc.exitcode})"
                        hosts[k] = self._replace(h, why, on_failure)
                    elif any(d <= time.monotonic() for d in h.calls.values()):
                        why = f"timeout: no result after {self.timeout:g}s (host process killed)"
                        hosts[k] = self._replace(h, why, on_failure)
        finally:
            for h in hosts:
                h.stop()
            for h in hosts:
                h.proc.join(2)
                if h.proc.is_alive():
                    h.kill()

    def _collect(self, h: _Host, limit: float, on_result: OnResult, on_failure: OnFailure) -> bool:
        """Every message the host has sent; False when it died instead."""
        while True:
            try:
                message = h.conn.recv()
            except (EOFError, OSError):
                h.proc.join(1)
                return False
            if message[0] == "start":
                if message[1] in h.calls:
                    h.calls[message[1]] = time.monotonic() + limit
            else:
                _, i, ok, payload = message
                if i in h.calls:
                    del h.calls[i]
                    if ok and self.retire is not None and self.retire(payload):
                        h.retiring = True
                    (on_result if ok else on_failure)(i, payload)
            if not h.conn.poll():
                return True

    def _replace(self, h: _Host, why: str, on_failure: OnFailure) -> _Host:
        lost = list(h.calls)
        h.calls.clear()
        h.kill()
        for i in lost:
            on_failure(i, why)
        return self._new()
