"""Immutable results: a check's verdict, the named result the runner makes of it, and one run of one case."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

Outcome = Literal["pass", "fail", "error", "skipped"]


# Verdict and Result are named tuples rather than frozen dataclasses: every check of every trace makes one
# of each, and a tuple is made in under half the time (a frozen dataclass sets each field through
# object.__setattr__). Immutable, compared and pickled by value, read by field name, as before.
class Verdict(NamedTuple):
    """What a check function returns: pass or fail and why. The runner names it (see `Result`)."""

    passed: bool
    reason: str = ""
    score: float | None = None


class Result(NamedTuple):
    """A named verdict. `error` marks a check that could not decide (it raised): never a pass. An error
    keeps the check's formatted traceback apart from its one-line reason."""

    name: str
    passed: bool
    reason: str = ""
    error: bool = False
    score: float | None = None
    traceback: str | None = None

    @property
    def outcome(self) -> Outcome:
        if self.error:
            return "error"
        return "pass" if self.passed else "fail"

    def to_dict(self) -> dict[str, Any]:
        return {"check": self.name, "outcome": self.outcome, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class CaseRun:
    """One run (attempt) of one case: the check results, or the infrastructure error that stopped it."""

    case_id: str
    attempt: int
    results: tuple[Result, ...]
    run_id: str | None = None
    error: str | None = None  # the agent raised, hung or returned a malformed trace
    metrics: dict[str, Any] = field(default_factory=dict)  # steps, tokens, cost_usd, latency_ms
    # Why the run could not take place (e.g. a simulated-user case with no user model): never a pass.
    skipped: str | None = None

    # Loops rather than generators (twice as fast): read several times per run by every front end.
    @property
    def passed(self) -> bool:
        if self.error is not None or self.skipped is not None:
            return False
        for r in self.results:  # noqa: SIM110
            if not r.passed or r.error:
                return False
        return True

    @property
    def outcome(self) -> Outcome:
        if self.error is not None:
            return "error"
        for r in self.results:
            if r.error:
                return "error"
        if self.skipped is not None:
            return "skipped"
        return "pass" if self.passed else "fail"

    @property
    def failures(self) -> tuple[Result, ...]:
        return tuple([r for r in self.results if not r.passed or r.error])

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "case_id": self.case_id,
            "attempt": self.attempt,
            "passed": self.passed,
            "checks": [r.to_dict() for r in self.results],
        }
        if self.error is not None:
            out["error"] = self.error
        if self.skipped is not None:
            out["skipped"] = self.skipped
        return out
