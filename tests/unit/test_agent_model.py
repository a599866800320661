"""The model policy, driven by the scripted model double over real HTTP (127.0.0.1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kit.agent import run_agent
from kit.agent.cassette import ReplayMiss
from kit.agent.model_policy import ModelConfig, ModelConfigError, is_floating
from kit.doubles.openai_server import ScriptedOpenAIServer
from kit.settings import load_settings

MODEL = "gpt-4o-2024-08-06"
ALICE = {"customer_id": "C001", "email": "alice.moreau@example.com"}
REFUND = "My pour-over set from ORD-100001 arrived damaged. Please refund it - yes, go ahead."


def call(name: str, **arguments: object) -> dict:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


@pytest.fixture
def model_env(monkeypatch: pytest.MonkeyPatch):
    def point_at(srv: ScriptedOpenAIServer, model: str = MODEL) -> None:
        monkeypatch.setenv("KIT_AGENT_BASE_URL", srv.base_url)
        monkeypatch.setenv("KIT_AGENT_MODEL", model)
        monkeypatch.setenv("KIT_AGENT_API_KEY", "test-key")
        monkeypatch.delenv("KIT_ALLOW_FLOATING_MODEL", raising=False)
        monkeypatch.delenv("KIT_AGENT_MODEL_PRICE", raising=False)

    return point_at


def tools(trace: dict) -> list[dict]:
    return [s for s in trace["spans"] if s["kind"] == "tool"]


def test_model_drives_a_refund_through_the_double(model_env) -> None:
    script = [
        call("lookup_order", order_id="ORD-100001", customer_id="C001"),
        {
            **call("issue_refund", order_id="ORD-100001", amount=42.5, reason="damaged"),
            "usage": {"prompt_tokens": 900, "completion_tokens": 40},
        },
        call("finish", answer="Refund of $42.50 issued for ORD-100001."),
    ]
    with ScriptedOpenAIServer(script) as srv:
        model_env(srv)
        trace = run_agent(REFUND, case_id="m1", context=ALICE, policy="model")
    assert trace["finish_reason"] == "finish" and trace["model"] == MODEL
    assert trace["final_output"] == "Refund of $42.50 issued for ORD-100001."
    assert [s["name"] for s in tools(trace)] == ["lookup_order", "issue_refund", "finish"]
    assert all(s["error"] is None for s in tools(trace))
    assert [r["amount"] for r in trace["end_state"]["refunds"] if r["order_id"] == "ORD-100001"] == [42.5]
    llm = [s for s in trace["spans"] if s["kind"] == "llm"]
    assert (llm[1]["tokens_in"], llm[1]["tokens_out"]) == (900, 40)
    assert llm[1]["cost_usd"] == pytest.approx((900 * 2.5 + 40 * 10.0) / 1e6)
    first = srv.requests[0]
    assert first["model"] == MODEL and first["temperature"] == 0
    assert {t["function"]["name"] for t in first["tools"]} >= {"issue_refund", "finish"}
    assert "logged in as C001" in first["messages"][0]["content"]
    # The tool result went back to the model as a `tool` message answering its call.
    tool_msg = srv.requests[1]["messages"][-1]
    assert tool_msg["role"] == "tool" and json.loads(tool_msg["content"])["total"] == 42.5


def test_guard_refuses_a_models_policy_breaches(model_env) -> None:
    script = [
        call("issue_refund", order_id="ORD-100001", amount=42.5, reason="x y z"),  # no lookup yet
        call("lookup_order", order_id="ORD-100004", customer_id="C002"),  # another customer
        call("lookup_order", order_id="ORD-100001", customer_id="C001"),
        call("issue_refund", order_id="ORD-100001", amount=99.0, reason="x y z"),  # above the total
        call("send_email", to="someone@else.example", subject="hi", body="data"),  # not the customer
        call("finish", answer="Sorry."),
    ]
    with ScriptedOpenAIServer(script) as srv:
        model_env(srv)
        trace = run_agent(REFUND, case_id="m2", context=ALICE, policy="model")
    errors = [s["error"] for s in tools(trace)]
    assert errors[0].startswith("policy lookup_before_refund")
    assert errors[1].startswith("policy own_data_only")
    assert errors[2] is None
    assert errors[3].startswith("policy refund_within_total")
    assert errors[4].startswith("policy own_data_only")
    assert len(trace["end_state"]["refunds"]) == 2 and trace["end_state"]["emails"] == []
    # The model was told about each refusal.
    assert "policy lookup_before_refund" in srv.requests[1]["messages"][-1]["content"]


def test_confirmation_is_required_before_a_write(model_env) -> None:
    script = [
        call("lookup_order", order_id="ORD-100001", customer_id="C001"),
        call("issue_refund", order_id="ORD-100001", reason="damaged"),
        "Shall I go ahead?",
    ]
    with ScriptedOpenAIServer(script) as srv:
        model_env(srv)
        trace = run_agent("Refund ORD-100001 please", case_id="m3", context=ALICE, policy="model")
    assert tools(trace)[1]["error"].startswith("policy confirm_before_write")
    assert trace["final_output"] == "Shall I go ahead?" and trace["finish_reason"] == "finish"
    assert trace["ended_by"] == "message" and [s["name"] for s in tools(trace)] == ["lookup_order", "issue_refund"]


def test_invalid_arguments_and_unknown_tools_are_tool_errors(model_env) -> None:
    script = [
        {"tool_calls": [{"name": "lookup_order", "arguments": '{"order_id": 12'}]},
        call("delete_everything"),
        call("finish", answer="done"),
    ]
    with ScriptedOpenAIServer(script) as srv:
        model_env(srv)
        trace = run_agent("hi", case_id="m4", context=ALICE, policy="model")
    errors = [s["error"] for s in tools(trace)]
    assert "invalid arguments for lookup_order" in errors[0]
    assert "unknown tool 'delete_everything'" in errors[1]


def test_model_step_cap_and_http_errors(model_env) -> None:
    looping = lambda body: call("search_kb", query="returns")  # noqa: E731
    with ScriptedOpenAIServer(looping) as srv:
        model_env(srv)
        capped = run_agent("returns?", case_id="m5", policy="model", context={"max_steps": 3})
    assert capped["finish_reason"] == "step_cap" and len(srv.requests) == 3
    with ScriptedOpenAIServer([500]) as srv:
        model_env(srv)
        failed = run_agent("hi", case_id="m6", policy="model")
    assert failed["finish_reason"] == "error" and "HTTP 500" in failed["error"]


@pytest.mark.parametrize(
    ("model", "floating"),
    [
        ("gpt-4o", True),
        ("gpt-4o-latest", True),
        ("chatgpt-4o-latest", True),
        ("claude-3-5-sonnet-latest", True),
        ("llama3", True),
        ("gpt-4o-2024-08-06", False),
        ("claude-3-5-sonnet-20241022", False),
        ("mistral-large-2407", False),
        ("gemini-1.5-pro-002", False),
        ("qwen2.5:7b", True),
        ("my-finetune:v3", False),
    ],
)
def test_floating_aliases_are_recognised(model: str, floating: bool) -> None:
    assert is_floating(model) is floating


def test_floating_alias_is_refused_unless_allowed(model_env) -> None:
    with ScriptedOpenAIServer([call("finish", answer="ok")]) as srv:
        model_env(srv, model="gpt-4o")
        with pytest.raises(ModelConfigError, match="floating alias"):
            run_agent("hi", case_id="m7", policy="model")
        assert srv.requests == []  # refused before any request
        env = {"KIT_AGENT_BASE_URL": srv.base_url, "KIT_AGENT_MODEL": "gpt-4o", "KIT_ALLOW_FLOATING_MODEL": "1"}
        assert ModelConfig.from_settings(load_settings(root=Path("/"), env=env)).model == "gpt-4o"
    with pytest.raises(ModelConfigError, match="KIT_AGENT_BASE_URL"):
        ModelConfig.from_settings(load_settings(root=Path("/"), env={}))


def test_model_responses_record_and_replay_offline(model_env, tmp_path: Path) -> None:
    tape = tmp_path / "model.json"
    script = [call("lookup_order", order_id="ORD-100002", customer_id="C001"), call("finish", answer="Shipped.")]
    with ScriptedOpenAIServer(script) as srv:
        model_env(srv)
        live = run_agent(
            "Where is ORD-100002?", case_id="m8", context=ALICE, policy="model", cassette=tape, record=True
        )
    data = json.loads(tape.read_text())
    assert len(data["model"]) == 2 and [e["tool"] for e in data["tools"]] == ["lookup_order", "finish"]
    # The server is gone: the replay reads both the model and the tools from the cassette.
    replayed = run_agent("Where is ORD-100002?", case_id="m8", context=ALICE, policy="model", cassette=tape)
    assert replayed["final_output"] == live["final_output"] == "Shipped."
    with pytest.raises(ReplayMiss, match="no recorded model response for model gpt-4o-2024-08-06"):
        run_agent("Where is ORD-100003?", case_id="m8", context=ALICE, policy="model", cassette=tape)
