"""An LLMTestCase (or, for a multi-turn case, a ConversationalTestCase) that carries the kit trace it was
built from.

The trace rides on the test case as a field DeepEval never serialises (`create_api_test_case` copies named
fields only), so the per-test rewrite of `.deepeval/.temp_test_run_data.json` stays small. A plain
LLMTestCase also works: put the trace dict under `metadata["kit_trace"]`.
"""

from __future__ import annotations

from typing import Any

from deepeval.test_case import ConversationalTestCase, LLMTestCase, ToolCall, Turn
from pydantic import Field

from kit.case import Case
from kit.judge.rubrics import input_text
from kit.trace import Trace, parse_trace

TRACE_KEY = "kit_trace"


class KitTestCase(LLMTestCase):
    """An LLMTestCase plus the parsed kit trace (excluded from DeepEval's JSON files)."""

    kit_trace: Any = Field(default=None, exclude=True, repr=False)


class KitConversationalTestCase(ConversationalTestCase):
    """A ConversationalTestCase plus the parsed kit trace of the whole conversation (never serialised)."""

    kit_trace: Any = Field(default=None, exclude=True, repr=False)


def _tool_calls(trace: Trace) -> list[ToolCall]:
    calls = []
    for span in trace.tool_calls:
        output = span.output if span.error is None else {"error": span.error}
        calls.append(ToolCall(name=span.name or "?", input_parameters=dict(span.input), output=output))
    return calls


def conversation_turns(trace: Trace) -> list[Turn]:
    """The conversation as DeepEval turns: per kit turn, the user's message, then the agent's answer with
    the tools it called in that turn."""
    out: list[Turn] = []
    for n in trace.turns:
        part = trace.for_turn(n)
        for span in part.spans:
            if span.kind == "message" and span.role == "user":
                out.append(Turn(role="user", content=input_text(span.content), metadata={"turn": n}))
        out.append(
            Turn(
                role="assistant",
                content=part.output,
                tools_called=_tool_calls(part) or None,
                metadata={"turn": n},
            )
        )
    return out


def kit_conversational_test_case(trace: Trace | dict[str, Any], case: Case) -> KitConversationalTestCase:
    """The DeepEval view of one conversation: its turns (the tools called in each), the trace attached."""
    parsed = trace if isinstance(trace, Trace) else parse_trace(trace)
    user = getattr(case, "user", None)
    return KitConversationalTestCase(
        name=f"{case.id}#{parsed.attempt}",
        turns=conversation_turns(parsed),
        scenario=user.instruction if user is not None else None,
        expected_outcome=case.reference,
        metadata={"case_id": case.id, "attempt": parsed.attempt, "variant": case.variant},
        tags=list(case.tags) or None,
        kit_trace=parsed,
    )


def kit_test_case(trace: Trace | dict[str, Any], case: Case) -> Any:
    """The DeepEval view of one run: input, output, reference and tool calls, with the trace attached; a
    ConversationalTestCase for a multi-turn case."""
    parsed = trace if isinstance(trace, Trace) else parse_trace(trace)
    if getattr(case, "is_multi_turn", False):
        return kit_conversational_test_case(parsed, case)
    return KitTestCase(
        name=f"{case.id}#{parsed.attempt}",
        input=input_text(case.input),
        actual_output=parsed.output,
        expected_output=case.reference,
        tools_called=_tool_calls(parsed),
        metadata={"case_id": case.id, "attempt": parsed.attempt, "variant": case.variant},
        tags=list(case.tags) or None,
        kit_trace=parsed,
    )


def trace_of(test_case: Any) -> Trace:
    """The kit trace behind a test case, or ValueError saying where it was looked for."""
    attached = getattr(test_case, "kit_trace", None)
    if isinstance(attached, Trace):
        return attached
    if attached is not None:
        return parse_trace(attached)
    raw = (test_case.metadata or {}).get(TRACE_KEY)
    if raw is None:
        raise ValueError(
            f"test case {test_case.name or getattr(test_case, 'input', '')[:40]!r} carries no kit trace "
            f"(build it with kit_test_case(), or put the trace dict under metadata[{TRACE_KEY!r}])"
        )
    return parse_trace(raw)
