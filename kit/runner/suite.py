"""The kit's runner: every case N times on a fresh agent, in parallel, each run evaluated by the oracle.

    from kit.runner import RunOptions, run_suite, plan
    outcomes = run_suite(cases, agent, RunOptions(runs=5), run_id="...")

A run whose agent raises, overruns its timeout or returns a malformed trace becomes an error run
(`kit.evaluate.error_run`) carrying the cause; the other runs go on. Shards (`--shard i/n`) split the
cases deterministically so that n CI jobs together run the suite once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kit.case import Case
from kit.errors import KitInputError
from kit.evaluate import error_run
from kit.runner.agents import Agent
from kit.runner.invoke import Invocation, invoke
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


# One run's result: the runner's name for an Invocation.
Outcome = Invocation


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


def run_one(job: Job, agent: Agent, *, run_id: str | None = None, timeout: float | None = None) -> Outcome:
    """Run the agent once on the job's case and evaluate the trace. Never raises."""
    return invoke(agent, job.case, job.attempt, timeout=timeout, run_id=run_id)


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
