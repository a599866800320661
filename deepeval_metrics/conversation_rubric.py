"""Soft gates on conversations: each rubric that applies to a multi-turn case, as a conversational G-Eval
(DeepEval's ConversationalGEval) judged by the kit's one judge over every turn of the conversation.

Same rules, through the same functions, as the single-turn rubrics (deepeval_metrics/rubric_metric.py):
`flaky`, so it never fails a test case on its own; the majority of gates.yaml's `judge.samples`; `skipped`
(never a pass) without a judge; an `error` naming the judge when it fails. The verdict goes to the case's
CaseLog under the same `rubric:<name>` as on a single-turn case.
"""

from __future__ import annotations

from typing import Any

from deepeval.metrics import BaseConversationalMetric, ConversationalGEval
from deepeval.test_case import MultiTurnParams

from deepeval_metrics.caselog import CaseLog
from deepeval_metrics.judge_model import KitJudgeModel
from deepeval_metrics.rubric_metric import RubricGate, judged, sampled_verdict, settle, skipped_verdict
from kit.case import Case
from kit.judge import JudgeConfig
from kit.judge.rubrics import RubricSet


class ConversationalRubricMetric(RubricGate, BaseConversationalMetric):
    def measure(self, test_case: Any, *args: Any, **kwargs: Any) -> float | None:
        self.error = None
        if self.judge is None:
            return settle(self, skipped_verdict(self.rubric, self.skip_reason))
        params = [MultiTurnParams.ROLE, MultiTurnParams.CONTENT]
        if "expected_output" in self.rubric.params and getattr(test_case, "expected_outcome", None):
            params.append(MultiTurnParams.EXPECTED_OUTCOME)
        if "tools_called" in self.rubric.params and any(t.tools_called for t in test_case.turns):
            params.append(MultiTurnParams.TOOLS_CALLED)

        def once(model: KitJudgeModel) -> tuple[float | None, str]:
            geval = ConversationalGEval(
                name=self.rubric.name,
                criteria=self.rubric.criteria,
                evaluation_steps=self.rubric.evaluation_steps,
                evaluation_params=params,
                threshold=self.rubric.threshold,
                model=model,
                async_mode=False,
                _include_g_eval_suffix=False,
            )
            geval.measure(test_case, _show_indicator=False)
            return geval.score, geval.reason or ""

        with judged(self.log, self.judge):
            return settle(self, sampled_verdict(self.rubric, self.judge, self.samples, once))

    async def a_measure(self, test_case: Any, *args: Any, **kwargs: Any) -> float | None:
        return self.measure(test_case)

    def is_successful(self) -> bool:
        return self.error is None and bool(self.success)


def conversation_rubric_metrics(
    rubrics: RubricSet, case: Case, judge: JudgeConfig | None, log: CaseLog | None = None
) -> list[ConversationalRubricMetric]:
    """The rubrics that apply to this multi-turn case, each a conversational soft-gate metric."""
    return [ConversationalRubricMetric(rubric, judge, log) for rubric in rubrics.for_case(case)]
