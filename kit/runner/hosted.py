"""A user's agent's call as a host process is handed it: picklable, with nothing inherited from a fork.

Hosts start with spawn (kit.runner.pool), a fresh interpreter that gets its work pickled. So the call is an
object, not a closure: the agent crosses by name and is imported in the host (`Agent.__reduce__`), and each
case crosses as the agent sees it (`for_agent`): its input, context, turns and checks as the case file wrote
them. The compiled checks (schemas, regexes) stay in the process that judges, which the agent never runs in.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kit.case import Case, CheckSpec
from kit.runner.agents import Agent
from kit.runner.invoke import Called, call, call_async

_NOT_PARAMS = ("type", "name", "turn")  # a check's keys that are not its parameters


def for_agent(case: Case) -> Case:
    """The case as a host is given it: the same fields, each check's parameters as written (uncompiled)."""
    checks = tuple(
        CheckSpec(c.type, {k: v for k, v in c.raw.items() if k not in _NOT_PARAMS}, c.label, c.invariant, c.raw, c.turn)
        for c in case.checks
    )
    return dataclasses.replace(case, checks=checks)


@dataclass(frozen=True)
class AgentCall:
    """`(job, on_start) -> Called`: one call of the agent on a job's case (`kit.runner.invoke.call`).
    `crossing`: the result goes to another process, so the trace travels as JSON text (`Called.wire`)."""

    agent: Agent
    timeout: float | None
    run_id: str | None
    crossing: bool

    def __call__(self, job: Any, on_start: Callable[[], None]) -> Called:
        called = call(self.agent, job.case, job.attempt, timeout=self.timeout, run_id=self.run_id, on_start=on_start)
        return called.wire() if self.crossing else called


@dataclass(frozen=True)
class AgentAsyncCall(AgentCall):
    """The same for an `async def` agent, awaited on the host's event loop (`call_async`)."""

    async def __call__(self, job: Any, on_start: Callable[[], None]) -> Called:  # type: ignore[override]
        called = await call_async(
            self.agent, job.case, job.attempt, timeout=self.timeout, run_id=self.run_id, on_start=on_start
        )
        return called.wire() if self.crossing else called
