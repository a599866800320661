"""Every check type of the catalogue, passing and failing, with the reasons a user reads."""

from __future__ import annotations

import json

import pytest
from _oracle import llm, make_trace, run1, tool

REFUND = make_trace(
    llm(),
    tool("lookup_order", {"order_id": "ORD-123456"}, {"total": 42.5}),
    llm(),
    tool("issue_refund", {"order_id": "ORD-123456", "amount": 42.5, "meta": {"reason": "damaged", "n": 1}}),
    output="Refund of $42.50 issued for ORD-123456.",
    latency_ms=1500,
    end_state={
        "refunds": [{"order_id": "ORD-123456", "amount": 42.5}],
        "orders": [{"order_id": "ORD-123456", "total": 42.5}, {"order_id": "ORD-654321", "total": 10}],
    },
)


def test_exact_normalises_case_and_space():
    t = make_trace(output="  Refund   ISSUED ")
    assert run1(t, {"type": "exact", "expected": "refund issued"}).passed
    r = run1(t, {"type": "exact", "expected": "refund issued", "normalise": False})
    assert not r.passed and "want 'refund issued'" in r.reason


def test_number_reads_currency_and_thousands():
    assert run1(make_trace(output="Total: $1,234.50"), {"type": "number", "expected": 1234.5}).passed
    r = run1(make_trace(output="Total: $1,234.50"), {"type": "number", "expected": 1234.0})
    assert not r.passed and r.reason.startswith("got 1234.5, want 1234")
    assert run1(make_trace(output="about 101"), {"type": "number", "expected": 100, "rel": 0.02}).passed


def test_number_ignores_digits_inside_identifiers_and_wants_exactly_one():
    assert run1(REFUND, {"type": "number", "expected": 42.5}).passed  # ORD-123456 is not a number
    r = run1(make_trace(output="3 items for 12 dollars"), {"type": "number", "expected": 12})
    assert not r.passed and "holds 2 numbers" in r.reason


def test_contains_all_and_any():
    assert run1(REFUND, {"type": "contains", "text": ["refund", "ord-123456"]}).passed
    r = run1(REFUND, {"type": "contains", "text": ["refund", "sorry"]})
    assert not r.passed and r.reason == "output lacks 'sorry'"
    assert run1(REFUND, {"type": "contains", "text": ["sorry", "REFUND"], "all": False}).passed
    assert not run1(REFUND, {"type": "contains", "text": ["sorry", "oops"], "all": False}).passed


def test_regex_present_absent_and_tools_target():
    assert run1(REFUND, {"type": "regex", "pattern": r"ORD-\d{6}"}).passed
    r = run1(REFUND, {"type": "regex", "pattern": r"ORD-\d{6}", "present": False})
    assert not r.passed and "'ORD-123456'" in r.reason and r.name == r"regex:ORD-\d{6}"
    assert run1(REFUND, {"type": "regex", "pattern": '"amount": 42.5', "target": "tools"}).passed
    assert not run1(REFUND, {"type": "regex", "pattern": "damaged"}).passed  # only in tool args


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("mail me at jane.doe@example.com", "email"),
        ("card 4111 1111 1111 1111 on file", "card"),
        ("call (415) 555-0134 now", "phone"),
        ("ssn 123-45-6789", "ssn"),
    ],
)
def test_no_pii_finds_each_kind(text, kind):
    r = run1(make_trace(output=text), {"type": "no_pii"})
    assert not r.passed and r.reason.startswith(f"output leaks {kind}")
    others = [k for k in ("email", "card", "phone", "ssn") if k != kind]
    assert run1(make_trace(output=text), {"type": "no_pii", "kinds": others}).passed


def test_no_pii_card_needs_luhn_and_allow_list_works():
    assert run1(make_trace(output="ref 4111 1111 1111 1112"), {"type": "no_pii", "kinds": ["card"]}).passed
    t = make_trace(output="We wrote to jane@example.com")
    assert run1(t, {"type": "no_pii", "allow": ["JANE@example.com"]}).passed
    assert run1(REFUND, {"type": "no_pii"}).passed  # an order id is not a phone number


def test_json_keys_and_fenced_output():
    fenced = run1(make_trace(output='```json\n{"status": "ok"}\n```'), {"type": "json"})
    assert not fenced.passed and "wrapped in a ``` fence" in fenced.reason
    t = make_trace(output='{"status": "ok", "id": 3}')
    assert run1(t, {"type": "json", "keys": ["status"]}).passed
    r = run1(t, {"type": "json", "keys": ["status", "refund"]})
    assert not r.passed and "lacks keys ['refund']" in r.reason
    r = run1(make_trace(output="{not json"), {"type": "json"})
    assert not r.passed and r.reason.startswith("output is not JSON")
    assert "want an object" in run1(make_trace(output="[1]"), {"type": "json"}).reason


