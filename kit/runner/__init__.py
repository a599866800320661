"""The kit's runner: plan a suite's jobs, run each on a fresh agent (in a pool, under a timeout), judge the
traces with the oracle, report and record the outcomes."""

from kit.runner.suite import (
    AgentTimeout,
    Job,
    Outcome,
    RunOptions,
    deadline,
    parse_shard,
    plan,
    run_one,
    run_suite,
    shard_cases,
)

__all__ = [
    "AgentTimeout",
    "Job",
    "Outcome",
    "RunOptions",
    "deadline",
    "parse_shard",
    "plan",
    "run_one",
    "run_suite",
    "shard_cases",
]
