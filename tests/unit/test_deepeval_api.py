"""The public API of a DeepEval test file of one's own (deepeval_metrics.api): run or replay the agent, the
oracle's metrics through DeepEval's own assert_test, a run without a trace never a pass, and every CaseLog a
test makes gathered for the store (what the pytest plugin records)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
os.environ.setdefault("DEEPEVAL_DISABLE_DOTENV", "1")

import deepeval_metrics as kit
from deepeval_metrics import runner
from deepeval_metrics.caselog import collecting
from kit.errors import KitInputError

AGENT = """\
def good(text):
    return {"final_output": "ORD-1 has shipped", "finish_reason": "finish",
            "spans": [{"kind": "tool", "name": "lookup_order", "input": {"order_id": "ORD-1"}}]}

def silent(text):
    return {"final_output": "no idea", "finish_reason": "finish", "spans": []}

def junk(text):
    return {"answer": "ORD-1 has shipped"}
"""
CASES = """\
- id: order
  input: "Where is ORD-1?"
  checks:
    - {type: called, tool: lookup_order}
    - {type: contains, text: shipped}
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "api_desk_agent.py").write_text(AGENT)
    (tmp_path / "cases.yaml").write_text(CASES)
    (tmp_path / "pyproject.toml").write_text('[tool.kit]\ncases = "cases.yaml"\nagent = "api_desk_agent:good"\n')
    monkeypatch.chdir(tmp_path)
    for var in ("KIT_AGENT", "KIT_CASES", "KIT_RUBRICS", "KIT_REPLAY_RUNS"):
        monkeypatch.delenv(var, raising=False)
    runner.plan.cache_clear()  # a DeepEval session reads its plan once; each test here is another project
    yield tmp_path
    runner.plan.cache_clear()


def test_a_run_of_the_settings_agent_passes_its_oracle_metrics_through_assert_test(project):
    suite = kit.load_cases()
    [case] = suite.cases
    assert [p.id for p in kit.case_params(suite)] == ["order#0"]
    with collecting() as logs:
        log = kit.run_agent(case)
        kit.assert_run(log, kit.oracle_metrics(case, log) + kit.case_rubric_metrics(case, log))
    assert logs == [log]  # what the plugin stores when the test ends
    assert log.error is None and list(log.trace.tool_names) == ["lookup_order"]
    assert all(r.passed for r in log.case_run().results) and len(log.hard) == 2


def test_a_failing_run_fails_assert_test_naming_the_check(project):
    [case] = kit.load_cases().cases
    log = kit.run_agent(case, agent="api_desk_agent:silent")
    with pytest.raises(AssertionError, match="called:lookup_order"):
        kit.assert_run(log, kit.oracle_metrics(case, log))
    assert [r.name for r in log.case_run().results if not r.passed] == ["called:lookup_order", "contains"]


def test_a_run_that_gave_no_trace_fails_with_its_error_never_passes(project):
    [case] = kit.load_cases().cases
    log = kit.run_agent(case, agent="api_desk_agent:junk")
    assert log.trace is None and log.error.startswith("the agent returned a dict with 'answer'")
    with pytest.raises(pytest.fail.Exception, match="no trace: the agent returned a dict"):
        kit.assert_run(log, kit.oracle_metrics(case, log))
    assert log.case_run().outcome == "error"


def test_replay_judges_a_recorded_trace_and_refuses_another_cases(project):
    [case] = kit.load_cases().cases
    recorded = {"case_id": "order", "attempt": 3, "final_output": "shipped", "spans": []}
    (project / "run.json").write_text(json.dumps(recorded))
    log = kit.replay("run.json", case, attempt=0)
    assert (log.attempt, log.trace.final_output) == (0, "shipped")
    with pytest.raises(AssertionError, match="lookup_order never called"):
        kit.assert_run(log, kit.oracle_metrics(case, log))
    with pytest.raises(KitInputError, match="a run of case 'other', not of 'order'"):
        kit.replay({**recorded, "case_id": "other"}, case)
