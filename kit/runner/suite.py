"""The kit's runner: every case N times on a fresh agent, in parallel, each run evaluated by the oracle.

    from kit.runner import RunOptions, jobs_for, run_suite
    outcomes = run_suite(jobs_for(cases), agent, RunOptions(runs=5), run_id="...")

A run whose agent raises, overruns its timeout or returns a malformed trace becomes an error run
(`kit.evaluate.error_run`) carrying the cause; the other runs go on. Shards (`--shard i/n`) split the
cases deterministically so that n CI jobs together run the suite once.

Where the calls run: an agent is called up to `concurrency` times at once (threads for a sync callable, an
event loop for an `async def` one; the reference agent, the kit's own CPU-bound code, at most once per core),
in spawned host processes in `process` mode, and every trace is judged here, in the runner's own process,
which the agent never ran in: an agent that patches the oracle, exits or changes directory changes nothing
of the verdicts or the store.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kit.case import Case
from kit.errors import KitInputError
from kit.evaluate import error_run
from kit.runner.agents import Agent
from kit.runner.hosted import AgentAsyncCall, AgentCall, for_agent
from kit.runner.invoke import Called, Invocation, judge
from kit.runner.pool import default_workers, dispatch
from kit.settings import Settings

DEFAULT_CONCURRENCY: int = Settings.model_fields["concurrency"].default


@dataclass(frozen=True)
class RunOptions:
    runs: int | None = None  # overrides every case's `runs`
    timeout: float | None = 60.0  # seconds per run
    workers: int | None = None  # default: the CPUs this process may use
    mode: str = "process"  # process | thread | serial
    shard: tuple[int, int] | None = None  # (i, n), 1 <= i <= n
    concurrency: int | None = None  # a user's agent's calls in flight at once (default: the settings' default)


@dataclass(frozen=True)
class Job:
    case: Case
    attempt: int


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


def jobs_for(cases: Sequence[Case], runs: int | None = None) -> list[Job]:
    """Every (case, attempt), attempts of a case together. Long cases first would balance better, but
    results in suite order are what a reader expects, and the pool keeps every worker busy anyway."""
    return [Job(c, a) for c in cases for a in range(runs or c.runs)]


# --- the suite ------------------------------------------------------------------------------------------


def run_suite(
    jobs: Sequence[Job],
    agent: Agent,
    options: RunOptions,
    *,
    run_id: str | None = None,
    on_outcome: Callable[[Invocation], None] | None = None,
) -> list[Invocation]:
    """Every job, in parallel as configured; outcomes in job order. `on_outcome` sees each as it lands."""
    results: list[Invocation | None] = [None] * len(jobs)
    concurrency = options.concurrency or DEFAULT_CONCURRENCY
    workers = options.workers or default_workers()

    def done(i: int, outcome: Invocation) -> None:
        results[i] = outcome
        if on_outcome is not None:
            on_outcome(outcome)

    def failed(i: int, why: str) -> None:
        job = jobs[i]
        # The agent was called (its worker died or overran): the call counts, its time is unknown.
        cr = error_run(job.case.id, job.attempt, why, run_id=run_id)
        done(i, Invocation(dataclasses.replace(cr, metrics={"agent_calls": 1}), None))

    if agent.uses_kit_agent:  # CPU-bound: more calls at once than cores only contend for the GIL
        concurrency = min(concurrency, workers)
    _called_and_judged(jobs, agent, options, concurrency, workers, run_id, done, failed)
    return [r for r in results if r is not None]


def _called_and_judged(
    jobs: Sequence[Job],
    agent: Agent,
    options: RunOptions,
    concurrency: int,
    workers: int,
    run_id: str | None,
    done: Callable[[int, Invocation], None],
    failed: Callable[[int, str], None],
) -> None:
    """The agent's calls dispatched (kit.runner.pool.dispatch); each judged here as it lands."""
    crossing = options.mode == "process"
    here = _cwd()

    # Objects, not closures: a spawned host is handed them pickled (kit.runner.hosted).
    make = AgentAsyncCall if agent.is_async else AgentCall
    agent_call = make(agent, options.timeout, run_id, crossing)
    sent = [Job(for_agent(j.case), j.attempt) for j in jobs] if crossing else jobs

    def landed(i: int, called: Any) -> None:
        if here is not None and not crossing and _cwd() != here:
            # An agent in this process changed directory: the store and the cases are found from here.
            with contextlib.suppress(OSError):
                os.chdir(here)
        job = jobs[i]
        if not isinstance(called, Called):
            failed(i, f"the agent's call gave {type(called).__name__}, not a result")
            return
        done(i, judge(called, job.case, job.attempt, run_id=run_id))

    dispatch(
        sent,
        agent_call,
        acall=agent_call if agent.is_async else None,
        mode=options.mode,
        workers=workers,
        concurrency=concurrency,
        timeout=options.timeout,
        on_result=landed,
        on_failure=failed,
        retire=_overran,
    )


def _overran(called: Any) -> bool:
    """A call that timed out: its thread may still be running in its host, which is then replaced."""
    return isinstance(called, Called) and (called.error or "").startswith("timeout:")


def _cwd() -> str | None:
    try:
        return os.getcwd()
    except OSError:  # the folder was removed under us
        return None
