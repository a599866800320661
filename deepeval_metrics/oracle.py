"""Hard gates: DeepEval metrics whose verdict is the kit oracle's, one per check or per named invariant.

The metric runs `kit.evaluate.evaluate` on the trace behind the test case with only its own checks; the
score, reason and success DeepEval shows are the oracle's Result. Nothing here re-implements a check.
A multi-turn case gets the same metrics as conversational ones (DeepEval takes only those on a
ConversationalTestCase): they judge the whole conversation's trace, and a check's `turn:` its turn.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from deepeval.metrics import BaseConversationalMetric, BaseMetric

from deepeval_metrics.caselog import CaseLog
from deepeval_metrics.testcase import trace_of
from kit.case import Case
from kit.evaluate import evaluate
from kit.result import Result


class _OracleVerdict:
    """The oracle's verdict on some checks of one case (a single check, or one invariant's bundle)."""

    error: str | None
    score: float | None
    success: bool | None
    reason: str | None

    def __init__(
        self,
        case: Case,
        indices: tuple[int, ...],
        name: str,
        log: CaseLog | None = None,
        threshold: float = 1.0,
        async_mode: bool = True,
    ) -> None:
        if not indices:
            raise ValueError(f"case {case.id!r}: an oracle metric needs at least one check")
        self.case = case
        self.indices = tuple(indices)
        self.name = name
        self.log = log
        self.threshold = threshold  # every check must pass: a hard gate has no partial credit
        self.async_mode = async_mode
        self.include_reason = True
        self.evaluation_model = "kit oracle"
        self.results: tuple[Result, ...] = ()

    @property
    def __name__(self) -> str:  # what DeepEval prints in its table and in assert_test's failure message
        return self.name

    def measure(self, test_case: Any, *args: Any, **kwargs: Any) -> float:
        self.error = None
        try:
            trace = trace_of(test_case)
        except Exception as exc:  # no trace: the metric cannot decide, which is an error, never a pass
            self._fail_all(f"no usable trace: {exc}")
            return 0.0
        if trace.case_id != self.case.id:
            self._fail_all(f"trace is for case {trace.case_id!r}, not {self.case.id!r}")
            return 0.0
        judged = self.log.judged if self.log is not None and self.log.trace is trace else None
        if judged is not None and len(judged.results) == len(self.case.checks):
            # The run was judged once already (kit.runner.invoke): present that verdict, never judge twice.
            self._settle(tuple(judged.results[i] for i in self.indices))
            return self.score or 0.0
        checks = tuple(self.case.checks[i] for i in self.indices)
        run = evaluate(trace, dataclasses.replace(self.case, checks=checks))
        self._settle(run.results)
        return self.score or 0.0

    async def a_measure(self, test_case: Any, *args: Any, **kwargs: Any) -> float:
        return self.measure(test_case)  # microseconds of pure Python: no point in a thread

    def is_successful(self) -> bool:
        if self.error is not None:
            self.success = False
        else:
            self.success = bool(self.results) and all(r.passed and not r.error for r in self.results)
        return self.success

    def _settle(self, results: tuple[Result, ...]) -> None:
        self.results = results
        if self.log is not None:
            self.log.add_hard(self.indices, results)
        passed = sum(1 for r in results if r.passed and not r.error)
        single = results[0] if len(results) == 1 else None
        if single is not None and single.score is not None and not single.error:
            self.score = float(single.score)
        else:
            self.score = passed / len(results)
        errors = [r for r in results if r.error]
        failures = [r for r in results if not r.passed and not r.error]
        if errors:  # a check that raised is an error outcome in DeepEval too, so it can never read as a pass
            self.error = "; ".join(f"{r.name}: {r.reason}" for r in errors)
        bad = errors + failures
        if len(results) == 1:  # DeepEval prints the metric's name (the check's) beside the reason
            self.reason = results[0].reason or results[0].outcome
        elif bad:
            self.reason = "; ".join(f"{r.name}: {r.outcome}: {r.reason}" for r in bad)
        else:
            self.reason = f"all {len(results)} checks passed"
        self.success = not bad

    def _fail_all(self, message: str) -> None:
        checks = [self.case.checks[i] for i in self.indices]
        self._settle(tuple(Result(spec.label, False, message, error=True) for spec in checks))


class OracleMetric(_OracleVerdict, BaseMetric):
    """A hard gate on an LLMTestCase (a single-turn run)."""


class ConversationalOracleMetric(_OracleVerdict, BaseConversationalMetric):
    """A hard gate on a ConversationalTestCase (a multi-turn run): the same verdict, over every turn."""


def oracle_metrics(case: Case, log: CaseLog | None = None) -> list[Any]:
    """The kit oracle's verdict as DeepEval metrics (hard gates): one metric per check the case lists itself,
    plus one per named invariant (its checks bundled); conversational metrics for a multi-turn case.

    case: the Case (from deepeval_metrics.load_cases or kit.case.load_suite).
    log: the run's CaseLog (deepeval_metrics.run_agent or replay makes it): each metric records its
        results there, which is how they reach the store (DeepEval measures copies of the metrics, so a
        metric cannot hand its verdict back itself). None: the metrics judge but record nothing.

    Each metric reads the trace behind the DeepEval test case (deepeval_metrics.test_case, kit_test_case);
    a test case without one, or with another case's trace, is an error, never a pass."""
    kind = ConversationalOracleMetric if getattr(case, "is_multi_turn", False) else OracleMetric
    own: list[Any] = []
    bundles: dict[str, list[int]] = {}
    for i, spec in enumerate(case.checks):
        if spec.invariant is None:
            own.append(kind(case, (i,), spec.label, log))
        else:
            bundles.setdefault(spec.invariant, []).append(i)
    seen: dict[str, int] = {}
    for metric in own:  # DeepEval keys results by metric name: two checks with one label stay apart
        seen[metric.name] = seen.get(metric.name, 0) + 1
        if seen[metric.name] > 1:
            metric.name = f"{metric.name} #{seen[metric.name]}"
    return own + [kind(case, tuple(ix), f"invariant:{name}", log) for name, ix in bundles.items()]
