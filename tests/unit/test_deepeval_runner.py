"""The DeepEval stage takes the user's agent through the same plug-in as `kit run --agent`."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit.case import Case
from kit.runner.agents import MalformedTrace
from kit_deepeval.runner import load_agent, run_case

ROOT = Path(__file__).resolve().parents[2]


def test_kit_agent_returning_an_openai_message_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.setenv("KIT_AGENT", "examples.my_agent:run")
    trace = run_case(load_agent(), Case(id="order-status", input="Where is ORD-777001?"), 2)
    assert (trace["case_id"], trace["attempt"]) == ("order-status", 2)
    assert trace["final_output"] == "ORD-777001 has shipped with UPS."


def test_default_is_the_reference_agent_with_the_variant(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KIT_AGENT", raising=False)
    monkeypatch.setenv("KIT_VARIANT", "loop")
    assert load_agent().name == "reference:deterministic+loop"


def test_an_agent_returning_junk_is_a_malformed_trace(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "junk_agent.py").write_text("def run(text):\n    return 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("KIT_AGENT", "junk_agent:run")
    with pytest.raises(MalformedTrace, match="returned int"):
        run_case(load_agent(), Case(id="c", input="hi"), 0)


def test_a_hanging_agent_is_a_timeout_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "slow_agent.py").write_text("import time\n\ndef run(text):\n    time.sleep(30)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("KIT_AGENT", "slow_agent:run")
    monkeypatch.setenv("KIT_AGENT_TIMEOUT", "0.2")
    with pytest.raises(TimeoutError, match=r"agent slow_agent:run gave no result within 0.2 s"):
        run_case(load_agent(), Case(id="c", input="hi"), 0)
