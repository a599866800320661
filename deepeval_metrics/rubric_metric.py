"""Soft gates: G-Eval rubrics, judged by the kit's one configured judge.

A RubricMetric is `flaky` in DeepEval's sense: its verdict is shown and stored but never fails the test
case (DeepEval skips flaky metrics when it settles a case). The build fails on soft gates only when a
rubric's pass rate falls below its floor, which the eval session checks at the end (tests/evals).

- No judge configured: the metric marks itself `skipped` (DeepEval then leaves it out of the results, so
  it cannot show as a pass) and the store gets `skipped` with the reason.
- The judge is down, refuses, or answers something that is not a verdict: `error` naming the judge and its
  endpoint; an error is never a pass.
- The case or run lacks a field the rubric needs (kit/judge/rubrics.py): the rubric does not apply; no verdict,
  no row, never an error. `rubric_metrics` leaves such rubrics out; `measure` checks again for test cases
  built elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from functools import cache
from typing import Any

from deepeval.metrics import BaseMetric, GEval
from deepeval.test_case import LLMTestCase, SingleTurnParams

from deepeval_metrics.caselog import CaseLog, SoftVerdict
from deepeval_metrics.judge_model import JudgeError, KitJudgeModel
from kit.case import Case
from kit.judge import NO_JUDGE_REASON, JudgeCall, JudgeConfig, majority
from kit.judge.rubrics import Rubric, RubricSet, case_context, retrieved

# Steps G-Eval drafts from a rubric's criteria, kept per (judge, endpoint, rubric version) for the session:
# every case is then judged against the same steps, and each case costs one judge call instead of two.
_DRAFTED_STEPS: dict[tuple[str, str, str], list[str]] = {}

# One judge sample: given a fresh judge model, (score 0..1, reason), or raises when the judge failed.
Sample = Callable[[KitJudgeModel], tuple[float | None, str]]


@cache
def _configured_samples() -> int:
    """The plan's gates' `judge.samples`, read once per process."""
    from deepeval_metrics.runner import plan

    return plan().gate_policy.judge.samples


def soft_gate_fields(
    metric: Any,
    rubric: Rubric,
    judge: JudgeConfig | None,
    log: CaseLog | None,
    skip_reason: str,
    async_mode: bool,
    samples: int | None = None,
) -> None:
    """What every rubric metric (single-turn or conversational) carries: DeepEval's fields and the kit's."""
    metric.rubric = rubric
    metric.judge = judge
    metric.log = log
    metric.skip_reason = skip_reason
    metric.async_mode = async_mode
    metric.samples = samples if samples is not None else _configured_samples()
    metric.threshold = rubric.threshold
    metric.flaky = True  # soft gate: shown, stored, never fails the case on its own
    metric.include_reason = True
    metric.evaluation_model = judge.model if judge is not None else None


def _calls(model: KitJudgeModel, sample: int, outcome: str, score: float | None, reason: str) -> list[JudgeCall]:
    """The judge calls of one sample; the last one gave its verdict (an earlier one drafted steps)."""
    exchanges = model.log.exchanges
    if not exchanges:  # failed before any call reached the judge: still one audited (failed) call
        return [JudgeCall(None, None, model.config.model, sample, outcome, score, reason, error=reason)]
    out = []
    for i, e in enumerate(exchanges):
        last = i == len(exchanges) - 1
        out.append(
            JudgeCall(
                prompt=e.prompt,
                raw_answer=e.raw_answer,
                judge_model=e.model,
                sample=sample,
                outcome=outcome if last else None,
                score=score if last else None,
                reason=reason if last else None,
                prompt_tokens=e.prompt_tokens,
                completion_tokens=e.completion_tokens,
                cost_usd=e.cost_usd,
                latency_ms=e.latency_ms,
                error=e.error or (reason if last and outcome == "error" else None),
            )
        )
    return out


def judged(log: Any, judge: JudgeConfig) -> AbstractContextManager[Any]:
    """The judge's calls about the run `log` holds, recorded or replayed with the model calls' recordings
    (kit.recording.judging: `_judge/<case id>.json`, by attempt); outside any run, as they come."""
    from kit.recording import judging

    return judging(log.case.id if log is not None else None, log.attempt if log is not None else 0, judge.model)


def sampled_verdict(rubric: Rubric, judge: JudgeConfig, samples: int, measure_once: Sample) -> SoftVerdict:
    """A rubric's verdict on one answer: the majority of `samples` judge samples, each through a fresh
    judge model; a sample the judge failed makes the verdict an error naming it, never a pass."""
    outcomes: list[str] = []
    scores: list[float] = []
    reasons: list[str] = []
    calls: list[JudgeCall] = []
    failure: str | None = None
    for k in range(samples):
        model = KitJudgeModel(judge)
        try:
            score, reason = measure_once(model)
            outcome = "pass" if score is not None and score >= rubric.threshold else "fail"
        except Exception as exc:  # JudgeError, or DeepEval refusing the answer: an error, never a pass
            score, outcome = None, "error"
            reason = str(exc) if isinstance(exc, JudgeError) else f"{judge.describe()}: {exc}"
            if samples > 1:
                reason = f"judge sample {k + 1} of {samples}: {reason}"
            failure = failure or reason
        outcomes.append(outcome)
        reasons.append(reason)
        if score is not None:
            scores.append(score)
        calls += _calls(model, k, outcome, score, reason)
    verdict = majority(outcomes)
    last = calls[-1]
    if verdict == "error":
        score, reason = None, failure or ""
    else:
        score = sum(scores) / len(scores) if scores else None
        reason = reasons[outcomes.index(verdict)]
        if samples > 1:
            counts = f"{outcomes.count('pass')} pass, {outcomes.count('fail')} fail"
            reason = f"majority of {samples} judge samples ({counts}): {reason}"
    return SoftVerdict(
        rubric=f"rubric:{rubric.name}",
        outcome=verdict,
        reason=reason,
        score=score,
        threshold=rubric.threshold,
        judge_model=last.judge_model,
        rubric_hash=rubric.hash,
        raw_answer=last.raw_answer,
        prompt=last.prompt,
        calls=tuple(calls),
    )


def skipped_verdict(rubric: Rubric, reason: str) -> SoftVerdict:
    """No judge: `skipped` with the reason, never a pass."""
    return SoftVerdict(f"rubric:{rubric.name}", "skipped", reason, threshold=rubric.threshold, rubric_hash=rubric.hash)


def settle(metric: Any, verdict: SoftVerdict) -> float | None:
    """The verdict as the metric's DeepEval fields, and into the case's log for the store."""
    metric.verdict = verdict
    if verdict.outcome == "skipped":
        metric.skipped = True
        metric.score, metric.success, metric.reason = None, None, verdict.reason
    elif verdict.outcome == "error":
        metric.error, metric.score, metric.success, metric.reason = verdict.reason, None, False, verdict.reason
    else:
        metric.score, metric.reason = verdict.score, verdict.reason
        metric.success = verdict.outcome == "pass"
    if metric.log is not None:
        metric.log.add_soft(verdict)
    return metric.score


def geval_sample(rubric: Rubric, judge: JudgeConfig, test_case: LLMTestCase) -> Sample:
    """One G-Eval judgement of a single-turn test case, as a sample."""
    steps_key = (judge.model, judge.endpoint, rubric.hash)

    def once(model: KitJudgeModel) -> tuple[float | None, str]:
        geval = GEval(
            name=rubric.name,
            criteria=rubric.criteria,
            evaluation_steps=rubric.evaluation_steps or _DRAFTED_STEPS.get(steps_key),
            evaluation_params=[SingleTurnParams(p) for p in rubric.params],
            threshold=rubric.threshold,
            model=model,
            async_mode=False,  # one blocking call at a time: simple, and the judge sees no burst
            _include_g_eval_suffix=False,
        )
        geval.measure(test_case, _show_indicator=False)
        if not rubric.evaluation_steps and geval.evaluation_steps:
            _DRAFTED_STEPS[steps_key] = list(geval.evaluation_steps)
        return geval.score, geval.reason or ""

    return once


class RubricGate:
    """What a rubric's soft gate is, single-turn or conversational: its fields (DeepEval rebuilds a metric from
    these constructor arguments) and its name."""

    def __init__(
        self,
        rubric: Rubric,
        judge: JudgeConfig | None,
        log: CaseLog | None = None,
        skip_reason: str = NO_JUDGE_REASON,
        async_mode: bool = True,
        samples: int | None = None,
    ) -> None:
        soft_gate_fields(self, rubric, judge, log, skip_reason, async_mode, samples)
        self.verdict: SoftVerdict | None = None

    @property
    def __name__(self) -> str:
        return f"rubric:{self.rubric.name}"


class RubricMetric(RubricGate, BaseMetric):
    def skip(self) -> None:
        """No judge: `skipped` with the reason, in the metric and in the case's log (never a pass)."""
        settle(self, skipped_verdict(self.rubric, self.skip_reason))

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
        once = geval_sample(self.rubric, self.judge, test_case)
        with judged(self.log, self.judge):
            return settle(self, sampled_verdict(self.rubric, self.judge, self.samples, once))

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


def rubric_metrics(
    rubrics: RubricSet, case: Case, judge: JudgeConfig | None, log: CaseLog | None = None
) -> list[RubricMetric]:
    """The rubrics that apply to this case, each a soft-gate metric; given the log's trace, to this run."""
    trace = log.trace if log is not None else None
    return [RubricMetric(rubric, judge, log) for rubric in rubrics.for_case(case, trace)]