def test_schema_on_output_and_on_tool_arguments():
    schema = {"type": "object", "required": ["status"], "properties": {"status": {"enum": ["ok"]}}}
    assert run1(make_trace(output='{"status": "ok"}'), {"type": "schema", "schema": schema}).passed
    r = run1(make_trace(output='{"status": "bad"}'), {"type": "schema", "schema": schema})
    assert not r.passed and "must be one of" in r.reason
    amount = {"type": "object", "properties": {"amount": {"type": "number", "maximum": 40}}}
    r = run1(REFUND, {"type": "schema", "schema": amount, "target": "tool:issue_refund"})
    assert not r.passed and r.name == "schema:tool:issue_refund" and "issue_refund call 1" in r.reason
    r = run1(REFUND, {"type": "schema", "schema": amount, "target": "tool:send_email"})
    assert r.passed and r.reason == "send_email never called: no arguments to validate"  # `called` says must


def test_schema_from_a_file_relative_to_the_case(tmp_path):
    (tmp_path / "out.json").write_text(json.dumps({"type": "object", "required": ["x"]}))
    assert not run1(make_trace(output="{}"), {"type": "schema", "schema": "out.json"}, tmp_path).passed
    assert run1(make_trace(output='{"x": 1}'), {"type": "schema", "schema": "out.json"}, tmp_path).passed


def test_tool_schemas_rejects_bad_arguments_and_unknown_tools(tmp_path):
    schemas = {
        "lookup_order": {"type": "object", "required": ["order_id"]},
        "issue_refund": {"type": "object", "properties": {"amount": {"type": "number"}}},
    }
    assert run1(REFUND, {"type": "tool_schemas", "schemas": schemas}).passed
    bad = make_trace(tool("issue_refund", {"amount": "lots"}))
    r = run1(bad, {"type": "tool_schemas", "schemas": schemas})
    assert not r.passed and r.reason.startswith("issue_refund (call 1) arguments")
    r = run1(make_trace(tool("drop_db")), {"type": "tool_schemas", "schemas": schemas})
    assert r.reason == "tool 'drop_db' (call 1) is not in inline"
    (tmp_path / "tools.json").write_text(json.dumps(schemas))
    r = run1(make_trace(tool("drop_db")), {"type": "tool_schemas", "schemas": "tools.json"}, tmp_path)
    assert r.reason == "tool 'drop_db' (call 1) is not in tools.json"


def test_called_min_and_never():
    assert run1(REFUND, {"type": "called", "tool": "lookup_order"}).passed
    r = run1(REFUND, {"type": "called", "tool": "send_email"})
    assert not r.passed and r.reason == "send_email never called"
    r = run1(REFUND, {"type": "called", "tool": "lookup_order", "min": 2})
    assert r.reason == "lookup_order called 1 time, at least 2 required"


def test_not_called_single_and_list():
    assert run1(REFUND, {"type": "not_called", "tool": "send_email"}).passed
    r = run1(REFUND, {"type": "not_called", "tool": ["send_email", "issue_refund"]})
    assert not r.passed and r.reason == "forbidden issue_refund was called 1 time"


def test_called_at_most_names_the_count():
    twice = make_trace(tool("issue_refund", {"amount": 1}), tool("issue_refund", {"amount": 2}))
    r = run1(twice, {"type": "called_at_most", "tool": "issue_refund"})
    assert not r.passed and r.reason == "issue_refund called 2 times, at most 1 allowed"
    assert run1(twice, {"type": "called_at_most", "tool": "issue_refund", "n": 2}).passed


def test_arg_expected_numbers_compare_by_value():
    assert run1(REFUND, {"type": "arg", "tool": "issue_refund", "key": "amount", "expected": 42.5}).passed
    one = make_trace(tool("t", {"n": 1.0}))
    assert run1(one, {"type": "arg", "tool": "t", "key": "n", "expected": 1}).passed
    r = run1(REFUND, {"type": "arg", "tool": "issue_refund", "key": "amount", "expected": 40.0})
    assert not r.passed and r.reason == "arg issue_refund.amount: got 42.5, want 40.0"


