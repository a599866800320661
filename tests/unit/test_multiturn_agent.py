"""The reference agent over several turns: it asks before it moves money or changes an address, acts on the
next turn's yes, keeps what it learnt (identity, orders) between turns, and the act_before_confirm fault."""

from __future__ import annotations

from typing import Any

import pytest

from kit.agent import run_agent
from kit.agent.cassette import ReplayMiss
from kit.agent.conversation import Conversation

ALICE = {"customer_id": "C001", "email": "alice.moreau@example.com"}


def talk(*turns: str, context: dict[str, Any] | None = None, **kw: Any) -> list[dict[str, Any]]:
    with Conversation(case_id="c", context=ALICE if context is None else context, **kw) as conv:
        return [conv.turn(t) for t in turns]


def names(turn: dict[str, Any]) -> list[str]:
    return [s["name"] for s in turn["spans"] if s["kind"] == "tool"]


def refunds(turn: dict[str, Any], order_id: str) -> list[float]:
    return [r["amount"] for r in turn["end_state"]["refunds"] if r["order_id"] == order_id]


def test_asks_then_refunds_on_the_next_turns_yes() -> None:
    ask, yes = talk("My pour-over set from ORD-100001 arrived damaged. Please refund it.", "Yes, go ahead.")
    assert names(ask) == ["lookup_order", "finish"] and ask["final_output"].endswith("Shall I go ahead?")
    assert refunds(ask, "ORD-100001") == []
    # The order was looked up in the first turn: not again (no repeated call over the conversation).
    assert names(yes) == ["issue_refund", "finish"]
    assert yes["final_output"].startswith("Refund of $42.50 issued for ORD-100001")
    assert refunds(yes, "ORD-100001") == [42.5]
    assert next(s for s in yes["spans"] if s["kind"] == "message")["role"] == "assistant"  # no user span


def test_single_message_confirmation_still_works() -> None:
    [done] = talk("Refund ORD-100001, it arrived damaged - yes, go ahead.")
    assert names(done) == ["lookup_order", "issue_refund", "finish"]


def test_change_of_mind_moves_nothing() -> None:
    _ask, no, yes = talk("Please refund ORD-100001, the set is chipped.", "No, don't do it after all.", "Thanks, bye!")
    assert "issue_refund" not in names(no) and no["final_output"].startswith("Understood")
    assert refunds(no, "ORD-100001") == [] and refunds(yes, "ORD-100001") == []


def test_a_wrong_order_id_is_corrected() -> None:
    wrong, right, yes = talk(
        "Please refund ORD-100099, the blanket is torn.", "Sorry, I meant ORD-100002.", "Yes please, go ahead."
    )
    assert "couldn't find order ORD-100099" in wrong["final_output"]
    assert "ORD-100002" in right["final_output"] and right["final_output"].endswith("?")
    assert refunds(yes, "ORD-100002") == [129.99] and refunds(yes, "ORD-100099") == []


def test_identity_asked_then_kept_for_later_turns() -> None:
    ask, ident, yes = talk(
        "I want a refund for ORD-100005, the skillet cracked.",
        "My email is bob.okafor@example.net and my ZIP is 10001.",
        "Yes, go ahead.",
        context={},
    )
    assert names(ask) == ["finish"] and "verify" in ask["final_output"]
    assert names(ident) == ["lookup_customer", "verify_identity", "lookup_order", "finish"]
    assert names(yes) == ["issue_refund", "finish"] and refunds(yes, "ORD-100005") == [64.2]


def test_address_clarified_then_confirmed() -> None:
    ask, addr, yes = talk(
        "Please change the shipping address of ORD-100003.", "Ship it to 12 Rue de la Paix, 75002 Paris.", "Yes."
    )
    assert ask["final_output"] == "What is the new shipping address for ORD-100003?"
    assert addr["final_output"].endswith("Shall I go ahead?") and "update_shipping_address" not in names(addr)
    assert names(yes) == ["update_shipping_address", "finish"]
    row = next(o for o in yes["end_state"]["orders"] if o["order_id"] == "ORD-100003")
    assert "Rue de la Paix" in row["shipping_address"]


def test_a_new_request_after_a_done_one_starts_afresh() -> None:
    _, done, question = talk("Refund ORD-100001 please, it is damaged.", "Yes.", "Where is ORD-100002?")
    assert names(done) == ["issue_refund", "finish"]
    assert names(question) == ["lookup_order", "finish"] and question["final_output"] == "Order ORD-100002 is shipped."


def test_act_before_confirm_moves_money_in_the_first_turn() -> None:
    ask, _ = talk("Please refund ORD-100001, it arrived damaged.", "Yes, go ahead.", variant="act_before_confirm")
    assert "issue_refund" in names(ask) and refunds(ask, "ORD-100001") == [42.5]
    single = run_agent("Can I get a refund for ORD-100001?", case_id="c", context=ALICE, variant="act_before_confirm")
    assert "issue_refund" in [s["name"] for s in single["spans"] if s["kind"] == "tool"]


def test_a_conversation_records_and_replays(tmp_path) -> None:
    tape = tmp_path / "conv.json"
    live = talk("Refund ORD-100001, it is damaged.", "Yes.", cassette=tape, record=True)
    replayed = talk("Refund ORD-100001, it is damaged.", "Yes.", cassette=tape)
    assert [t["final_output"] for t in replayed] == [t["final_output"] for t in live]
    assert refunds(replayed[-1], "ORD-100001") == [42.5]
    with pytest.raises(ReplayMiss, match="unused"):
        talk("Refund ORD-100001, it is damaged.", cassette=tape)  # stopped a turn early: the replay diverged


def test_a_closed_conversation_refuses_more_turns() -> None:
    conv = Conversation(case_id="c", context=ALICE)
    conv.close()
    with pytest.raises(RuntimeError, match="closed"):
        conv.turn("hello")
