"""A DeepEval metric of your own, stored in the kit's store like the kit's own: a soft gate (`metric:<name>`
beside the rubrics), or a hard gate when declared so (`hard(metric)`: then it is one of the case's checks and
decides whether the run passed).

`assert_run` wraps every metric that is not the kit's in a `StoredMetric`, which measures yours and writes
its verdict into the run's CaseLog (DeepEval measures copies of the metrics it is given, rebuilt from their
constructor arguments, so a metric cannot hand its verdict back through itself: the wrapper's copies share
your metric and the log). DeepEval shows the same name, score, reason and success as your metric gives.
"""

from __future__ import annotations

import asyncio
from typing import Any

from deepeval.metrics import BaseConversationalMetric, BaseMetric

from deepeval_metrics.caselog import CaseLog, SoftVerdict
from kit.result import Result

GATE_ATTR = "kit_gate"  # "hard" on a metric (hard(metric) sets it): a hard gate; else soft


# The names of the metrics declared hard. DeepEval measures copies rebuilt from constructor arguments, which
# lose the attribute: a verdict seen after the fact (deepeval_metrics.evaluated) is told hard by its name.
_HARD_NAMES: set[str] = set()


def hard(metric: Any) -> Any:
    """Declare a DeepEval metric of your own a hard gate: its verdict is one of the case's checks (wherever a
    metric of that name is measured in this session, through `assert_run` or a bare `deepeval.assert_test`)."""
    setattr(metric, GATE_ATTR, "hard")
    _HARD_NAMES.add(name_of(metric))
    return metric


def declared_hard(name: str) -> bool:
    """A metric of this name was declared hard (`hard(metric)`) in this process."""
    return name in _HARD_NAMES


def name_of(metric: Any) -> str:
    name = getattr(metric, "__name__", None)
    return name if isinstance(name, str) and name else type(metric).__name__


class _Stored:
    """Your metric, measured as it is, its verdict written into the CaseLog."""

    def __init__(self, metric: Any, log: CaseLog, hard: bool = False) -> None:
        self.metric = metric
        self.log = log
        self.hard = hard
        self.threshold = getattr(metric, "threshold", 0.5)
        self.async_mode = getattr(metric, "async_mode", True)
        self.strict_mode = getattr(metric, "strict_mode", False)
        self.include_reason = getattr(metric, "include_reason", True)
        self.evaluation_model = getattr(metric, "evaluation_model", None)

    @property
    def __name__(self) -> str:  # what DeepEval prints: your metric's own name
        return name_of(self.metric)

    def measure(self, test_case: Any, *args: Any, **kwargs: Any) -> float:
        try:
            score = self.metric.measure(test_case, *args, **kwargs)
        except Exception as e:
            self._settle(error=f"{type(e).__name__}: {e}")
            raise
        self._settle()
        return score  # type: ignore[no-any-return]

    async def a_measure(self, test_case: Any, *args: Any, **kwargs: Any) -> float:
        own = getattr(self.metric, "a_measure", None)
        try:
            if own is not None and getattr(self.metric, "async_mode", True):
                score = await own(test_case, *args, **kwargs)
            else:
                score = await asyncio.to_thread(self.metric.measure, test_case, *args, **kwargs)
        except Exception as e:
            self._settle(error=f"{type(e).__name__}: {e}")
            raise
        self._settle()
        return score  # type: ignore[no-any-return]

    def is_successful(self) -> bool:
        return bool(self.success)

    def _settle(self, error: str | None = None) -> None:
        """Mirror your metric's verdict (what DeepEval reads from this one) and record it."""
        m = self.metric
        for attr in ("score", "reason", "threshold", "evaluation_cost", "verbose_logs", "score_breakdown"):
            if hasattr(m, attr):
                setattr(self, attr, getattr(m, attr))
        self.error = error if error is not None else getattr(m, "error", None)
        if self.error is None:
            try:
                self.success = bool(m.is_successful())
            except Exception as e:  # a metric of one's own that cannot say: an error, never a pass
                self.error = f"is_successful raised {type(e).__name__}: {e}"
        if self.error is not None:
            self.success = False
        outcome = "error" if self.error is not None else "pass" if self.success else "fail"
        score = getattr(self, "score", None)
        score = float(score) if isinstance(score, int | float) else None
        reason = self.error or str(getattr(self, "reason", None) or outcome)
        name = f"metric:{self.__name__}"
        if self.hard:
            self.log.add_own_hard(Result(name, outcome == "pass", reason, error=outcome == "error", score=score))
        else:
            model = self.evaluation_model
            self.log.add_soft(
                SoftVerdict(
                    name,
                    outcome,  # type: ignore[arg-type]
                    reason,
                    score=score,
                    threshold=getattr(self, "threshold", None),
                    judge_model=model if isinstance(model, str) else None,
                )
            )


class StoredMetric(_Stored, BaseMetric):
    """Your metric of an LLMTestCase (a single-turn run), stored."""


class StoredConversationalMetric(_Stored, BaseConversationalMetric):
    """Your metric of a ConversationalTestCase (a multi-turn run), stored."""


def stored(metrics: list[Any], log: CaseLog) -> list[Any]:
    """`metrics` with every metric that is not the kit's own wrapped to store its verdict in `log`."""
    out: list[Any] = []
    for m in metrics:
        if type(m).__module__.partition(".")[0] == "deepeval_metrics":
            out.append(m)  # the kit's oracle and rubric metrics record themselves
            continue
        kind = StoredConversationalMetric if isinstance(m, BaseConversationalMetric) else StoredMetric
        out.append(kind(m, log, getattr(m, GATE_ATTR, "soft") == "hard"))
    return out
