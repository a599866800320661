"""Time limits: no check, and no end-state query, runs for ever.

A check on the main thread runs under a CPU-time timer (ITIMER_VIRTUAL, SIGVTALRM). The kernel delivers
the signal even while C code holds the GIL, and Python runs the handler between bytecodes or where C code
polls for signals (`re` does, every few thousand steps), so a check stuck in a loop or in catastrophic
backtracking raises `CheckTimeout` and ends as an `error`. The timer is armed by the first check and
re-armed by its own handler only while checks run, so a check costs two attribute writes and no system
call; a signal that fires between checks does nothing.

An end-state query is stopped by a watchdog thread with DuckDB's `interrupt()` (DuckDB releases the GIL
while it runs, so the thread gets to run), wherever the query runs.

Checks on other threads (the thread pool) are bounded by their own limits (regexes, queries) and by the
pool's job timeout, which abandons the job. The handler is installed only where SIGVTALRM has none.
"""

from __future__ import annotations

import atexit
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

_LIMIT: float | None = None  # None until the first check: the settings' check_timeout (KIT_CHECK_TIMEOUT)


def check_timeout() -> float:
    """The time limit of one check, in seconds: the settings' `check_timeout`, read at the first check
    (never at import), or what set_check_timeout set."""
    global _LIMIT
    if _LIMIT is None:
        from kit.settings import process_settings

        _LIMIT = process_settings().check_timeout
    return _LIMIT


def __getattr__(name: str) -> Any:
    if name == "CHECK_TIMEOUT":  # the limit as a value, read when asked for
        return check_timeout()
    raise AttributeError(name)


def set_check_timeout(seconds: float) -> float:
    """Change the limit; returns the previous one. A timer armed under the old limit is stopped, so the new
    one holds from the next check."""
    global _LIMIT
    previous, _LIMIT = check_timeout(), seconds
    _disarm()
    return previous


class CheckTimeout(TimeoutError):
    """A check ran past its time limit."""


class _Watch:
    def __init__(self) -> None:
        self.main = threading.main_thread().ident or 0
        self.check_since = 0.0  # when the main thread's running check started; 0: none running
        self.armed = False  # the CPU timer is running
        self.usable: bool | None = None  # SIGVTALRM is ours (None: not looked yet)
        self.sql: tuple[Any, float] | None = None  # (connection, started) of the running end-state query
        self.sql_lock = threading.Lock()
        self.sql_interrupted = False
        self.thread: threading.Thread | None = None

    def arm(self, seconds: float) -> None:
        if self.usable is None:
            current = signal.getsignal(signal.SIGVTALRM)
            if current in (signal.SIG_DFL, None):
                signal.signal(signal.SIGVTALRM, _on_tick)
                current = _on_tick
            self.usable = current is _on_tick
        if self.usable:
            signal.setitimer(signal.ITIMER_VIRTUAL, max(seconds, 0.01))
            self.armed = True

    def watch_sql(self) -> None:
        if self.thread is None or not self.thread.is_alive():
            self.thread = threading.Thread(target=self._loop, name="kit-query-watchdog", daemon=True)
            self.thread.start()

    def _loop(self) -> None:
        while True:
            time.sleep(max(check_timeout() / 4, 0.01))
            with self.sql_lock:
                if self.sql is not None and time.monotonic() - self.sql[1] >= check_timeout():
                    self.sql_interrupted = True
                    self.sql[0].interrupt()


_WATCH = _Watch()


def _on_tick(signum: int, frame: Any) -> None:
    watch = _WATCH
    watch.armed = False
    since = watch.check_since
    if not since:
        return  # between checks: the timer stays off until the next check
    elapsed = time.monotonic() - since
    # A running query is the watchdog's to stop, with an error that names it; the signal is the fallback.
    limit = check_timeout() * (2 if watch.sql is not None else 1)
    if elapsed >= limit:
        if watch.sql is not None:
            # DuckDB runs this handler inside its own signal polling and turns what it raises into
            # "Query interrupted": the flag lets the query's caller say what stopped it all the same.
            watch.sql_interrupted = True
        raise CheckTimeout(f"the check ran longer than {check_timeout():g} s and was stopped")
    watch.arm(min(limit - elapsed, check_timeout() / 4) if watch.sql is not None else limit - elapsed)


def _disarm() -> None:
    # Python puts SIGVTALRM back to its default (terminate) while it shuts down: no timer may outlive us.
    if _WATCH.armed and threading.get_ident() == _WATCH.main:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        _WATCH.armed = False


