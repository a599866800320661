"""Run once, judge everywhere: with recorded runs, the DeepEval stage judges them and calls no agent."""

from __future__ import annotations

from pathlib import Path

import pytest

from deepeval_metrics.runner import plan, run_case
from kit.case import Case
from kit.runner import invoke
from kit.runner.agents import load_agent
from kit.runner.recorded import RunsWriter

AGENT = """
CALLS = []

def run(text):
    CALLS.append(text)
    return [{"role": "user", "content": text}, {"role": "assistant", "content": "done: " + text}]
"""


@pytest.fixture(autouse=True)
def _fresh_plan() -> None:
    plan.cache_clear()


def test_recorded_runs_are_judged_without_calling_the_agent(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "counted_agent.py").write_text(AGENT)
    monkeypatch.syspath_prepend(str(tmp_path))
    import counted_agent

    case = Case(id="echo", input="hello", checks=())
    writer = RunsWriter(tmp_path / "runs.jsonl")
    live = [invoke(load_agent("counted_agent:run"), case, a, timeout=5) for a in range(2)]
    for inv in live:
        writer.add(inv)
    writer.close()
    assert len(counted_agent.CALLS) == 2

    monkeypatch.setenv("KIT_AGENT", "counted_agent:run")
    monkeypatch.setenv("KIT_REPLAY_RUNS", str(tmp_path / "runs.jsonl"))
    replayed = [run_case(case, a) for a in range(2)]
    assert len(counted_agent.CALLS) == 2  # no new call
    assert [r.trace["final_output"] for r in replayed] == ["done: hello", "done: hello"]
    assert [r.case_run.attempt for r in replayed] == [0, 1]

    missing = run_case(case, 2)  # the kit stage ran 2 attempts; a third is a hole, never a pass
    assert missing.trace is None and missing.case_run.outcome == "error"
    assert "no recorded run of this case and attempt" in (missing.case_run.error or "")


def test_a_recorded_error_stays_an_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "raising_agent.py").write_text("def run(text):\n    raise RuntimeError('model down')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    case = Case(id="c", input="hi")
    writer = RunsWriter(tmp_path / "runs.jsonl")
    writer.add(invoke(load_agent("raising_agent:run"), case, 0, timeout=5))
    writer.close()
    monkeypatch.setenv("KIT_REPLAY_RUNS", str(tmp_path / "runs.jsonl"))
    run = run_case(case, 0)
    assert run.trace is None and "model down" in (run.case_run.error or "")