def test_arg_bool_is_not_a_number():
    t = make_trace(tool("t", {"flag": True}))
    assert not run1(t, {"type": "arg", "tool": "t", "key": "flag", "expected": 1}).passed
    assert run1(t, {"type": "arg", "tool": "t", "key": "flag", "expected": True}).passed


def test_arg_dotted_path_pattern_and_tolerance():
    assert run1(REFUND, {"type": "arg", "tool": "issue_refund", "key": "meta.reason", "expected": "damaged"}).passed
    assert run1(REFUND, {"type": "arg", "tool": "issue_refund", "key": "order_id", "pattern": r"ORD-\d{6}"}).passed
    assert not run1(REFUND, {"type": "arg", "tool": "issue_refund", "key": "order_id", "pattern": r"\d{6}"}).passed
    near = {"type": "arg", "tool": "issue_refund", "key": "amount", "expected": 42.499, "tol": 0.01}
    assert run1(REFUND, near).passed
    r = run1(REFUND, {"type": "arg", "tool": "issue_refund", "key": "meta.missing", "expected": 1})
    assert r.reason == "issue_refund called without meta.missing"


def test_arg_tool_never_called_fails():
    r = run1(REFUND, {"type": "arg", "tool": "send_email", "key": "to", "expected": "x"})
    assert not r.passed and r.reason == "send_email never called"


def test_arg_which_selects_calls():
    t = make_trace(tool("t", {"n": 1}), tool("t", {"n": 2}))
    base = {"type": "arg", "tool": "t", "key": "n"}
    assert run1(t, {**base, "expected": 2}).passed  # any
    assert not run1(t, {**base, "expected": 2, "which": "first"}).passed
    assert run1(t, {**base, "expected": 2, "which": "last"}).passed
    r = run1(t, {**base, "expected": 2, "which": "all"})
    assert not r.passed and "[1, 2] (all of 2 calls)" in r.reason


def test_args_json_string_arguments_and_key_order():
    t = make_trace({"kind": "tool", "name": "issue_refund", "input": '{"amount": 42.50, "order_id": "ORD-1"}'})
    assert run1(t, {"type": "args", "tool": "issue_refund", "expected": {"order_id": "ORD-1", "amount": 42.5}}).passed
    r = run1(t, {"type": "args", "tool": "issue_refund", "expected": {"order_id": "ORD-1"}})
    assert not r.passed and "want exact match" in r.reason
    assert run1(
        t, {"type": "args", "tool": "issue_refund", "expected": {"order_id": "ORD-1"}, "mode": "partial"}
    ).passed


def test_args_nested_values_compare_deeply():
    t = make_trace(tool("t", {"a": {"b": [1, {"c": 2.0}]}}))
    assert run1(t, {"type": "args", "tool": "t", "expected": {"a": {"b": [1.0, {"c": 2}]}}}).passed
    assert not run1(t, {"type": "args", "tool": "t", "expected": {"a": {"b": [{"c": 2}, 1]}}}).passed


def test_order_passes_fails_and_after_without_before():
    assert run1(REFUND, {"type": "order", "before": "lookup_order", "after": "issue_refund"}).passed
    r = run1(REFUND, {"type": "order", "before": "issue_refund", "after": "lookup_order"})
    assert not r.passed and r.reason == "lookup_order (step 1) came before issue_refund (step 2)"
    blind = make_trace(tool("issue_refund", {"amount": 1}))
    r = run1(blind, {"type": "order", "before": "lookup_order", "after": "issue_refund"})
    assert not r.passed and r.reason == "issue_refund called but lookup_order never called"


def test_guarded_is_vacuous_without_the_tool_and_names_the_step():
    guard = {"type": "guarded", "tool": "issue_refund", "requires": "lookup_order"}
    assert run1(make_trace(tool("search_kb")), guard).passed
    assert run1(REFUND, guard).passed
    r = run1(make_trace(tool("issue_refund"), tool("lookup_order")), guard)
    assert not r.passed and r.reason == "issue_refund (step 1) called before any lookup_order"


@pytest.mark.parametrize(
    ("mode", "tools", "ok"),
    [
        ("strict", ["lookup_order", "issue_refund"], True),
        ("strict", ["issue_refund", "lookup_order"], False),
        ("in_order", ["lookup_order", "issue_refund"], True),
        ("in_order", ["issue_refund", "lookup_order"], False),
        ("unordered", ["issue_refund", "lookup_order"], True),
        ("unordered", ["issue_refund"], False),
        ("superset", ["issue_refund"], True),
        ("superset", ["issue_refund", "send_email"], False),
        ("subset", ["issue_refund", "lookup_order", "send_email"], True),
        ("subset", ["lookup_order"], False),
    ],
)
def test_trajectory_modes(mode, tools, ok):
    r = run1(REFUND, {"type": "trajectory", "tools": tools, "mode": mode})
    assert r.passed is ok
    if not ok:
        assert "['lookup_order', 'issue_refund']" in r.reason


