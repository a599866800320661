"""A budget never passes on a number nobody measured: tokens, cost or latency a trace does not carry make
the budget an error ("not recorded"); a figure given, zero included, is judged."""

from __future__ import annotations

import pytest

from kit.case import parse_case
from kit.evaluate import evaluate
from kit.trace import parse_trace


def _budget(trace: dict, **limits) -> tuple[str, str]:
    case = parse_case(
        {"id": "c", "input": "x", "checks": [{"type": "budget", **limits}]}, file=None, base_dir=None, invariants={}
    )
    [result] = evaluate(parse_trace({"case_id": "c", "final_output": "ok", **trace}), case).results
    return result.outcome, result.reason


LLM = {"kind": "llm", "name": "m"}


@pytest.mark.parametrize(
    ("limits", "spans", "missing"),
    [
        ({"tokens": 100}, [LLM], "tokens"),
        ({"cost_usd": 1.0}, [LLM], "cost_usd"),
        ({"latency_ms": 1}, [LLM], "latency_ms"),
        ({"tokens": 100, "steps": 5}, [], "tokens"),
    ],
)
def test_a_budget_on_a_figure_the_trace_lacks_is_an_error(limits, spans, missing):
    outcome, reason = _budget({"spans": spans}, **limits)
    assert outcome == "error"
    assert f"{missing} not recorded" in reason


def test_given_figures_are_judged_zero_included():
    spans = [{**LLM, "tokens_in": 10, "tokens_out": 5, "cost_usd": 0.0, "latency_ms": 3.0}]
    assert _budget({"spans": spans}, tokens=100, cost_usd=0.0, latency_ms=10)[0] == "pass"
    assert _budget({"spans": spans}, tokens=10)[0] == "fail"
    assert _budget({"spans": [LLM], "latency_ms": 50.0}, latency_ms=10) == ("fail", "latency_ms 50, at most 10 allowed")


def test_a_limit_exceeded_fails_even_beside_a_figure_not_recorded():
    outcome, reason = _budget({"spans": [LLM, LLM]}, steps=1, tokens=100)
    assert outcome == "fail"
    assert "steps 2, at most 1 allowed" in reason and "tokens not recorded" in reason
