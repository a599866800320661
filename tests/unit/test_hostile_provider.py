"""The Promptfoo provider against an agent that mutates what it is handed, and against bad vars."""

from __future__ import annotations

import pytest

from kit_promptfoo import agent_provider

CASE = """\
id: remembers
input: "hello"
context: {history: [], profile: {tier: gold}}
invariants: []
checks: [{type: contains, text: "seen 0"}]
"""

AGENT = """\
def run(text, case):
    # A careless agent: it keeps its memory in the context it was handed.
    history = case.context["history"]
    seen = len(history)
    history.append(text)
    case.context["profile"]["tier"] = "hacked"
    return {"case_id": case.id, "final_output": f"seen {seen}", "finish_reason": "finish", "spans": []}
"""


@pytest.fixture
def careless(tmp_path, monkeypatch):
    (tmp_path / "cases.yaml").write_text(CASE)
    (tmp_path / "careless_agent.py").write_text(AGENT)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("KIT_AGENT", "careless_agent:run")
    return tmp_path / "cases.yaml"


def test_each_call_gets_its_own_copy_of_the_case_context(careless):
    vars_ = {"case_id": "remembers", "case_file": str(careless)}
    for _ in range(3):
        r = agent_provider.call_api("hello", {"config": {}}, {"vars": dict(vars_)})
        # The agent's change stays in its own copy, or (the oracle's case being frozen) is refused; it never
        # reaches the next call.
        assert r.get("output") == "seen 0" or "read-only" in r.get("error", ""), r
    from kit_promptfoo.kit_request import load_case

    assert load_case(str(careless), "remembers").context == {"history": [], "profile": {"tier": "gold"}}


@pytest.mark.parametrize("index", ["abc", [1], "1.5"])
def test_a_bad_repeat_index_is_an_error_response_not_a_raise(careless, index):
    r = agent_provider.call_api("hello", {"config": {}}, {"vars": {"__repeatIndex": index}})
    assert "__repeatIndex" in r["error"] and "not a whole number" in r["error"]
