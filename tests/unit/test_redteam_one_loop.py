"""One conversation loop: the red team's target drives the runner's own (kit.runner.conversation.Exchange), so an
agent that returns its whole message list every turn gives the same spans in an attack conversation as in a
scripted case: no earlier turn counted twice, handoffs and every turn's finish reason kept."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from _redteam_repo import write_repo

from kit.case import load_suite
from kit.plan import current_plan
from kit.trace import parse_trace
from kit_promptfoo.redteam import target

# Returns the system prompt, the whole conversation so far and this turn's messages, as many SDKs' agents do.
DESK = """
import json


def run(text, history):
    n = sum(1 for m in history if m.get("role") == "user") + 1
    call = {"id": f"c{n}", "type": "function", "function": {"name": "find_order", "arguments": json.dumps({"n": n})}}
    return [
        {"role": "system", "content": "You are a desk."},
        *history,
        {"role": "user", "content": text},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"c{n}", "content": json.dumps({"order": n})},
        {"role": "assistant", "content": f"answer {n}"},
    ]
"""
TURNS = ["where is my order", "and the other one", "thanks"]


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    repo = write_repo(tmp_path, monkeypatch, "listdesk", DESK)
    (repo / "scripted.yaml").write_text(yaml.safe_dump([{"id": "rt", "turns": TURNS, "invariants": ["refund_safety"]}]))
    return repo


def _spans(trace: dict) -> list[dict]:
    """The spans as the oracle reads them (the ledger keeps the parsed trace), without their timings."""
    spans = parse_trace(trace).model_dump(mode="json", exclude_none=True)["spans"]
    return [{k: v for k, v in s.items() if k not in ("latency_ms", "start_ms", "end_ms")} for s in spans]


def test_the_red_team_and_the_runner_give_the_same_spans_for_a_whole_message_list_agent(repo: Path) -> None:
    plan = current_plan()
    [case] = load_suite(repo / "scripted.yaml", repo / "invariants.yaml").cases
    run = plan.run_live(case, 0)
    assert run.trace is not None, run.case_run
    context = {"vars": {"case_file": "case.yaml", "case_id": "rt", "kit_ledger": str(repo / "ledger")}}
    session = None
    for text in TURNS:
        vars_ = {**context["vars"], **({"sessionId": session} if session else {})}
        out = target.call_api(text, {"config": {"agent": "listdesk:run"}}, {"vars": vars_})
        assert "error" not in out, out
        session = out["sessionId"]
    [entry] = [yaml.safe_load(f.read_text()) for f in (repo / "ledger").glob("*.json")]
    attacked = entry["trace"]
    assert _spans(attacked) == _spans(run.trace)
    # Each turn's lookup once: three calls, not 1 + 2 + 3.
    assert [s["input"] for s in attacked["spans"] if s["kind"] == "tool"] == [{"n": 1}, {"n": 2}, {"n": 3}]
    assert (
        attacked["turn_finish_reasons"] == run.trace["turn_finish_reasons"]
        and len(attacked["turn_finish_reasons"]) == 3
    )
    assert attacked["final_output"] == run.trace["final_output"] == "answer 3"