def test_trajectory_in_order_allows_tools_between():
    t = make_trace(tool("a"), tool("x"), tool("b"))
    assert run1(t, {"type": "trajectory", "tools": ["a", "b"], "mode": "in_order"}).passed


def test_no_repeat_catches_loops_across_key_order_and_number_spelling():
    loop = make_trace(
        tool("lookup_order", {"id": 1, "x": "a"}),
        tool("lookup_order", {"x": "a", "id": 1.0}),
        tool("lookup_order", {"id": 1, "x": "a"}),
    )
    r = run1(loop, {"type": "no_repeat"})
    assert not r.passed and r.reason.startswith("lookup_order called 3 times with the same arguments")
    assert run1(REFUND, {"type": "no_repeat"}).passed
    assert run1(make_trace(tool("t", {"n": 1}), tool("t", {"n": 2})), {"type": "no_repeat"}).passed


def test_no_tool_errors_all_and_one_tool():
    t = make_trace(tool("search_kb"), tool("lookup_order", error="order not found"))
    r = run1(t, {"type": "no_tool_errors"})
    assert not r.passed and r.reason == "lookup_order (call 2) failed: order not found"
    assert run1(t, {"type": "no_tool_errors", "tool": "search_kb"}).passed


def test_finished():
    assert run1(REFUND, {"type": "finished"}).passed
    r = run1(make_trace(finish="step_cap"), {"type": "finished"})
    assert not r.passed and r.reason == "run ended by step_cap, not by the finish action"


def test_budget_limits_and_reason():
    r = run1(
        REFUND, {"type": "budget", "steps": 8, "tokens": 1000, "cost_usd": 0.05, "latency_ms": 2000, "tool_calls": 2}
    )
    assert r.passed and "steps 2 <= 8" in r.reason
    r = run1(REFUND, {"type": "budget", "steps": 1, "cost_usd": 0.001})
    assert not r.passed and r.reason == "steps 2, at most 1 allowed; cost_usd 0.002, at most 0.001 allowed"
    r = run1(REFUND, {"type": "budget", "latency_ms": 1000})
    assert r.reason == "latency_ms 1500, at most 1000 allowed"  # the trace's own latency wins over spans
    spans_only = make_trace(llm(latency_ms=700), llm(latency_ms=700))
    assert not run1(spans_only, {"type": "budget", "latency_ms": 1000}).passed


def test_end_state_rows_multiset_ordered_and_empty():
    q = "SELECT order_id, total FROM orders"
    assert run1(
        REFUND, {"type": "end_state", "query": q, "expected": [["ORD-654321", 10.0], ["ORD-123456", 42.5]]}
    ).passed
    r = run1(
        REFUND,
        {
            "type": "end_state",
            "query": q + " ORDER BY order_id",
            "ordered": True,
            "expected": [["ORD-654321", 10], ["ORD-123456", 42.5]],
        },
    )
    assert not r.passed and r.reason.startswith("query returned")
    assert run1(REFUND, {"type": "end_state", "query": "SELECT * FROM refunds WHERE amount > 50", "empty": True}).passed
    r = run1(REFUND, {"type": "end_state", "query": "SELECT order_id FROM refunds", "empty": True})
    assert not r.passed and r.reason == "query returned 1 rows, want none: [['ORD-123456']]"


def test_end_state_missing_table_is_an_error_not_a_pass():
    r = run1(REFUND, {"type": "end_state", "query": "SELECT * FROM emails", "empty": True})
    assert r.error and not r.passed and r.outcome == "error"


def test_a_check_name_override_is_the_result_name():
    r = run1(REFUND, {"type": "called", "tool": "lookup_order", "name": "looked-up"})
    assert r.name == "looked-up" and r.passed


def test_end_state_empty_table_keeps_its_declared_columns():
    t = make_trace(end_state={"emails": []}, end_state_columns={"emails": ["to_address", "subject"]})
    assert run1(t, {"type": "end_state", "query": "SELECT to_address FROM emails", "empty": True}).passed
    r = run1(
        make_trace(end_state={"emails": []}),
        {"type": "end_state", "query": "SELECT to_address FROM emails", "empty": True},
    )
    assert r.outcome == "error"  # without declared columns the column is unknown: an error, never a pass
