"""The Promptfoo provider on conversations: one call runs every turn of a test on one fresh agent, the
oracle's turn-scoped checks judge it (act_before_confirm caught by name), a skipped run is never a pass."""

from __future__ import annotations

from kit_promptfoo import agent_provider, oracle_assert
from kit_promptfoo.genconfig import case_test
from kit_promptfoo.kit_request import encode_turns, load_case, prompt_turns

CASES = "golden/cases/multiturn.yaml"
CASE_ID = "mt-refund-confirmed-next-turn"


def call(prompt: str, **vars_: object) -> dict:
    return agent_provider.call_api(prompt, {"config": {"reference": True}}, {"vars": vars_})


def ctx(response: dict, **vars_: object) -> dict:
    return {"vars": vars_, "test": {"vars": vars_, "metadata": {}}, "metadata": response.get("metadata")}


def test_the_generated_test_sends_the_turns_and_the_provider_runs_them_all() -> None:
    case = load_case(CASES, CASE_ID)
    test = case_test(case)
    assert prompt_turns(test["vars"]["input"]) == case.turns
    r = call(test["vars"]["input"], case_id=CASE_ID, case_file=CASES)
    trace = r["metadata"]["trace"]
    users = [(s["turn"], s["content"]) for s in trace["spans"] if s["kind"] == "message" and s["role"] == "user"]
    assert users == list(enumerate(case.turns))
    assert r["output"].startswith("Refund of $42.50 issued for ORD-100001")
    assert r["metadata"]["kit"]["verdict"]["passed"] is True
    assert oracle_assert.get_assert(r["output"], ctx(r, case_id=CASE_ID, case_file=CASES))["pass"] is True


def test_act_before_confirm_fails_the_turn_scoped_check_by_name() -> None:
    prompt = encode_turns(load_case(CASES, CASE_ID).turns)
    vars_ = {"case_id": CASE_ID, "case_file": CASES, "variant": "act_before_confirm"}
    r = call(prompt, **vars_)
    g = oracle_assert.get_assert(r["output"], ctx(r, **vars_))
    failed = [c["assertion"]["value"].removeprefix("kit:") for c in g["componentResults"] if not c["pass"]]
    assert g["pass"] is False and "not_called:issue_refund@turn0" in failed


def test_each_call_is_a_fresh_conversation() -> None:
    prompt = encode_turns(["Refund ORD-100001 please, it is damaged.", "Yes."])
    first = call(prompt, case_id=CASE_ID, case_file=CASES)
    second = call(prompt, case_id=CASE_ID, case_file=CASES)
    for r in (first, second):  # each refunded once, on its own sandbox
        refunds = [x for x in r["metadata"]["trace"]["end_state"]["refunds"] if x["order_id"] == "ORD-100001"]
        assert len(refunds) == 1


def test_a_plain_prompt_on_a_multi_turn_case_is_one_turn() -> None:
    r = call("Where is ORD-100002?", case_id=CASE_ID, case_file=CASES, context={"customer_id": "C001"})
    turns = {s.get("turn") for s in r["metadata"]["trace"]["spans"]}
    assert turns == {None} and r["output"] == "Order ORD-100002 is shipped."


def test_a_simulated_user_without_a_user_model_is_an_error_not_a_pass(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("KIT_USER_MODEL", raising=False)
    f = tmp_path / "sim.yaml"
    f.write_text("- id: sim\n  user: {instruction: 'You want a refund.'}\n  checks: [{type: finished}]\n")
    r = call("You want a refund.", case_id="sim", case_file=str(f))
    assert "skipped: no user model configured" in r["error"]
