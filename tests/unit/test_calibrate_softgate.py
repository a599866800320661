"""Soft gates and calibration: `judge.samples: K` makes a verdict the majority of K judge samples (each call in
judge_calls with its tokens), and each rubric soft gate shows its last calibration, or `uncalibrated` when the
rubric or the judge model changed since. The judge is a scripted double on 127.0.0.1; the store is real."""

from __future__ import annotations

from pathlib import Path

import pytest
from deepeval.test_case import LLMTestCase

from deepeval_metrics.rubric_metric import RubricMetric
from kit.doubles.judge import ScriptedJudge
from kit.doubles.openai_server import ScriptedOpenAIServer
from kit.errors import KitInputError
from kit.gate.policy import judge_samples
from kit.judge import judge_config
from kit.judge.rubrics import Rubric
from kit.pipeline.summary import collect, judge_usage_lines, soft_lines
from kit.report import html
from kit.report.data import soft_gate_calibrations
from kit.store import open_store

RUBRIC = Rubric(name="polite", evaluation_steps=["Check the Actual Output is polite."], params=["actual_output"])
USAGE = {"prompt_tokens": 200, "completion_tokens": 20, "cost": 0.001}


def _judge(url: str):
    return judge_config({"KIT_JUDGE_MODEL": "judge-k-2024-01-01", "KIT_JUDGE_BASE_URL": url, "KIT_JUDGE_RETRIES": "0"})


def _measure(scores: list[int], samples: int) -> tuple[RubricMetric, ScriptedJudge]:
    double = ScriptedJudge([{"match": "SHIPS-TODAY", "scores": scores}], usage=USAGE)
    with ScriptedOpenAIServer(double) as srv:
        metric = RubricMetric(RUBRIC, _judge(srv.base_url), samples=samples)
        metric.measure(LLMTestCase(input="When?", actual_output="SHIPS-TODAY, thank you for waiting."))
    return metric, double


def test_the_verdict_is_the_majority_of_k_samples_each_kept() -> None:
    metric, double = _measure([9, 2, 9], samples=3)
    v = metric.verdict
    assert v is not None and v.outcome == "pass" and metric.is_successful()
    assert v.reason.startswith("majority of 3 judge samples (2 pass, 1 fail)")
    assert [c.outcome for c in v.calls] == ["pass", "fail", "pass"] and [c.sample for c in v.calls] == [0, 1, 2]
    assert {(c.prompt_tokens, c.completion_tokens, c.cost_usd) for c in v.calls} == {(200, 20, 0.001)}
    assert double.asked["SHIPS-TODAY"] == 3
    assert v.score == pytest.approx((0.9 + 0.2 + 0.9) / 3)
    fail, _ = _measure([2, 9, 1], samples=3)
    assert fail.verdict is not None and fail.verdict.outcome == "fail" and not fail.is_successful()


def test_a_failed_sample_makes_the_verdict_an_error_never_a_pass() -> None:
    metric, _ = _measure([9, 9], samples=3)  # the third call is not scripted: HTTP 500
    assert metric.verdict is not None and metric.verdict.outcome == "error"
    assert metric.error is not None and "judge sample 3 of 3" in metric.error and "HTTP 500" in metric.error
    assert len(metric.verdict.calls) == 3 and metric.verdict.calls[-1].error is not None


def test_judge_samples_from_gates_yaml(tmp_path: Path) -> None:
    gates = tmp_path / "gates.yaml"
    gates.write_text("judge: {samples: 5}\n")
    assert judge_samples(gates) == 5
    assert judge_samples(tmp_path / "absent.yaml") == 1
    gates.write_text("judge: {samples: 2}\n")
    with pytest.raises(KitInputError, match="must be odd"):
        judge_samples(gates)


def test_soft_gates_show_their_calibration_until_the_rubric_or_judge_changes(tmp_path: Path) -> None:
    metric, _ = _measure([9, 2, 9], samples=3)
    v = metric.verdict
    assert v is not None
    store = open_store(tmp_path / "evals.duckdb")
    run_id = store.start_run("deepeval", agent="a")
    store.record_soft(
        run_id,
        "c1",
        0,
        v.rubric,
        outcome="pass",
        score=v.score,
        reason=v.reason,
        rubric_hash=v.rubric_hash,
        calls=v.calls,
    )
    store.finish_run(run_id)
    with store.connect() as con:
        assert soft_gate_calibrations(con, [run_id])[0]["calibration"].startswith("uncalibrated (never")
        rows = con.execute("SELECT sample, prompt_tokens, cost_usd FROM judge_calls ORDER BY sample").fetchall()
    assert rows == [(0, 200, 0.001), (1, 200, 0.001), (2, 200, 0.001)]
    row = {
        "calibration_id": "cal-1",
        "rubric": "polite",
        "rubric_hash": RUBRIC.hash,
        "judge_model": "judge-k-2024-01-01",
    }
    store.record_calibration([{**row, "calibrated_at": "2026-11-30T10:00:00", "samples": 3, "n": 30, "kappa": 0.7}])
    with store.connect() as con:
        (gate,) = soft_gate_calibrations(con, [run_id])
        data = collect(con, set())
    assert gate["calibration"] == "kappa 0.70, n 30, judge judge-k-2024-01-01, 2026-11-30" and gate["samples"] == 3
    (head, line) = soft_lines(data)
    assert head.startswith("\n== soft gates")
    assert "rubric:polite" in line and "1/1 passed" in line and "majority of 3" in line and "kappa 0.70, n 30" in line
    with store.connect() as con:  # the HTML report shows it beside the gate too
        page = html.render(html.gather(con, [run_id]))
    assert "rubric:polite: kappa 0.70, n 30, judge judge-k-2024-01-01, 2026-11-30" in page
    usage = judge_usage_lines(data)
    assert "3 calls, 600 prompt + 60 completion tokens, $0.0030" in usage[1]
    # A newer calibration of another rubric version no longer applies to this gate's verdicts.
    store.record_calibration([{**row, "rubric_hash": "0" * 16, "calibrated_at": "2026-12-01T10:00:00", "n": 30}])
    with store.connect() as con:
        (gate,) = soft_gate_calibrations(con, [run_id])
    assert gate["calibration"] == "uncalibrated (the rubric changed since its calibration of 2026-12-01)"
    store.close()


def test_a_baseline_store_brings_its_calibrations(tmp_path: Path) -> None:
    from kit.store.merge import import_runs

    base = open_store(tmp_path / "base.duckdb")
    row = {"calibration_id": "cal-1", "rubric": "polite", "rubric_hash": RUBRIC.hash, "judge_model": "j", "n": 30}
    base.record_calibration([{**row, "calibrated_at": "2026-11-30T10:00:00", "kappa": 0.8}])
    base.close()
    here = open_store(tmp_path / "here.duckdb")
    for _ in range(2):  # copying twice copies nothing
        import_runs(here, tmp_path / "base.duckdb")
    with here.connect() as con:
        got = con.execute("SELECT calibration_id, rubric, kappa FROM calibrations").fetchall()
    assert got == [("cal-1", "polite", 0.8)]
    here.close()
