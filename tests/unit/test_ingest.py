"""kit ingest: Promptfoo's and DeepEval's own result files land in the store as runs."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from kit.cli import main as kit
from kit.store import open_store

REPO = Path(__file__).resolve().parents[2]
BIN = REPO / "node_modules" / ".bin"


def _result(
    test_idx: int, case: str, output: str, components: list[dict], error: str | None = None, failure_reason: int = 0
) -> dict:
    """One entry of `results.results` as Promptfoo 0.123.1 writes it (trimmed to the fields the kit reads)."""
    ok = failure_reason == 0 and all(c["pass"] for c in components)
    out = {
        "cost": 0.001,
        "id": f"id-{test_idx}",
        "latencyMs": 12,
        "promptIdx": 0,
        "testIdx": test_idx,
        "provider": {"id": "python:providers/run_promptfoo.py", "label": "kit-agent"},
        "response": {"output": output, "tokenUsage": {"total": 50, "prompt": 40, "completion": 10}},
        "score": 1 if ok else 0,
        "success": ok,
        "failureReason": failure_reason,
        "testCase": {"description": case, "vars": {"case_id": case}, "metadata": {"case_id": case}},
        "vars": {"case_id": case},
        "gradingResult": None
        if failure_reason == 2
        else {"pass": ok, "score": 1 if ok else 0, "reason": "x", "componentResults": components},
    }
    if error:
        out["error"] = error
    return out


def _comp(kind: str, value: str, ok: bool, reason: str = "Assertion passed", **extra) -> dict:
    return {"pass": ok, "score": 1 if ok else 0, "reason": reason, "assertion": {"type": kind, "value": value, **extra}}


PROMPTFOO_FILE = {
    "evalId": "eval-abc-2026-01-01T00:00:00",
    "results": {
        "version": 3,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "prompts": [],
        "results": [
            _result(
                0,
                "refund",
                "Refund issued",
                [
                    _comp("contains", "Refund", True),
                    _comp("llm-rubric", "polite", True, "polite enough", metric="tone"),
                ],
            ),
            _result(
                1,
                "refund",
                "No",
                [
                    _comp("contains", "Refund", False, 'Expected output to contain "Refund"'),
                    _comp("llm-rubric", "polite", False, "curt", metric="tone"),
                ],
            ),
            _result(2, "loop", "", [], error="Python provider timed out", failure_reason=2),
        ],
        "stats": {"successes": 1, "failures": 1, "errors": 1},
    },
    "config": {"description": "kit golden cases"},
    "metadata": {"promptfooVersion": "0.123.1"},
}


@pytest.fixture
def store(tmp_path):
    return open_store(tmp_path / "evals.duckdb")


def test_promptfoo_file_becomes_a_run(store, tmp_path, capsys):
    path = tmp_path / "out.json"
    path.write_text(json.dumps(PROMPTFOO_FILE))
    assert kit(["ingest", "promptfoo", str(path), "--store", str(store.path)]) == 0
    assert "2 cases, 4 check results" in capsys.readouterr().out
    with store.connect() as con:
        run = con.execute("SELECT run_id, source, model, status, started_at::VARCHAR FROM runs").fetchone()
        assert run == (
            "promptfoo-eval-abc-2026-01-01T00:00:00",
            "promptfoo",
            "kit-agent",
            "complete",
            "2026-01-01 00:00:00",
        )
        cases = con.execute(
            "SELECT case_id, attempt, passed, outcome, tokens, latency_ms FROM case_results ORDER BY case_id, attempt"
        ).fetchall()
        assert cases == [
            ("loop", 0, False, "error", 50, 12.0),
            ("refund", 0, True, "pass", 50, 12.0),
            ("refund", 1, False, "fail", 50, 12.0),
        ]
        checks = con.execute("""SELECT case_id, attempt, "check", gate, outcome FROM check_results
                                ORDER BY case_id, attempt, gate, "check" """).fetchall()
        assert checks == [
            ("loop", 0, "infrastructure", "hard", "error"),
            ("refund", 0, "contains:Refund", "hard", "pass"),
            ("refund", 0, "tone", "soft", "pass"),
            ("refund", 1, "contains:Refund", "hard", "fail"),
            ("refund", 1, "tone", "soft", "fail"),
        ]
    # The same file again is recognised, not duplicated.
    assert kit(["ingest", "promptfoo", str(path), "--store", str(store.path)]) == 0
    assert "already in the store" in capsys.readouterr().out
    with store.connect() as con:
        assert con.execute("SELECT count(*) FROM case_results").fetchone()[0] == 3


def test_bad_files_are_exit_2_naming_the_file(store, tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}')
    assert kit(["ingest", "promptfoo", str(bad), "--store", str(store.path)]) == 2
    assert f"{bad}: not readable JSON" in capsys.readouterr().err
    assert kit(["ingest", "deepeval", str(other), "--store", str(store.path)]) == 2
    assert f"{other}: not a DeepEval test-run file" in capsys.readouterr().err


def _deepeval_file(folder: Path) -> tuple[Path, Path]:
    """Written by DeepEval's own serializer: the timestamped export and the .latest_test_run.json wrapper."""
    from deepeval.evaluate.local_store import write_test_run
    from deepeval.test_run.api import LLMApiTestCase
    from deepeval.test_run.test_run import LATEST_TEST_RUN_DATA_KEY, TestRun
    from deepeval.tracing.api import MetricData

    def case(case_id: str, attempt: int, hard_ok: bool, soft: MetricData) -> LLMApiTestCase:
        hard = MetricData(
            name="kit:refund_safety",
            threshold=1.0,
            success=hard_ok,
            score=1.0 if hard_ok else 0.0,
            reason="" if hard_ok else "issue_refund called twice",
            evaluationModel="kit oracle",
        )
        return LLMApiTestCase(
            name=f"{case_id}#{attempt}",
            input="Please refund ORD-1",
            actualOutput="done",
            success=hard_ok,
            metricsData=[hard, soft],
            order=attempt,
            metadata={"case_id": case_id, "attempt": attempt},
        )

    judged = MetricData(
        name="rubric:tone",
        threshold=0.7,
        success=True,
        score=0.9,
        reason="polite",
        evaluationModel="judge-model-1",
        verboseLogs='{"score": 9}',
        flaky=True,
    )
    skipped = MetricData(
        name="rubric:tone", threshold=0.7, success=None, score=None, reason="no judge model configured", flaky=True
    )
    broken = MetricData(
        name="rubric:tone",
        threshold=0.7,
        success=False,
        error="judge returned no JSON",
        evaluationModel="judge-model-1",
        flaky=True,
    )
    tr = TestRun(
        testFile="tests/evals/test_golden.py",
        testCases=[case("refund", 0, True, judged), case("refund", 1, False, skipped), case("pii", 0, True, broken)],
        hyperparameters={"model": "gpt-4o-2024-08-06"},
    )
    export = write_test_run(folder, tr)
    latest = folder / ".latest_test_run.json"
    latest.write_text(json.dumps({LATEST_TEST_RUN_DATA_KEY: json.loads(export.read_text())}))
    return export, latest


