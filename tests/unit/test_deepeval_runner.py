"""The DeepEval stage takes the user's agent through the same plug-in as `kit run --agent`."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from deepeval_metrics.runner import plan, run_case
from kit.case import Case

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _fresh_plan() -> None:
    plan.cache_clear()  # each test sets its own settings


def test_kit_agent_returning_an_openai_message_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.setenv("KIT_AGENT", "examples.my_agent:run")
    run = run_case(Case(id="order-status", input="Where is ORD-777001?"), 2)
    trace = run.trace
    assert (trace["case_id"], trace["attempt"]) == ("order-status", 2)
    assert (run.case_run.case_id, run.case_run.attempt, run.case_run.error) == ("order-status", 2, None)
    assert trace["final_output"] == "ORD-777001 has shipped with UPS."


def test_default_is_the_reference_agent_with_the_variant(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KIT_AGENT", raising=False)
    monkeypatch.setenv("KIT_VARIANT", "loop")
    assert plan().agent.name == "reference:deterministic+loop"


def test_an_agent_returning_junk_is_an_error_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "junk_agent.py").write_text("def run(text):\n    return 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("KIT_AGENT", "junk_agent:run")
    run = run_case(Case(id="c", input="hi"), 0)
    assert run.trace is None and run.case_run.outcome == "error"
    assert run.case_run.error.startswith("the agent returned int, expected a trace dict")


def test_a_hanging_agent_is_a_timeout_error_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "slow_agent.py").write_text("import time\n\ndef run(text):\n    time.sleep(30)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("KIT_AGENT", "slow_agent:run")
    monkeypatch.setenv("KIT_AGENT_TIMEOUT", "0.2")
    started = time.perf_counter()
    run = run_case(Case(id="c", input="hi"), 0)
    assert time.perf_counter() - started < 2.0
    assert (run.trace, run.case_run.error) == (None, "timeout: the agent ran longer than 0.2s")