atexit.register(_disarm)


def _after_fork_in_child() -> None:
    global _WATCH
    handler_ours = _WATCH.usable
    _WATCH = _Watch()  # a child has no interval timers and none of the parent's threads
    _WATCH.main = threading.get_ident()
    _WATCH.usable = handler_ours


os.register_at_fork(after_in_child=_after_fork_in_child)


def bounded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn(trace, **params)` under the check time limit (on the main thread; see the module's doc)."""

    def run(trace: Any, **params: Any) -> Any:
        watch = timer()
        return fn(trace, **params) if watch is None else timed(watch, fn, trace, params)

    run.__wrapped__ = fn  # type: ignore[attr-defined]
    run.unbounded = fn  # type: ignore[attr-defined]  # for `timer()`'s callers, who time it with `timed`
    run.__name__ = getattr(fn, "__name__", "check")
    return run


def timer() -> _Watch | None:
    """Whether checks on this thread run under the CPU-time timer: the watch when they do and none is running,
    else None (another thread, or inside a running check, whose own limit holds). `bounded` asks at every
    call; `kit.evaluate` asks once for the run of checks of one trace, then runs each check's `unbounded`
    function through `timed`."""
    watch = _WATCH
    if watch.check_since or threading.get_ident() != watch.main:
        return None
    return watch


def timed(watch: _Watch, fn: Callable[..., Any], trace: Any, params: dict[str, Any]) -> Any:
    """`fn(trace, **params)` as the running check of `watch` (from `timer()`): the timer armed if it is not,
    the check's start marked, and unmarked however it ends."""
    if not watch.armed:
        watch.arm(check_timeout())
    watch.check_since = time.monotonic()
    try:
        return fn(trace, **params)
    finally:
        watch.check_since = 0.0


class watched_query:  # a context manager, named like one
    """Within it, `con`'s query is interrupted once it has run longer than the limit; `interrupted` says
    whether it was (DuckDB reports it as InterruptException or, while rows stream, as RuntimeError)."""

    def __init__(self, con: Any) -> None:
        self.con = con
        self.interrupted = False

    def __enter__(self) -> watched_query:
        _WATCH.watch_sql()
        with _WATCH.sql_lock:
            _WATCH.sql = (self.con, time.monotonic())
            _WATCH.sql_interrupted = False
        return self

    def __exit__(self, *exc: object) -> None:
        with _WATCH.sql_lock:
            _WATCH.sql = None
            self.interrupted = _WATCH.sql_interrupted


# --- budgets: only on figures that were measured -----------------------------------------------------


class NotRecorded(ValueError):
    """A budget on a figure the trace does not carry: an error, never a pass on a zero nobody measured."""


def measured(trace: Any, key: str) -> float:
    """The trace's total of a budget figure (`trace.totals[key]`), or NotRecorded when the trace carries
    none: tokens when no span gives tokens_in or tokens_out, cost when no span gives cost_usd (a zero
    given is a figure: a model that costs nothing), latency when neither the trace nor a span gives one
    (the kit's runner gives every trace it runs its measured wall time). Steps and tool calls are counts
    of the spans, always known."""
    spans = trace.spans
    if key == "tokens":
        known = any(_given(s, "tokens_in") or _given(s, "tokens_out") for s in spans)
        what = "tokens not recorded: no span gives tokens_in or tokens_out"
    elif key == "cost_usd":
        from kit.pricing import unpriced_calls

        known = any(_given(s, "cost_usd") for s in spans)
        what = "cost_usd not recorded: no span gives a cost_usd"
        unpriced = unpriced_calls(spans)
        if unpriced:  # the priced calls' sum is not the run's cost
            known = False
            what = f"cost_usd not recorded: {len(unpriced)} model call(s) with tokens and no price ({unpriced[0]})"
    elif key == "latency_ms":
        known = trace.latency_ms is not None or any(s.latency_ms is not None for s in spans)
        what = "latency_ms not recorded: neither the trace nor a span gives a latency_ms"
    else:
        known, what = True, ""
    if not known:
        raise NotRecorded(what + f", so a budget on {key} cannot be checked")
    return float(trace.totals[key])


def _given(span: Any, field: str) -> bool:
    """The span's data gave this field. A span read field by field holds only what was given; one that
    needed normalising holds every field, defaults included: there a zero counts as given only on an
    `llm` span, where a figure belongs."""
    found = vars(span).get(field)
    return found is not None and (found != 0 or span.kind == "llm")
