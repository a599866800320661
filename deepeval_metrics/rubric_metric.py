"""Soft gates: G-Eval rubrics, judged by the kit's one configured judge.

A RubricMetric is `flaky` in DeepEval's sense: its verdict is shown and stored but never fails the test
case (DeepEval skips flaky metrics when it settles a case). The build fails on soft gates only when a
rubric's pass rate falls below its floor, which the eval session checks at the end (tests/evals).

- No judge configured: the metric marks itself `skipped` (DeepEval then leaves it out of the results, so
  it cannot show as a pass) and the store gets `skipped` with the reason.
- The judge is down, refuses, or answers something that is not a verdict: `error` naming the judge and its
  endpoint; an error is never a pass.
- The case or run lacks a field the rubric needs (kit/rubrics.py): the rubric does not apply; no verdict,
  no row, never an error. `rubric_metrics` leaves such rubrics out; `measure` checks again for test cases
  built elsewhere.
"""

from __future__ import annotations

from typing import Any

from deepeval.metrics import BaseMetric, GEval
from deepeval.test_case import LLMTestCase, SingleTurnParams

from deepeval_metrics.caselog import CaseLog, SoftVerdict
from deepeval_metrics.judge_model import JudgeError, KitJudgeModel
from deepeval_metrics.rubrics import Rubric, RubricSet, case_context, retrieved
from kit.case import Case
from kit.judge import NO_JUDGE_REASON, JudgeConfig

# Steps G-Eval drafts from a rubric's criteria, kept per (judge, endpoint, rubric version) for the session:
# every case is then judged against the same steps, and each case costs one judge call instead of two.
_DRAFTED_STEPS: dict[tuple[str, str, str], list[str]] = {}


def soft_gate_fields(
    metric: Any, rubric: Rubric, judge: JudgeConfig | None, log: CaseLog | None, skip_reason: str, async_mode: bool
) -> None:
    """What every rubric metric (single-turn or conversational) carries: DeepEval's fields and the kit's."""
    metric.rubric = rubric
    metric.judge = judge
    metric.log = log
    metric.skip_reason = skip_reason
    metric.async_mode = async_mode
    metric.threshold = rubric.threshold
    metric.flaky = True  # soft gate: shown, stored, never fails the case on its own
    metric.include_reason = True
    metric.evaluation_model = judge.model if judge is not None else None


class RubricMetric(BaseMetric):
    def __init__(
        self,
        rubric: Rubric,
        judge: JudgeConfig | None,
        log: CaseLog | None = None,
        skip_reason: str = NO_JUDGE_REASON,
        async_mode: bool = True,
    ) -> None:
        soft_gate_fields(self, rubric, judge, log, skip_reason, async_mode)
        self.verdict: SoftVerdict | None = None

    @property
    def __name__(self) -> str:
        return f"rubric:{self.rubric.name}"

    def skip(self) -> None:
        """No judge: `skipped` with the reason, in the metric and in the case's log (never a pass)."""
        self.skipped = True
        self.score, self.success, self.reason = None, None, self.skip_reason
        self._keep(
            SoftVerdict(
                self.__name__, "skipped", self.skip_reason, threshold=self.threshold, rubric_hash=self.rubric.hash
            )
        )

    def measure(self, test_case: LLMTestCase, *args: Any, **kwargs: Any) -> float | None:
        self.error = None
        test_case = self._with_needs(test_case)
        lacking = [p for p in self.rubric.params if getattr(test_case, p, None) in (None, "", [])]
        if [p for p in lacking if p != "tools_called"]:  # not applicable to this run: no verdict at all
            self.skipped = True
            self.score, self.success = None, None
            self.reason = f"not applicable: the test case has no {', '.join(lacking)}"
            return None
        if self.judge is None:
            return self.skip()
        model = KitJudgeModel(self.judge)
        steps_key = (self.judge.model, self.judge.endpoint, self.rubric.hash)
        geval = GEval(
            name=self.rubric.name,
            criteria=self.rubric.criteria,
            evaluation_steps=self.rubric.evaluation_steps or _DRAFTED_STEPS.get(steps_key),
            evaluation_params=[SingleTurnParams(p) for p in self.rubric.params],
            threshold=self.rubric.threshold,
            model=model,
            async_mode=False,  # one blocking call at a time: simple, and the judge sees no burst
            _include_g_eval_suffix=False,
        )
        try:
            geval.measure(test_case, _show_indicator=False)
        except Exception as exc:  # JudgeError, or DeepEval refusing the answer: an error, never a pass
            message = str(exc) if isinstance(exc, JudgeError) else f"{self.judge.describe()}: {exc}"
            self.error, self.score, self.success = message, None, False
            self.reason = message
            self._keep(self._verdict("error", message, None, model))
            return None
        if not self.rubric.evaluation_steps and geval.evaluation_steps:
            _DRAFTED_STEPS[steps_key] = list(geval.evaluation_steps)
        self.score, self.reason = geval.score, geval.reason
        self.success = geval.score is not None and geval.score >= self.threshold
        self._keep(self._verdict("pass" if self.success else "fail", geval.reason or "", geval.score, model))
        return self.score

    async def a_measure(self, test_case: LLMTestCase, *args: Any, **kwargs: Any) -> float | None:
        return self.measure(test_case)

    def is_successful(self) -> bool:
        return self.error is None and bool(self.success)

    def _with_needs(self, test_case: LLMTestCase) -> LLMTestCase:
        """The test case with the context and retrieval context this rubric shows the judge, from the case
        and the kit trace it carries (a copy: the other metrics see the test case as built)."""
        update: dict[str, Any] = {}
        if "context" in self.rubric.params and test_case.context is None and self.log is not None:
            update["context"] = case_context(self.log.case) or None
        trace = getattr(test_case, "kit_trace", None)
        if "retrieval_context" in self.rubric.params and test_case.retrieval_context is None and trace is not None:
            update["retrieval_context"] = retrieved(trace) or None
        return test_case.model_copy(update=update) if update else test_case

    def _verdict(self, outcome: str, reason: str, score: float | None, model: KitJudgeModel) -> SoftVerdict:
        calls = model.log.exchanges
        last = calls[-1] if calls else None
        return SoftVerdict(
            rubric=self.__name__,
            outcome=outcome,
            reason=reason,
            score=score,
            threshold=self.threshold,
            judge_model=last.model if last is not None else self.judge.model if self.judge else None,
            rubric_hash=self.rubric.hash,
            raw_answer=last.raw_answer if last is not None else None,
            prompt=last.prompt if last is not None else None,
        )

    def _keep(self, verdict: SoftVerdict) -> None:
        self.verdict = verdict
        if self.log is not None:
            self.log.add_soft(verdict)


def rubric_metrics(
    rubrics: RubricSet, case: Case, judge: JudgeConfig | None, log: CaseLog | None = None
) -> list[RubricMetric]:
    """The rubrics that apply to this case, each a soft-gate metric; given the log's trace, to this run."""
    trace = log.trace if log is not None else None
    return [RubricMetric(rubric, judge, log) for rubric in rubrics.for_case(case, trace)]
