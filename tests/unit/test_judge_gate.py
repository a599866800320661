"""A judge that fails gives no verdict on the agent: its errors are left out of a soft gate's pass rate (the
hard gates decide, unless gates.yaml says `soft: {errors: fail}`), and `make evals`' summary says so."""

from __future__ import annotations

import json

import pytest

from kit.cli import main as kit
from kit.judge import judge_failure_lines
from kit.pipeline.summary import collect, summary_text
from kit.result import CaseRun, Result
from kit.store import open_store

MESSAGE = "judge j at http://127.0.0.1:1/v1 refused the call: HTTP 500: judge double: scripted HTTP 500"


@pytest.fixture
def store(tmp_path):
    return open_store(tmp_path / "evals.duckdb")


def _record(store, hard_ok: bool, soft: list[str]) -> str:
    run_id = store.start_run("deepeval", model="m", git_sha=None)
    store.record(run_id, CaseRun("a", 0, (Result("no_pii", hard_ok, "" if hard_ok else "email in output"),)))
    for i, outcome in enumerate(soft):
        reason = MESSAGE if outcome == "error" else "fine"
        store.record_soft(run_id, f"c{i}", 0, "rubric:tone", outcome=outcome, reason=reason, judge_model="j")
    store.finish_run(run_id)
    return run_id


def _gate(store, tmp_path, policy: str = "soft: {default_floor: 0.8}\n") -> int:
    cfg = tmp_path / "gates.yaml"
    cfg.write_text(policy)
    return kit(["gate", "--store", str(store.path), "--config", str(cfg)])


def test_judge_errors_leave_the_verdict_to_the_hard_gates(store, tmp_path, capsys):
    _record(store, True, ["error"] * 4)
    assert _gate(store, tmp_path) == 0
    out = capsys.readouterr()
    assert "rubric:tone: the judge failed on 4 verdicts, left out of its pass rate" in out.out + out.err
    assert _gate(store, tmp_path, "soft: {default_floor: 0.8, errors: fail}\n") == 1
    assert "soft gate rubric:tone: pass rate 0.00 under its floor 0.80" in capsys.readouterr().err


def test_judge_errors_do_not_hide_a_hard_failure(store, tmp_path, capsys):
    _record(store, False, ["error"] * 2)
    assert _gate(store, tmp_path) == 1
    assert "hard fail: case a check no_pii" in capsys.readouterr().err


def test_the_summary_says_the_judge_failed_with_its_message(store):
    before: set[str] = set()
    _record(store, True, ["pass", "error", "error"])
    with store.connect() as con:
        data = collect(con, before)
    text = summary_text(data, [])
    assert "== judge FAILED" in text
    assert "rubric:tone: the judge failed on 2/3 cases [deepeval]: " + MESSAGE in text
    assert judge_failure_lines([{"check": "rubric:tone", "gate": "soft", "errored": 0}]) == []


def _pf_result(grader: dict) -> dict:
    oracle = {
        "pass": True,
        "score": 1,
        "reason": "[PASS] no_pii",
        "assertion": {"type": "javascript", "metric": "no_pii"},
    }
    graded = {"assertion": {"type": "promptfoo:redteam:policy", "metric": "PolicyViolation"}, "score": 0, **grader}
    return {
        "success": False,
        "failureReason": 1,
        "provider": {"id": "agent", "label": "agent-default"},
        "testCase": {"metadata": {"case_id": "redteam/a1/basic"}},
        "response": {"output": "I cannot do that."},
        "gradingResult": {"pass": False, "componentResults": [oracle, graded]},
    }


@pytest.mark.parametrize(
    ("grader", "outcome"),
    [
        ({"pass": False, "reason": MESSAGE, "metadata": {"graderError": True}}, "error"),
        ({"pass": False, "reason": "the agent complied"}, "fail"),
    ],
)
def test_a_red_team_grader_is_a_soft_gate_its_judge_failing_an_error(store, tmp_path, grader, outcome):
    f = tmp_path / "redteam.json"
    f.write_text(json.dumps({"evalId": "e1", "results": {"version": 3, "results": [_pf_result(grader)]}}))
    assert kit(["ingest", "promptfoo", str(f), "--store", str(store.path)]) == 0
    with store.connect() as con:
        checks = con.execute("""SELECT "check", gate, outcome FROM check_results ORDER BY 1""").fetchall()
        passed = con.execute("SELECT passed FROM case_results").fetchall()
    # The oracle passed: the case passes its hard gates; the grader's verdict (or its judge's error) is soft.
    assert checks == [("PolicyViolation", "soft", outcome), ("no_pii", "hard", "pass")]
    assert passed == [(True,)]


def test_judge_errors_are_no_drop_since_the_baseline(store, tmp_path, capsys):
    base = _record(store, True, ["pass"] * 4)
    _record(store, True, ["pass", "error", "error", "error"])
    policy = "soft: {default_floor: 0.8}\nbaseline: {soft_max_drop: 0.1}\n"
    cfg = tmp_path / "gates.yaml"
    cfg.write_text(policy)
    assert kit(["gate", "--store", str(store.path), "--config", str(cfg), "--baseline", base]) == 0
    assert "dropped" not in capsys.readouterr().err
    _record(store, True, ["pass", "fail", "error", "error"])
    assert kit(["gate", "--store", str(store.path), "--config", str(cfg), "--baseline", base]) == 1
    assert "rubric:tone: pass rate dropped from 1.00 to 0.50" in capsys.readouterr().err
