"""Each framework's committed recording (tests/fixtures/frameworks/, written by its record.py with the real
package and its real instrumentation against the model double): the agent's return value, read as the runner
reads it, and the OTLP JSON export of the same run, imported, give the same verdict on every check (the clean
desk passes; the one that refunds without a lookup fails `guarded` and `order`) and the same steps: one model
call is one step, however many instrumentations wrote a span for it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kit.case import load_suite
from kit.evaluate import evaluate
from kit.importers import import_file
from kit.runner.frameworks import trace_dict
from kit.trace import Trace, parse_trace

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "frameworks"
FRAMEWORKS = ["anthropic"]
BUG = {"guarded:issue_refund", "order:lookup_order<issue_refund"}


@pytest.fixture(scope="module")
def case() -> Any:
    return load_suite(FIXTURES / "desk.yaml").cases[0]


def _returned(framework: str, tail: str) -> Trace:
    data = trace_dict(json.loads((FIXTURES / f"{framework}_desk{tail}.json").read_text()), "refund")
    return parse_trace({**data, "case_id": "refund"})


def _exported(framework: str, tail: str) -> Trace:
    [trace] = import_file(FIXTURES / f"otel-{framework}{tail}.json")
    return parse_trace(trace)


@pytest.mark.parametrize("bug", [False, True])
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_return_value_and_the_export_give_the_same_verdicts(framework: str, bug: bool, case: Any) -> None:
    tail = "-bug" if bug else ""
    for trace in (_returned(framework, tail), _exported(framework, tail)):
        failed = {r.name for r in evaluate(trace, case).results if not r.passed}
        assert failed == (BUG if bug else set()), trace.source_format


@pytest.mark.parametrize("bug", [False, True])
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_one_model_call_is_one_step_in_the_export(framework: str, bug: bool) -> None:
    tail = "-bug" if bug else ""
    returned, exported = _returned(framework, tail), _exported(framework, tail)

    def calls(t: Trace) -> list[tuple[str | None, Any, Any]]:
        return [(s.name, s.input, s.output) for s in t.tool_calls]

    def llm(t: Trace) -> list[tuple[int, int]]:
        return [(s.tokens_in, s.tokens_out) for s in t.spans if s.kind == "llm"]

    assert calls(exported) == calls(returned)
    assert llm(exported) == llm(returned)  # not each call twice: steps, tokens and cost counted once
    assert exported.final_output == returned.final_output


def test_the_anthropic_exports_cache_tokens_are_kept_beside_the_prompt_it_counts() -> None:
    last = [s for s in _exported("anthropic", "").spans if s.kind == "llm"][-1]
    assert (last.tokens_in, last.model_extra["tokens_cache_read"]) == (130, 100)
