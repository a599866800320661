"""What the oracle says about the production trace: each of the suite's invariants run on it (`kit.evaluate`),
and the checks of the case it was a run of, when that case is in the suite. A check that fails is broken; one
that errs (the trace lacks what it reads, say an end state) could not be judged and is kept apart."""

from __future__ import annotations

from dataclasses import dataclass, field

from kit.case import Case, CheckSpec
from kit.evaluate import evaluate
from kit.result import Result
from kit.trace import Trace


@dataclass(frozen=True)
class Judged:
    """A check of the suite and its result on the trace. `invariant`: the bundle it came from (None: the
    stored case's own check)."""

    spec: CheckSpec
    result: Result

    @property
    def invariant(self) -> str | None:
        return self.spec.invariant


@dataclass
class Verdicts:
    judged: list[Judged] = field(default_factory=list)

    @property
    def broken(self) -> list[Judged]:
        return [j for j in self.judged if j.result.outcome == "fail"]

    @property
    def broken_invariants(self) -> list[str]:
        return list(dict.fromkeys(j.invariant for j in self.broken if j.invariant is not None))

    @property
    def failing(self) -> bool:
        """The trace broke a check: its behaviour is not the requirement, so no check is derived from it."""
        return bool(self.broken)

    def of_invariant(self, name: str) -> list[Judged]:
        return [j for j in self.judged if j.invariant == name]


def judge(trace: Trace, invariants: dict[str, list[CheckSpec]], case: Case | None) -> Verdicts:
    """Every invariant's checks on the trace, then the stored case's own (its invariants are already among
    the suite's)."""
    specs = [s for bundle in invariants.values() for s in bundle]
    if case is not None:
        specs += [s for s in case.checks if s.invariant is None]
    probe = Case(id=trace.case_id, input="", checks=tuple(specs))
    run = evaluate(trace, probe)
    return Verdicts([Judged(s, r) for s, r in zip(specs, run.results, strict=True)])
