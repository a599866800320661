"""What the metrics of one test case found, gathered for the store.

DeepEval measures copies of the metrics it is given (`copy_metrics` rebuilds each from its constructor
arguments), so a metric cannot hand its verdict back through its own attributes. Every metric of a case
shares one CaseLog instead (it is a constructor argument, so the copies share it too).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kit.case import Case
from kit.judge import JudgeCall
from kit.result import CaseRun, Outcome, Result


@dataclass(frozen=True)
class SoftVerdict:
    """A rubric's verdict on one run, with the judge call behind it (None fields when not judged)."""

    rubric: str
    outcome: Outcome
    reason: str
    score: float | None = None
    threshold: float | None = None
    judge_model: str | None = None
    rubric_hash: str | None = None
    raw_answer: str | None = None
    prompt: str | None = None
    calls: tuple[JudgeCall, ...] = ()  # every judge call behind the verdict (its K samples), for judge_calls


@dataclass
class CaseLog:
    case: Case
    attempt: int = 0
    trace: Any = None
    judged: CaseRun | None = None  # the oracle's verdict on `trace`, when the run was already judged
    # What the run cost in agent calls and seconds (`agent_calls`, `retries`, `agent_s`, `kit_s`): the store's
    # per-stage figures. `agent_calls` 0: a recorded run, judged here without calling the agent.
    cost: dict[str, Any] = field(default_factory=dict)
    hard: dict[int, Result] = field(default_factory=dict)  # by index in case.checks: a re-measure overwrites
    soft: dict[str, SoftVerdict] = field(default_factory=dict)
    # Hard gates of the test's own (a DeepEval metric declared hard: deepeval_metrics.own_metric), by name.
    own_hard: dict[str, Result] = field(default_factory=dict)
    error: str | None = None
    skipped: str | None = None  # the run could not take place (no user model for a simulated user)
    recorded: bool = False  # stored already (deepeval_metrics.pytest_plugin stores each log once)
    agent: str | None = None  # the label of the agent that ran (run_agent): a session stores one agent's runs
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        if _COLLECTING:
            _COLLECTING[-1].append(self)

    def add_hard(self, indices: tuple[int, ...], results: tuple[Result, ...]) -> None:
        with self._lock:
            self.hard.update(zip(indices, results, strict=True))

    def add_own_hard(self, result: Result) -> None:
        with self._lock:
            self.own_hard[result.name] = result

    def add_soft(self, verdict: SoftVerdict) -> None:
        with self._lock:
            self.soft[verdict.rubric] = verdict

    def case_run(self, run_id: str | None = None) -> CaseRun:
        """The hard verdict of this run; checks DeepEval never measured make it an error, never a pass."""
        checks = self.case.checks
        missing = [checks[i].label for i in range(len(checks)) if i not in self.hard]
        error = self.error
        if self.skipped is not None:
            return CaseRun(self.case.id, self.attempt, (), run_id=run_id, skipped=self.skipped)
        if error is None and missing:
            error = f"checks not measured by DeepEval: {', '.join(missing)}"
        ordered = tuple(self.hard[i] for i in range(len(checks)) if i in self.hard) + tuple(self.own_hard.values())
        totals: dict[str, Any] = {**dict(getattr(self.trace, "totals", None) or {}), **self.cost}
        return CaseRun(self.case.id, self.attempt, ordered, run_id=run_id, error=error, metrics=totals)


# The logs made while a test runs, for the pytest plugin to store when it ends (deepeval_metrics.pytest_plugin):
# a test file that makes its CaseLogs through the public API needs no store code of its own.
_COLLECTING: list[list[CaseLog]] = []


def current() -> list[CaseLog]:
    """The CaseLogs the innermost `collecting` block has gathered so far (none outside one)."""
    return list(_COLLECTING[-1]) if _COLLECTING else []


def is_collecting() -> bool:
    return bool(_COLLECTING)


@contextlib.contextmanager
def collecting() -> Iterator[list[CaseLog]]:
    """Every CaseLog created inside the block, in order."""
    logs: list[CaseLog] = []
    _COLLECTING.append(logs)
    try:
        yield logs
    finally:
        _COLLECTING.remove(logs)