def test_deepeval_test_run_becomes_a_run(store, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
    export, latest = _deepeval_file(tmp_path / "deepeval")
    assert kit(["ingest", "deepeval", str(export), "--store", str(store.path)]) == 0
    with store.connect() as con:
        assert con.execute("SELECT source, model FROM runs").fetchall() == [("deepeval", "gpt-4o-2024-08-06")]
        cases = con.execute("SELECT case_id, attempt, passed FROM case_results ORDER BY 1, 2").fetchall()
        assert cases == [("pii", 0, True), ("refund", 0, True), ("refund", 1, False)]
        hard = con.execute("""SELECT case_id, attempt, outcome, reason FROM check_results WHERE gate = 'hard'
                              ORDER BY 1, 2""").fetchall()
        assert hard[2] == ("refund", 1, "fail", "issue_refund called twice")
        soft = con.execute("""SELECT case_id, attempt, outcome, score FROM check_results WHERE gate = 'soft'
                              ORDER BY 1, 2""").fetchall()
        assert soft == [("pii", 0, "error", None), ("refund", 0, "pass", 0.9), ("refund", 1, "skipped", None)]
        judge = con.execute("SELECT case_id, judge_model, raw_answer FROM judge_calls ORDER BY 1").fetchall()
        assert judge == [("pii", "judge-model-1", None), ("refund", "judge-model-1", '{"score": 9}')]
    # The wrapper file holds the same test run: recognised as already ingested.
    capsys.readouterr()
    assert kit(["ingest", "deepeval", str(latest), "--store", str(store.path)]) == 0
    assert "already in the store" in capsys.readouterr().out


def _promptfoo_runnable() -> bool:
    if not (BIN / "promptfoo").exists() or not (BIN / "node").exists():
        return False
    version = subprocess.run([str(BIN / "node"), "--version"], capture_output=True, text=True).stdout
    return version.startswith("v2") and int(version[1:].split(".")[0]) >= 22


@pytest.mark.skipif(not _promptfoo_runnable(), reason="promptfoo 0.123.1 and Node 22 not installed (npm ci)")
def test_real_promptfoo_output_ingests(store, tmp_path):
    (tmp_path / "promptfooconfig.yaml").write_text(
        'prompts: ["Please refund {{order}}"]\nproviders: [echo]\ntests:\n'
        "  - {description: happy, vars: {order: ORD-123456}, assert: [{type: contains, value: ORD-123456}]}\n"
        "  - {description: missing, vars: {order: ORD-9}, assert: [{type: contains, value: ORD-123456}]}\n"
    )
    env = {
        **os.environ,
        "PATH": f"{BIN}:{os.environ['PATH']}",
        "PROMPTFOO_DISABLE_TELEMETRY": "1",
        "PROMPTFOO_DISABLE_UPDATE": "1",
        "PROMPTFOO_DISABLE_SHARING": "1",
        "PROMPTFOO_CONFIG_DIR": str(tmp_path / ".promptfoo"),
    }
    res = subprocess.run(
        [str(BIN / "promptfoo"), "eval", "-o", "out.json", "--no-cache", "--repeat", "2", "--no-progress-bar"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert (tmp_path / "out.json").exists(), res.stdout[-2000:] + res.stderr[-2000:]
    assert kit(["ingest", "promptfoo", str(tmp_path / "out.json"), "--store", str(store.path)]) == 0
    with store.connect() as con:
        rows = con.execute("SELECT case_id, count(*), count_if(passed) FROM case_results GROUP BY 1 ORDER BY 1")
        assert rows.fetchall() == [("happy", 2, 2), ("missing", 2, 0)]


def test_oracle_assertion_parts_once_redteam_graders_soft_and_not_graded_skipped(store, tmp_path):
    """The oracle's Python assertion stores one row per check (not its aggregate, which Promptfoo lists
    beside the flattened parts); red-team plugin graders are soft; graders left out for want of a judge are
    `skipped` soft rows, never passes."""
    parts = [
        _comp("python", "file://oracle_assert.py", True, "[PASS] finished", metric="finished"),
        _comp("python", "file://oracle_assert.py", False, "[FAIL] no_pii: output leaks email", metric="no_pii"),
    ]
    aggregate = {**_comp("python", "file://oracle_assert.py", False, "1 of 2 checks failed"), "componentResults": parts}
    grader = _comp("promptfoo:redteam:pii", "", True, "judged")
    result = _result(0, "redteam/pii-ask/basic", "x", [aggregate, *parts, grader])
    result["testCase"]["metadata"]["kitNotGraded"] = ["promptfoo:redteam:policy"]
    path = tmp_path / "rt.json"
    path.write_text(
        json.dumps(
            {**PROMPTFOO_FILE, "evalId": "eval-rt", "results": {**PROMPTFOO_FILE["results"], "results": [result]}}
        )
    )
    assert kit(["ingest", "promptfoo", str(path), "--store", str(store.path)]) == 0
    with store.connect() as con:
        rows = con.execute("""SELECT "check", gate, outcome FROM check_results ORDER BY gate, "check" """).fetchall()
    assert rows == [
        ("finished", "hard", "pass"),
        ("no_pii", "hard", "fail"),
        ("promptfoo:redteam:pii", "soft", "pass"),
        ("promptfoo:redteam:policy", "soft", "skipped"),
    ]


def test_oracle_components_without_metric_are_named_by_their_check(store, tmp_path):
    """The oracle's assertion sets no `metric` on its parts (Promptfoo would render each one as a template
    for every named score of the row): each part is still stored under its check's name."""
    parts = [
        _comp("python", "kit:finished", True, "[PASS] finished"),
        _comp("python", "kit:called:lookup_order", False, "[FAIL] called:lookup_order: never called"),
    ]
    aggregate = {**_comp("javascript", "file://oracle_assert.cjs", False, "1 of 2"), "componentResults": parts}
    result = _result(0, "refund", "x", [aggregate, *parts])
    path = tmp_path / "golden.json"
    path.write_text(json.dumps({**PROMPTFOO_FILE, "results": {**PROMPTFOO_FILE["results"], "results": [result]}}))
    assert kit(["ingest", "promptfoo", str(path), "--store", str(store.path)]) == 0
    with store.connect() as con:
        rows = con.execute("""SELECT "check", outcome FROM check_results ORDER BY "check" """).fetchall()
    assert rows == [("called:lookup_order", "fail"), ("finished", "pass")]
