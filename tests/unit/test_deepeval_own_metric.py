"""A DeepEval metric of the user's own, in a test written from docs/agent.md's pattern (assert_run), reaches the
store: as a soft gate `metric:<name>` unless declared hard (deepeval_metrics.hard), then as one of the case's
checks, deciding the run; an own metric that raises is an error, never a pass."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
os.environ.setdefault("DEEPEVAL_DISABLE_DOTENV", "1")

from deepeval.metrics import BaseMetric

import deepeval_metrics as kit
from deepeval_metrics import own_metric, runner
from deepeval_metrics.caselog import collecting
from deepeval_metrics.session import EvalSession
from kit.store import open_store

AGENT = """\
def good(text):
    return {"final_output": "ORD-1 has shipped, thank you", "finish_reason": "finish", "spans": []}
"""
CASES = """\
- id: order
  input: "Where is ORD-1?"
  checks:
    - {type: contains, text: shipped}
"""


class Politeness(BaseMetric):
    """What a team writes: a metric of its own, from DeepEval's BaseMetric."""

    def __init__(self, threshold: float = 0.5, word: str = "thank") -> None:
        self.threshold = threshold
        self.word = word

    def measure(self, test_case: Any, *args: Any, **kwargs: Any) -> float:
        self.score = 1.0 if self.word in test_case.actual_output else 0.0
        self.success = self.score >= self.threshold
        self.reason = f"says {self.word!r}" if self.success else f"never says {self.word!r}"
        return self.score

    async def a_measure(self, test_case: Any, *args: Any, **kwargs: Any) -> float:
        return self.measure(test_case)

    def is_successful(self) -> bool:
        return bool(self.success)

    @property
    def __name__(self) -> str:
        return "Politeness"


class Broken(Politeness):
    def measure(self, test_case: Any, *args: Any, **kwargs: Any) -> float:
        raise RuntimeError("no tokenizer")

    @property
    def __name__(self) -> str:
        return "Broken"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "own_metric_agent.py").write_text(AGENT)
    (tmp_path / "cases.yaml").write_text(CASES)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.kit]\ncases = "cases.yaml"\nagent = "own_metric_agent:good"\nstore = "store.duckdb"\n'
    )
    monkeypatch.chdir(tmp_path)
    for var in ("KIT_AGENT", "KIT_CASES", "KIT_RUBRICS", "KIT_REPLAY_RUNS", "KIT_STORE", "KIT_RUN_ID"):
        monkeypatch.delenv(var, raising=False)
    runner.plan.cache_clear()
    # Each test stands for a session of its own: a metric declared hard (kit.hard) stays hard for the rest of
    # the process, so a declaration made in one test would make another test's same-named metric hard too.
    monkeypatch.setattr(own_metric, "_HARD_NAMES", set())
    yield tmp_path
    runner.plan.cache_clear()


def _stored(project: Path, logs: list[Any]) -> list[tuple[str, str, str]]:
    saved = dict(os.environ)
    try:
        session = EvalSession.begin(runner.plan(), "deepeval")  # exports the run's settings, as for DeepEval
        for log in logs:
            session.record(log)
        session.finish()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    with open_store(project / "store.duckdb").connect() as con:
        return con.execute(
            'SELECT "check", gate, outcome FROM check_results WHERE run_id = ? ORDER BY "check"', [session.run_id]
        ).fetchall()


def test_a_users_own_metric_is_stored_as_a_soft_gate(project: Path) -> None:
    [case] = kit.load_cases().cases
    with collecting() as logs:
        log = kit.run_agent(case)
        kit.assert_run(log, [*kit.oracle_metrics(case, log), Politeness()])
    verdict = log.soft["metric:Politeness"]
    assert verdict.outcome == "pass" and verdict.threshold == 0.5 and verdict.reason == "says 'thank'"
    rows = _stored(project, logs)
    assert ("contains", "hard", "pass") in rows
    assert [r for r in rows if r[0] == "metric:Politeness"] == [("metric:Politeness", "soft", verdict.outcome)]


def test_a_failing_soft_metric_fails_the_test_in_deepeval_and_is_stored_as_failed(project: Path) -> None:
    [case] = kit.load_cases().cases
    with collecting() as logs:
        log = kit.run_agent(case)
        with pytest.raises(AssertionError, match="Politeness"):
            kit.assert_run(log, [*kit.oracle_metrics(case, log), Politeness(word="sorry")])
    assert log.case_run().passed  # a soft gate does not decide the run
    assert ("metric:Politeness", "soft", "fail") in _stored(project, logs)


def test_a_metric_declared_hard_decides_the_run(project: Path) -> None:
    [case] = kit.load_cases().cases
    with collecting() as logs:
        log = kit.run_agent(case)
        with pytest.raises(AssertionError, match="Politeness"):
            kit.assert_run(log, [*kit.oracle_metrics(case, log), kit.hard(Politeness(word="sorry"))])
    run = log.case_run()
    assert not run.passed and [r.name for r in run.failures] == ["metric:Politeness"]
    assert ("metric:Politeness", "hard", "fail") in _stored(project, logs)


def test_an_own_metric_that_raises_is_an_error(project: Path) -> None:
    [case] = kit.load_cases().cases
    with collecting() as logs:
        log = kit.run_agent(case)
        with pytest.raises(Exception, match="no tokenizer"):
            kit.assert_run(log, [*kit.oracle_metrics(case, log), Broken()])
    assert log.soft["metric:Broken"].outcome == "error"
    assert ("metric:Broken", "soft", "error") in _stored(project, logs)
