"""`calls: ok` on every check over tool calls, and `args` partial at every depth, with exact reasons."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from _oracle import make_trace, run1, tool

# The agent's first refund failed, it retried and the second went through; a failed email was never retried.
RETRIED = make_trace(
    tool("issue_refund", {"order_id": "ORD-1", "amount": 40}, error="gateway timeout"),
    tool("lookup_order", {"order_id": "ORD-1"}, {"total": 42.5}),
    tool("issue_refund", {"order_id": "ORD-1", "amount": 42.5}, {"ok": True}),
    tool("send_email", {"to": "a@example.com"}, error="smtp down"),
)


def test_called_counts_only_successful_calls():
    assert run1(RETRIED, {"type": "called", "tool": "send_email"}).passed
    r = run1(RETRIED, {"type": "called", "tool": "send_email", "calls": "ok"})
    assert not r.passed and r.reason == "send_email never called successfully"
    r = run1(RETRIED, {"type": "called", "tool": "issue_refund", "min": 2, "calls": "ok"})
    assert not r.passed and r.reason == "issue_refund called successfully 1 time, at least 2 required"
    r = run1(RETRIED, {"type": "called", "tool": "issue_refund", "calls": "ok"})
    assert r.passed and r.reason == "issue_refund called successfully 1 time"


def test_not_called_and_called_at_most_with_ok():
    assert not run1(RETRIED, {"type": "not_called", "tool": "send_email"}).passed
    assert run1(RETRIED, {"type": "not_called", "tool": "send_email", "calls": "ok"}).passed
    r = run1(RETRIED, {"type": "not_called", "tool": ["send_email", "issue_refund"], "calls": "ok"})
    assert r.reason == "forbidden issue_refund was called successfully 1 time"
    r = run1(RETRIED, {"type": "called_at_most", "tool": "issue_refund"})
    assert not r.passed and r.reason == "issue_refund called 2 times, at most 1 allowed"
    r = run1(RETRIED, {"type": "called_at_most", "tool": "issue_refund", "calls": "ok"})
    assert r.passed and r.reason == "issue_refund called successfully 1 time"


def test_arg_and_args_judge_the_successful_calls():
    first = {"type": "arg", "tool": "issue_refund", "key": "amount", "expected": 42.5, "which": "first"}
    r = run1(RETRIED, first)
    assert not r.passed and r.reason == "arg issue_refund.amount: got 40, want 42.5"
    assert run1(RETRIED, {**first, "calls": "ok"}).passed
    every = {"type": "arg", "tool": "issue_refund", "key": "amount", "expected": 40, "which": "all"}
    assert run1(RETRIED, every).reason == "arg issue_refund.amount: got [40, 42.5] (all of 2 calls), want 40"
    r = run1(RETRIED, {**every, "calls": "ok", "tool": "send_email", "key": "to"})
    assert not r.passed and r.reason == "send_email never called successfully"
    exact = {"type": "args", "tool": "issue_refund", "expected": {"order_id": "ORD-1", "amount": 40}}
    assert run1(RETRIED, exact).passed
    r = run1(RETRIED, {**exact, "calls": "ok"})
    assert not r.passed
    assert r.reason == (
        'issue_refund arguments {"amount": 42.5, "order_id": "ORD-1"}, want exact match of '
        '{"amount": 40, "order_id": "ORD-1"}'
    )


def test_order_and_guarded_keep_step_numbers_among_all_calls():
    guard = {"type": "guarded", "tool": "issue_refund", "requires": "lookup_order"}
    r = run1(RETRIED, guard)
    assert not r.passed and r.reason == "issue_refund (step 1) called before any lookup_order"
    assert run1(RETRIED, {**guard, "calls": "ok"}).passed  # the unguarded refund failed
    email_first = make_trace(tool("lookup_order", error="down"), tool("issue_refund"), tool("lookup_order"))
    r = run1(email_first, {**guard, "calls": "ok"})
    assert r.reason == "issue_refund (step 2) called before any successful lookup_order"
    order = {"type": "order", "before": "lookup_order", "after": "issue_refund"}
    assert not run1(RETRIED, order).passed
    assert run1(RETRIED, {**order, "calls": "ok"}).passed
    r = run1(email_first, {**order, "calls": "ok"})
    assert r.reason == "issue_refund (step 2) came before lookup_order (step 3)"
    r = run1(RETRIED, {"type": "order", "before": "send_email", "after": "issue_refund", "calls": "ok"})
    assert r.reason == "issue_refund called successfully but send_email never called successfully"
    r = run1(RETRIED, {"type": "order", "before": "send_email", "after": "cancel", "calls": "ok"})
    assert r.reason == "neither send_email nor cancel was called successfully"


def test_trajectory_and_no_repeat_with_ok():
    strict = {"type": "trajectory", "tools": ["lookup_order", "issue_refund"]}
    r = run1(RETRIED, strict)
    assert not r.passed and r.reason.startswith("tool sequence ['issue_refund', 'lookup_order'")
    assert run1(RETRIED, {**strict, "calls": "ok"}).passed
    r = run1(RETRIED, {**strict, "tools": ["issue_refund"], "calls": "ok"})
    assert (
        r.reason == "successful tool sequence ['lookup_order', 'issue_refund'] does not match strict ['issue_refund']"
    )
    retry_loop = make_trace(tool("t", {"n": 1}, error="busy"), tool("t", {"n": 1}))
    r = run1(retry_loop, {"type": "no_repeat"})
    assert not r.passed and r.reason == 't called 2 times with the same arguments {"n":1}'
    assert run1(retry_loop, {"type": "no_repeat", "calls": "ok"}).passed
    twice_ok = make_trace(tool("t", {"n": 1}), tool("t", {"n": 1.0}))
    r = run1(twice_ok, {"type": "no_repeat", "calls": "ok"})
    assert r.reason == 't called successfully 2 times with the same arguments {"n":1}'


def test_partial_ignores_unnamed_keys_at_every_depth():
    t = make_trace(
        tool(
            "book",
            {
                "user": {"id": "u1", "name": "Ann", "tier": "gold"},
                "legs": [{"from": "SFO", "to": "JFK", "seat": "12A"}, {"from": "JFK", "to": "SFO", "seat": "3C"}],
                "note": "window",
            },
        )
    )
    partial = {"type": "args", "tool": "book", "mode": "partial"}
    want = {"user": {"id": "u1"}, "legs": [{"from": "SFO", "to": "JFK"}, {"from": "JFK", "to": "SFO"}]}
    assert run1(t, {**partial, "expected": want}).passed
    assert not run1(t, {**partial, "mode": "exact", "expected": want}).passed
    # Lists still compare element by element and by length; values still compare deeply.
    assert not run1(t, {**partial, "expected": {"legs": [{"from": "SFO"}]}}).passed
    assert not run1(t, {**partial, "expected": {"legs": [{"from": "JFK"}, {"from": "SFO"}]}}).passed
    assert not run1(t, {**partial, "expected": {"user": {"id": "u2"}}}).passed
    assert not run1(t, {**partial, "expected": {"user": {"missing": None}}}).passed
    assert not run1(t, {**partial, "expected": {"user": "u1"}}).passed
    assert not run1(t, {**partial, "expected": {"note": {"x": 1}}}).passed


CALL_CHECKS = [
    {"type": "called", "tool": "t"},
    {"type": "not_called", "tool": "t"},
    {"type": "called_at_most", "tool": "t"},
    {"type": "arg", "tool": "t", "key": "k", "expected": 1},
    {"type": "args", "tool": "t", "expected": {"k": 1}},
    {"type": "order", "before": "a", "after": "b"},
    {"type": "guarded", "tool": "t", "requires": "a"},
    {"type": "trajectory", "tools": ["t"]},
    {"type": "no_repeat"},
]


@pytest.mark.parametrize("check", CALL_CHECKS, ids=[c["type"] for c in CALL_CHECKS])
def test_every_check_over_calls_takes_calls(check):
    assert run1(make_trace(), {**check, "calls": "ok"}).outcome in ("pass", "fail")
    assert run1(make_trace(), {**check, "calls": "all"}).outcome in ("pass", "fail")


def test_lint_refuses_other_values_of_calls(tmp_path):
    body = "".join(
        f"- id: {c['type']}\n  input: hi\n  checks:\n    - {json.dumps({**c, 'calls': 'some'})}\n" for c in CALL_CHECKS
    )
    (tmp_path / "c.yaml").write_text(body)
    kit = Path(sys.executable).parent / "kit"
    p = subprocess.run([str(kit), "lint", str(tmp_path / "c.yaml")], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "Traceback" not in p.stderr
    for c in CALL_CHECKS:
        assert f"case '{c['type']}': check #1 ({c['type']}): parameter 'calls'" in p.stderr, p.stderr
