"""The kit's runner: every case N times on a fresh agent, in parallel, each run evaluated by the oracle.

    from kit.runner import RunOptions, run_suite, plan
    outcomes = run_suite(cases, agent, RunOptions(runs=5), run_id="...")

A run whose agent raises, overruns its timeout or returns a malformed trace becomes an error run
(`kit.evaluate.error_run`) carrying the cause; the other runs go on. Shards (`--shard i/n`) split the
cases deterministically so that n CI jobs together run the suite once.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from kit.case import Case
from kit.errors import KitInputError
from kit.evaluate import error_run, evaluate
from kit.result import CaseRun
from kit.runner.agents import Agent, MalformedTrace, to_trace
from kit.runner.pool import default_workers, execute


@dataclass(frozen=True)
class RunOptions:
    runs: int | None = None  # overrides every case's `runs`
    timeout: float | None = 60.0  # seconds per run
    workers: int | None = None  # default: the CPUs this process may use
    mode: str = "process"  # process | thread | serial
    shard: tuple[int, int] | None = None  # (i, n), 1 <= i <= n


@dataclass(frozen=True)
class Job:
    case: Case
    attempt: int


@dataclass
class Outcome:
    """One run: its evaluation, the trace (as a dict, for the store), and where its time went."""

    case_run: CaseRun
    trace: dict[str, Any] | None
    agent_s: float = 0.0  # inside the agent
    kit_s: float = 0.0  # the kit's own work on this run: reading the trace and every check
    extra: dict[str, Any] = field(default_factory=dict)


class AgentTimeout(BaseException):
    """Raised inside a run that overran its time. A BaseException, so an agent's `except Exception`
    cannot swallow it."""


# --- planning -------------------------------------------------------------------------------------------


def parse_shard(text: str) -> tuple[int, int]:
    """`i/n` with 1 <= i <= n, or KitInputError."""
    try:
        i_s, n_s = text.split("/")
        i, n = int(i_s), int(n_s)
    except ValueError:
        raise KitInputError(f"--shard must be i/n (e.g. 2/4), got {text!r}") from None
    if not 1 <= i <= n:
        raise KitInputError(f"--shard {text}: need 1 <= i <= n")
    return i, n


def shard_cases(cases: Sequence[Case], i: int, n: int, runs: int | None = None) -> list[Case]:
    """Shard i of n: cases dealt to the least-loaded shard by their number of runs, heaviest first, ties
    by id. Deterministic, independent of file order, and every case lands in exactly one shard."""
    loads = [0] * n
    owner: dict[str, int] = {}
    for c in sorted(cases, key=lambda c: (-(runs or c.runs), c.id)):
        k = min(range(n), key=lambda s: (loads[s], s))
        owner[c.id] = k
        loads[k] += runs or c.runs
    return [c for c in cases if owner[c.id] == i - 1]


def plan(cases: Sequence[Case], runs: int | None = None) -> list[Job]:
    """Every (case, attempt), attempts of a case together. Long cases first would balance better, but
    results in suite order are what a reader expects, and the pool keeps every worker busy anyway."""
    return [Job(c, a) for c in cases for a in range(runs or c.runs)]


# --- one run --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def deadline(seconds: float | None) -> Iterator[None]:
    """Raise AgentTimeout in this thread after `seconds` (main thread only: elsewhere the pool enforces it)."""
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return

    def _fire(signum: int, frame: Any) -> None:
        raise AgentTimeout

    previous = signal.signal(signal.SIGALRM, _fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _cause(e: BaseException) -> str:
    """`Type: message (at file:line)`: the innermost frame says where the agent broke."""
    tb = traceback.extract_tb(e.__traceback__)
    where = f" (at {tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno})" if tb else ""
    msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}{': ' + msg if msg else ''}{where}"


def run_one(job: Job, agent: Agent, *, run_id: str | None = None, timeout: float | None = None) -> Outcome:
    """Run the agent once on the case and evaluate the trace. Never raises."""
    case, attempt = job.case, job.attempt
    t0 = time.perf_counter()
    try:
        with deadline(timeout):
            result = agent.call(case, attempt)
    except AgentTimeout:
        cr = error_run(case.id, attempt, f"timeout: the agent ran longer than {timeout:g}s", run_id=run_id)
        return Outcome(cr, None, agent_s=time.perf_counter() - t0)
    except Exception as e:
        cr = error_run(case.id, attempt, f"the agent raised {_cause(e)}", run_id=run_id)
        return Outcome(cr, None, agent_s=time.perf_counter() - t0)
    t1 = time.perf_counter()
    try:
        trace, data = to_trace(result, case, attempt, run_id)
    except MalformedTrace as e:
        cr = error_run(case.id, attempt, f"the agent {e}", run_id=run_id)
        return Outcome(cr, None, agent_s=t1 - t0, kit_s=time.perf_counter() - t1)
    cr = evaluate(trace, case, run_id=run_id)
    return Outcome(cr, data, agent_s=t1 - t0, kit_s=time.perf_counter() - t1)


# --- the suite ------------------------------------------------------------------------------------------


def run_suite(
    jobs: Sequence[Job],
    agent: Agent,
    options: RunOptions,
    *,
    run_id: str | None = None,
    on_outcome: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Every job, in parallel as configured; outcomes in job order. `on_outcome` sees each as it lands."""
    results: list[Outcome | None] = [None] * len(jobs)

    def work(job: Job) -> Outcome:
        return run_one(job, agent, run_id=run_id, timeout=options.timeout)

    def done(i: int, outcome: Outcome) -> None:
        results[i] = outcome
        if on_outcome is not None:
            on_outcome(outcome)

    def failed(i: int, why: str) -> None:
        job = jobs[i]
        done(i, Outcome(error_run(job.case.id, job.attempt, why, run_id=run_id), None))

    execute(
        jobs,
        work,
        mode=options.mode,
        workers=options.workers or default_workers(),
        timeout=options.timeout,
        on_result=done,
        on_failure=failed,
    )
    return [r for r in results if r is not None]
