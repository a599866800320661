"""The kit's runner: plan a suite's jobs, run each on a fresh agent (in a pool, under a timeout), judge the
traces with the oracle, report and record the outcomes. `invoke` is one run, for every front end."""

from kit.runner.invoke import AgentTimeout, Invocation, deadline, invoke
from kit.runner.suite import (
    Job,
    RunOptions,
    jobs_for,
    parse_shard,
    run_suite,
    shard_cases,
)

__all__ = [
    "AgentTimeout",
    "Invocation",
    "Job",
    "RunOptions",
    "deadline",
    "invoke",
    "jobs_for",
    "parse_shard",
    "run_suite",
    "shard_cases",
]
