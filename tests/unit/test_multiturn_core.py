"""The oracle's side of conversations: `turns:` and `user:` cases, `turn:` on every check, Trace.for_turn."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kit.case import load_suite
from kit.evaluate import evaluate
from kit.trace import parse_trace

CONFIRMED = """
- id: refund-confirmed
  context: {customer_id: C001}
  turns:
    - "My order ORD-100001 arrived damaged. Please refund it."
    - "Yes, go ahead."
  checks:
    - {type: not_called, tool: issue_refund, turn: 0}
    - {type: called, tool: issue_refund, turn: 1}
    - {type: contains, text: refunded, turn: last}
    - {type: called, tool: issue_refund}
"""


def write(folder: Path, name: str, text: str) -> Path:
    p = folder / name
    p.write_text(textwrap.dedent(text))
    return p


def conversation(refund_turn: int) -> dict:
    """Two turns; the refund is issued in `refund_turn`."""

    def refund(turn: int) -> list[dict]:
        if turn != refund_turn:
            return []
        return [{"kind": "tool", "name": "issue_refund", "input": {"order_id": "ORD-100001"}, "turn": turn}]

    return {
        "case_id": "refund-confirmed",
        "final_output": "Your order has been refunded.",
        "spans": [
            {"kind": "message", "role": "user", "content": "Please refund ORD-100001.", "turn": 0},
            {"kind": "tool", "name": "lookup_order", "input": {"order_id": "ORD-100001"}, "turn": 0},
            *refund(0),
            {"kind": "message", "role": "assistant", "content": "Shall I refund $42.50?", "turn": 0},
            {"kind": "message", "role": "user", "content": "Yes, go ahead.", "turn": 1},
            *refund(1),
            {"kind": "message", "role": "assistant", "content": "Your order has been refunded.", "turn": 1},
        ],
    }


def load_one(tmp_path: Path, text: str):
    write(tmp_path, "c.yaml", text)
    suite = load_suite(tmp_path)
    assert suite.errors == []
    (case,) = suite.cases
    return case


def test_turns_load_with_scoped_checks(tmp_path):
    case = load_one(tmp_path, CONFIRMED)
    assert case.turns == ("My order ORD-100001 arrived damaged. Please refund it.", "Yes, go ahead.")
    assert case.input is None and case.user is None and case.is_multi_turn
    assert [s.turn for s in case.checks] == [0, 1, "last", None]
    assert [s.label for s in case.checks] == [
        "not_called:issue_refund@turn0",
        "called:issue_refund@turn1",
        "contains@last",
        "called:issue_refund",
    ]
    assert all("turn" not in s.params for s in case.checks)


def test_a_single_turn_case_is_not_multi_turn(tmp_path):
    case = load_one(tmp_path, "id: a\ninput: hi\n")
    assert case.input == "hi" and case.turns is None and not case.is_multi_turn


def test_a_simulated_user_loads(tmp_path):
    case = load_one(tmp_path, "id: u\nuser: {instruction: 'You want a refund for ORD-1.'}\n")
    assert case.user is not None and case.user.instruction == "You want a refund for ORD-1."
    assert case.user.max_turns == 8 and case.is_multi_turn and case.input is None


def test_refund_after_confirmation_passes_every_turn_check(tmp_path):
    case = load_one(tmp_path, CONFIRMED)
    run = evaluate(parse_trace(conversation(refund_turn=1)), case)
    assert [(r.name, r.passed) for r in run.results] == [
        ("not_called:issue_refund@turn0", True),
        ("called:issue_refund@turn1", True),
        ("contains@last", True),
        ("called:issue_refund", True),
    ]


def test_a_refund_before_confirmation_fails_the_turn0_check_by_name(tmp_path):
    case = load_one(tmp_path, CONFIRMED)
    run = evaluate(parse_trace(conversation(refund_turn=0)), case)
    failed = {r.name: r.reason for r in run.results if not r.passed}
    assert set(failed) == {"not_called:issue_refund@turn0", "called:issue_refund@turn1"}
    # The unscoped check still sees the whole conversation.
    assert next(r for r in run.results if r.name == "called:issue_refund").passed


def test_a_missing_turn_fails_and_says_how_many_turns_there_are(tmp_path):
    case = load_one(tmp_path, "id: refund-confirmed\nturns: [a, b]\nchecks: [{type: finished, turn: 4}]\n")
    (result,) = evaluate(parse_trace(conversation(refund_turn=1)), case).results
    assert not result.passed and not result.error
    assert result.reason == "no turn 4 in this conversation (it has 2 turns)"


def test_for_turn_cuts_spans_and_final_output():
    trace = parse_trace({**conversation(refund_turn=1), "model": "m", "attempt": 2, "finish_reason": "finish"})
    first = trace.for_turn(0)
    assert first.tool_names == ("lookup_order",) and first.final_output == "Shall I refund $42.50?"
    assert (first.model, first.attempt, first.finish_reason, first.case_id) == ("m", 2, "finish", "refund-confirmed")
    last = trace.for_turn("last")
    assert last.tool_names == ("issue_refund",) and last.final_output == "Your order has been refunded."
    assert trace.turns == (0, 1) and trace.tool_names == ("lookup_order", "issue_refund")
    assert trace.for_turn(7).spans == [] and trace.for_turn(7).final_output is None
    assert first.derived is not trace.derived


def test_a_trace_without_turns_is_one_turn():
    trace = parse_trace({"case_id": "x", "final_output": "ok", "spans": [{"kind": "tool", "name": "t"}]})
    assert trace.turns == () and trace.spans[0].turn is None
    assert trace.for_turn(0) is trace and trace.for_turn("last") is trace
    assert trace.for_turn(1).spans == []


def test_span_turn_is_validated_and_not_dumped_when_unset():
    with pytest.raises(Exception, match="turn"):
        parse_trace({"case_id": "x", "spans": [{"kind": "tool", "name": "t", "turn": -1}]})
    trace = parse_trace({"case_id": "x", "spans": [{"kind": "tool", "name": "t"}, {"kind": "tool", "turn": 3}]})
    assert [("turn" in s) for s in trace.model_dump(mode="json")["spans"]] == [False, True]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("input: hi\nturns: [a]\n", "exactly one of 'input', 'turns' or 'user' (got input and turns)"),
        ("turns: [a]\nuser: {instruction: x}\n", "(got turns and user)"),
        ("context: {}\n", "(got none)"),
        ("turns: []\n", "turns"),
        ("user: {instruction: x, max_turn: 3}\n", "unknown field 'user.max_turn'"),
        ("input: hi\nchecks: [{type: finished, turn: -1}]\n", "check #1 (finished): turn must be a whole number"),
        ("input: hi\nchecks: [{type: finished, turn: first}]\n", "turn must be a whole number >= 0 or 'last'"),
        ("input: hi\nchecks: [{type: finished, turn: true}]\n", "turn must be a whole number"),
    ],
)
def test_bad_multi_turn_cases_name_file_and_case(tmp_path, body, message):
    write(tmp_path, "c.yaml", "id: c1\n" + body)
    suite = load_suite(tmp_path)
    assert suite.cases == []
    (err,) = suite.errors
    assert str(err).startswith(f"{tmp_path / 'c.yaml'}: case 'c1': ")
    assert message in str(err)


def test_turn_scoped_copies_of_one_check_stay_distinct(tmp_path):
    case = load_one(
        tmp_path,
        "id: c\nturns: [a, b]\nchecks:\n"
        "  - {type: called, tool: t, turn: 0}\n  - {type: called, tool: t, turn: 1}\n  - {type: called, tool: t}\n",
    )
    assert [s.label for s in case.checks] == ["called:t@turn0", "called:t@turn1", "called:t"]


def test_invariant_checks_may_be_scoped_to_a_turn(tmp_path):
    write(tmp_path, "invariants.yaml", "careful: [{type: not_called, tool: issue_refund, turn: 0}]\n")
    case = load_one(tmp_path, "id: refund-confirmed\nturns: [a, b]\ninvariants: [careful]\n")
    (spec,) = case.checks
    assert spec.turn == 0 and spec.invariant == "careful"
    (result,) = evaluate(parse_trace(conversation(refund_turn=0)), case).results
    assert not result.passed and result.name == "not_called:issue_refund@turn0"
