"""`deepeval test run tests/evals` end to end, in a subprocess (DeepEval's pytest plugin stays out of this
process): a fault variant fails naming its check; judged rubrics reach the store with the judge call;
a soft gate below its gates.yaml floor fails the run although every hard gate passes.

These take ~5 s each (DeepEval's import and CLI); they are the only slow tests of this area."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import duckdb
import pytest

from kit.doubles.openai_server import ScriptedOpenAIServer

ROOT = Path(__file__).resolve().parents[2]
DEEPEVAL = ROOT / ".venv" / "bin" / "deepeval"

CASES = """
- id: refund-happy
  tags: [refund]
  context: {customer_id: C001, email: alice.moreau@example.com}
  input: "My ceramic pour-over set from order ORD-100001 arrived damaged. Please refund it - yes, go ahead."
  invariants: [money]
  checks:
    - {type: called, tool: lookup_order}
    - {type: order, before: lookup_order, after: issue_refund}
    - {type: arg, tool: issue_refund, key: amount, expected: 42.5}
- id: order-status
  context: {customer_id: C001, email: alice.moreau@example.com}
  input: "Where is my order ORD-100002?"
  checks:
    - {type: called, tool: lookup_order}
    - {type: finished}
"""
INVARIANTS = """
money:
  - {type: called_at_most, tool: issue_refund, n: 1}
  - name: one_refund_per_order
    type: end_state
    query: "SELECT order_id FROM refunds GROUP BY order_id HAVING count(*) > 1"
    empty: true
"""
RUBRICS = """
rubrics:
  - name: explains_refund
    evaluation_steps: ["Check the reply states the refunded amount and the order."]
    params: [input, actual_output]
    threshold: 0.7
    applies_to: {tags: [refund]}
"""


def _suite(tmp: Path) -> dict[str, str]:
    (tmp / "cases").mkdir()
    (tmp / "cases" / "cases.yaml").write_text(CASES)
    (tmp / "cases" / "invariants.yaml").write_text(INVARIANTS)
    (tmp / "rubrics.yaml").write_text(RUBRICS)
    (tmp / "gates.yaml").write_text('soft: {default_floor: 0.8, floors: {"rubric:explains_refund": 0.5}}\n')
    return {
        "KIT_CASES": str(tmp / "cases"),
        "KIT_RUBRICS": str(tmp / "rubrics.yaml"),
        "KIT_GATES": str(tmp / "gates.yaml"),
        "KIT_STORE": str(tmp / "store" / "evals.duckdb"),
    }


def _run(tmp: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("KIT_", "DEEPEVAL_", "CONFIDENT_"))}
    # The environment `make deepeval-evals` gives DeepEval before it starts (telemetry off, no .env).
    offline = {"DEEPEVAL_TELEMETRY_OPT_OUT": "1", "DEEPEVAL_DISABLE_DOTENV": "1"}
    full = {**clean, **offline, **_suite(tmp), "NO_COLOR": "1", "COLUMNS": "200", **env}
    # cwd is the temp folder: DeepEval's .deepeval/ files land there, not in the shared checkout.
    return subprocess.run(
        [str(DEEPEVAL), "test", "run", str(ROOT / "tests" / "evals"), "--tb=line", "-d", "failing"],
        cwd=tmp,
        env=full,
        capture_output=True,
        text=True,
        timeout=240,
    )


def _rows(tmp: Path, sql: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(tmp / "store" / "evals.duckdb"), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _judge(score: int) -> Any:
    def answer(body: dict[str, Any]) -> str:
        return json.dumps({"reason": f"scripted verdict {score}", "score": score})

    return answer


@pytest.mark.parametrize(("variant", "check"), [("double_refund", "called_at_most:issue_refund")])
def test_fault_variant_fails_naming_the_check(tmp_path: Path, variant: str, check: str) -> None:
    out = _run(tmp_path, KIT_VARIANT=variant)
    text = out.stdout + out.stderr
    assert out.returncode == 1, text[-3000:]
    assert "invariant:money" in text and check in text
    assert "skipped on all 1 runs (not a pass)" in text  # no judge: the rubric is skipped, never passed
    failed = _rows(tmp_path, "SELECT case_id, \"check\" FROM check_results WHERE outcome = 'fail' ORDER BY 1, 2")
    assert ("refund-happy", "invariant:money") not in failed  # the store keeps checks, not bundles
    assert ("refund-happy", check) in failed
    assert _rows(tmp_path, "SELECT status, source FROM runs") == [("complete", "deepeval")]
    # DeepEval's result cache stays off (its key ignores the trace): no cache file is left behind.
    assert (tmp_path / ".deepeval").is_dir() and not (tmp_path / ".deepeval" / ".deepeval-cache.json").exists()


def test_judged_rubrics_reach_the_store_with_the_judge_call(tmp_path: Path) -> None:
    with ScriptedOpenAIServer(_judge(9)) as srv:
        out = _run(tmp_path, KIT_JUDGE_MODEL="judge-2024-01-01", KIT_JUDGE_BASE_URL=srv.base_url)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-3000:]
    assert "rubric:explains_refund: 1/1 passed" in text
    assert len(srv.requests) == 1  # the rubric applies to the refund case only
    assert _rows(tmp_path, "SELECT count(*), count_if(passed) FROM case_results") == [(2, 2)]
    soft = _rows(
        tmp_path,
        """SELECT c.case_id, c.outcome, c.score, j.judge_model, j.rubric_hash, j.raw_answer
           FROM check_results c JOIN judge_calls j USING (run_id, case_id, attempt, "check")
           WHERE c.gate = 'soft'""",
    )
    assert len(soft) == 1
    case_id, outcome, score, model, rubric_hash, raw = soft[0]
    assert (case_id, outcome, model) == ("refund-happy", "pass", "judge-2024-01-01")
    assert score == pytest.approx(0.9) and len(rubric_hash) == 16
    assert json.loads(raw) == {"reason": "scripted verdict 9", "score": 9}


def test_soft_gate_below_its_floor_fails_the_run(tmp_path: Path) -> None:
    with ScriptedOpenAIServer(_judge(2)) as srv:
        out = _run(tmp_path, KIT_JUDGE_MODEL="judge-2024-01-01", KIT_JUDGE_BASE_URL=srv.base_url)
    text = out.stdout + out.stderr
    assert out.returncode == 1, text[-3000:]
    assert "rubric:explains_refund: 0/1 passed (0%) floor 50% BELOW FLOOR" in text
    assert _rows(tmp_path, "SELECT count_if(passed) FROM case_results") == [(2,)]  # every hard gate held
