"""Conversations through the real commands: `kit run` stores one trace per conversation with its turns;
`deepeval test run tests/evals` judges ConversationalTestCases and fails act_before_confirm naming the
turn-scoped check; a simulated user without a user model is skipped in the store, never a pass."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import duckdb
import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
KIT = ROOT / ".venv" / "bin" / "kit"
DEEPEVAL = ROOT / ".venv" / "bin" / "deepeval"

CASES = """
- id: mt-refund
  context: {customer_id: C001, email: alice.moreau@example.com}
  turns:
    - "My pour-over set from ORD-100001 arrived damaged. Please refund it."
    - "Yes, go ahead."
  checks:
    - {type: not_called, tool: issue_refund, turn: 0}
    - {type: called, tool: issue_refund, turn: last}
- id: sim
  context: {customer_id: C001}
  user: {instruction: "You want a refund for ORD-100001. Say yes when asked.", max_turns: 4}
  checks:
    - {type: called, tool: issue_refund}
"""


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("KIT_", "DEEPEVAL_", "CONFIDENT_"))}
    (tmp / "cases.yaml").write_text(CASES)
    return {
        **clean,
        "DEEPEVAL_TELEMETRY_OPT_OUT": "1",
        "DEEPEVAL_DISABLE_DOTENV": "1",
        "NO_COLOR": "1",
        "COLUMNS": "200",
        "KIT_CASES": str(tmp / "cases.yaml"),
        "KIT_RUBRICS": str(tmp / "no-rubrics.yaml"),
        "KIT_STORE": str(tmp / "store" / "evals.duckdb"),
        **extra,
    }


def _rows(tmp: Path, sql: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(tmp / "store" / "evals.duckdb"), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_kit_run_stores_one_trace_per_conversation_with_its_turns(tmp_path: Path) -> None:
    out = subprocess.run(
        [str(KIT), "run", "--cases", str(tmp_path / "cases.yaml")],
        cwd=ROOT,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 1, out.stdout + out.stderr  # the skipped simulated user is not a pass
    rows = _rows(
        tmp_path,
        """SELECT case_id, outcome, passed, trace->>'$.spans[0].role', trace->>'$.spans[0].turn',
                  trace->>'$.spans[-1].turn' FROM case_results ORDER BY case_id""",
    )
    assert rows == [("mt-refund", "pass", True, "user", "0", "1"), ("sim", "skipped", False, None, None, None)]
    reason = _rows(tmp_path, "SELECT reason FROM check_results WHERE case_id = 'sim' AND outcome = 'skipped'")
    assert reason and "no user model configured" in reason[0][0]


def test_deepeval_fails_act_before_confirm_naming_the_turn_scoped_check(tmp_path: Path) -> None:
    out = subprocess.run(
        [str(DEEPEVAL), "test", "run", str(ROOT / "tests" / "evals"), "--tb=line", "-d", "failing"],
        cwd=tmp_path,
        env=_env(tmp_path, KIT_VARIANT="act_before_confirm"),
        capture_output=True,
        text=True,
        timeout=240,
    )
    text = out.stdout + out.stderr
    assert out.returncode == 1, text[-3000:]
    assert "not_called:issue_refund@turn0" in text
    failed = _rows(tmp_path, """SELECT case_id, "check" FROM check_results WHERE outcome = 'fail'""")
    assert ("mt-refund", "not_called:issue_refund@turn0") in failed
    assert _rows(tmp_path, "SELECT outcome FROM case_results WHERE case_id = 'sim'") == [("skipped",)]
