"""A multi-turn run: the user's turns sent one at a time to a conversation with the agent, joined into ONE trace.

    trace = converse(conversation, case, attempt, next_user_message)

Each turn the agent gets the turn's text and the conversation so far in OpenAI chat format (user,
assistant and tool messages of the earlier turns) and returns what it produced in that turn: anything a
single-turn agent may return (a trace dict, messages of any framework, `{"messages": [...], "end_state":
...}`, a framework's result), read by the same function (kit.runner.frameworks.trace_dict). The joined
trace has a user `message` span opening every turn, `turn` (0-based) on every span, the agent's last
answer as `final_output`, and the last turn's end state.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, Protocol

from kit.trace import Trace

# The next thing the user says, given the conversation so far (OpenAI messages); None: the user is done.
NextMessage = Callable[[int, list[dict[str, Any]]], str | None]


class AgentConversation(Protocol):
    """One conversation with an agent (fresh for every run of a case)."""

    def turn(self, text: str, history: list[dict[str, Any]]) -> Any: ...

    def close(self) -> None: ...


class TurnError(Exception):
    """A turn the agent broke (it raised or returned something that is not a turn's output)."""

    def __init__(self, turn: int, detail: str, cause: BaseException | None = None) -> None:
        super().__init__(f"turn {turn}: {detail}")
        self.turn = turn
        self.detail = detail
        self.cause = cause


def scripted(turns: tuple[str, ...] | list[str]) -> NextMessage:
    """The next message of a scripted case: its turns in order."""

    def next_message(i: int, history: list[dict[str, Any]]) -> str | None:
        return turns[i] if i < len(turns) else None

    return next_message


def _messages_of(spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A turn's spans as OpenAI chat messages: each tool call an assistant `tool_calls` message and its
    `tool` result, each assistant message as is (what a stateless agent needs to carry on)."""
    out: list[dict[str, Any]] = []
    for i, s in enumerate(spans):
        if s.get("kind") == "tool":
            call_id = str(s.get("tool_call_id") or s.get("id") or f"call_{len(out)}_{i}")
            arguments = json.dumps(s.get("input") or {}, default=str)
            out.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": call_id, "type": "function", "function": {"name": s.get("name"), "arguments": arguments}}
                    ],
                }
            )
            result = {"error": s["error"]} if s.get("error") is not None else s.get("output")
            out.append({"role": "tool", "tool_call_id": call_id, "content": json.dumps(result, default=str)})
        elif s.get("kind") == "message" and s.get("role") in ("assistant", "user"):
            content = s.get("content")
            out.append({"role": s["role"], "content": content if isinstance(content, str) else json.dumps(content)})
    return out


def turn_output(
    result: Any, text: str, case_id: str, history: list[dict[str, Any]] | None = None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the turn as a trace dict, the turn's messages for the history) from what the agent returned: whatever
    a single-turn agent may return (kit.runner.frameworks: a trace dict or Trace, messages of any framework,
    a dict holding them beside `end_state` and the like, a framework's result), or ValueError saying what
    was returned. A leading user message that repeats the turn's text is dropped (the runner adds the user's
    span), and so is, before it, a copy of the conversation so far (`history`, after any system messages):
    what an agent that returns its whole message list gives, whose earlier turns must not count twice."""
    from kit.runner.frameworks import UnknownResult, trace_dict

    if isinstance(result, Trace):
        result = result.model_dump(mode="json")
    plain = _openai_messages(result)
    if plain is not None:
        plain = _this_turn(plain, text, history or [])
        result = {**result, "messages": plain} if isinstance(result, dict) else plain
    try:
        data = trace_dict(result, case_id)
    except UnknownResult as e:
        raise ValueError(str(e)) from None
    spans = data.get("spans", [])
    if not isinstance(spans, list) or not all(isinstance(s, dict) for s in spans):
        raise ValueError(f"returned a trace dict whose `spans` is {_what(spans)}, not a list of span objects")
    first = spans[0] if spans else {}
    if first.get("kind") == "message" and first.get("role") == "user" and first.get("content") == text:
        spans = spans[1:]
        # The handoffs were placed among the spans with that message; the runner puts its own in its place.
        data["handoffs"] = [_moved(h, -1) for h in data.get("handoffs") or []]
    data["spans"] = spans
    if plain is None:
        return data, _messages_of(spans)
    return data, [m for m in plain if m.get("role") not in ("system", "developer")]


def _openai_messages(result: Any) -> list[dict[str, Any]] | None:
    """The OpenAI chat messages the agent returned as they are (kept for the history, exact), or None."""
    if isinstance(result, dict) and "spans" not in result:
        result = result.get("messages")
    if isinstance(result, list | tuple) and all(isinstance(m, dict) and "role" in m for m in result):
        return [dict(m) for m in result]
    return None


def _key(m: dict[str, Any]) -> tuple[Any, ...]:
    calls = [
        (c.get("id"), json.dumps(c.get("function"), sort_keys=True, default=str)) for c in m.get("tool_calls") or []
    ]
    return m.get("role"), m.get("content"), m.get("tool_call_id"), calls


def _this_turn(plain: list[dict[str, Any]], text: str, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages this turn produced: without a leading system prompt and copy of `history` when the turn's
    own user message follows them, and without that user message."""
    i = 0
    while i < len(plain) and plain[i].get("role") in ("system", "developer"):
        i += 1
    if history and [_key(m) for m in plain[i : i + len(history)]] == [_key(m) for m in history]:
        i += len(history)
    if i < len(plain) and plain[i].get("role") == "user" and plain[i].get("content") == text:
        return plain[i + 1 :]
    if plain and plain[0].get("role") == "user" and plain[0].get("content") == text:
        return plain[1:]
    return plain


def _what(value: Any) -> str:
    if isinstance(value, list):
        kinds = sorted({type(v).__name__ for v in value if not isinstance(v, dict)})
        return f"a list holding {', '.join(kinds)}"
    return type(value).__name__


def _answer(data: dict[str, Any]) -> str | None:
    if data.get("final_output") is not None:
        out = data["final_output"]
        return out if isinstance(out, str) else json.dumps(out, separators=(",", ":"), default=str)
    said = [
        s.get("content") for s in data.get("spans", []) if s.get("kind") == "message" and s.get("role") == "assistant"
    ]
    return said[-1] if said and isinstance(said[-1], str) else None


def _every_span_an_agent(spans: list[dict[str, Any]]) -> None:
    """In a conversation where some turn names its agents, a turn that named none (one agent spoke, which a
    turn alone does not tell) is the agent's that was speaking: the first one named, at the start."""
    named = [s.get("agent") for s in spans if s.get("agent")]
    if not named:
        return
    current = named[0]
    for s in spans:
        if s.get("agent"):
            current = s["agent"]
        else:
            s["agent"] = current


def _moved(handoff: Any, by: int) -> Any:
    """A handoff placed `by` spans later (never before the first); one whose place is not a number is left
    for the trace's validation to name."""
    at = handoff.get("at") if isinstance(handoff, dict) else None
    if type(at) is not int:
        return handoff
    return {**handoff, "at": max(at + by, 0)}


class Exchange:
    """One conversation with an agent driven one turn at a time: each `say` sends a user message, reads what the
    agent returned (`turn_output`, given the conversation so far so that a whole message list counts once) and
    keeps its spans, handoffs and finish reason; `trace()` is the conversation so far as one trace dict. The
    runner's `converse` and the red team's target (which learns each next message from an attacker, a turn at
    a time) both drive this, so a conversation is joined one way."""

    def __init__(self, conversation: AgentConversation, case_id: str, attempt: int) -> None:
        self.conversation = conversation
        self.case_id = case_id
        self.attempt = attempt
        self.started = time.perf_counter()
        self.history: list[dict[str, Any]] = []
        self.users: list[str] = []
        self._spans: list[dict[str, Any]] = []
        self._handoffs: list[dict[str, Any]] = []
        self._last: dict[str, Any] = {}
        self._finish_reasons: list[str | None] = []
        self.answer: str | None = None

    @property
    def turns(self) -> int:
        return len(self.users)

    def say(self, text: str) -> str | None:
        """One turn: the agent's answer to `text` (None when it said nothing). Raises TurnError naming the turn
        the agent broke."""
        n = self.turns
        try:
            result = self.conversation.turn(text, list(self.history))
        except Exception as e:
            raise TurnError(n, f"raised {type(e).__name__}: {e}", e) from e
        try:
            data, said = turn_output(result, text, self.case_id, self.history)
        except ValueError as e:
            raise TurnError(n, str(e)) from None
        spans = self._spans
        said_to = next((s.get("agent") for s in data["spans"] if s.get("agent")), None)
        spans.append({"kind": "message", "role": "user", "content": text, "turn": n})
        if said_to is not None:  # a run of several agents: the user's message is the agent's that got it
            spans[-1]["agent"] = said_to
        # Each turn's handoffs, placed among the whole conversation's spans (after this turn's user message).
        self._handoffs += [
            {**_moved(h, len(spans)), "turn": n} for h in data.get("handoffs") or [] if isinstance(h, dict)
        ]
        spans.extend({**s, "turn": n} for s in data["spans"])
        self.history.append({"role": "user", "content": text})
        self.history.extend(said)
        turn_answer = _answer(data)
        if turn_answer is not None:
            self.answer = turn_answer
            if not said or said[-1].get("role") != "assistant" or said[-1].get("content") != turn_answer:
                self.history.append({"role": "assistant", "content": turn_answer})
        self._finish_reasons.append(data.get("finish_reason"))
        self._last = data
        self.users.append(text)
        return turn_answer

    def trace(self) -> dict[str, Any]:
        """The conversation so far as one trace dict (validated later, by the caller). The last turn's fields (end
        state, model, agent) describe where it stands; what every turn contributed (spans, latency, finish
        reasons) is joined."""
        spans = [dict(s) for s in self._spans]
        joined = {k: v for k, v in self._last.items() if k not in ("spans", "final_output", "latency_ms", "handoffs")}
        _every_span_an_agent(spans)
        if self._handoffs:
            joined["handoffs"] = list(self._handoffs)
        finish_reasons = list(self._finish_reasons)
        joined.update(
            case_id=self.case_id,
            attempt=self.attempt,
            spans=spans,
            final_output=self.answer,
            latency_ms=round((time.perf_counter() - self.started) * 1000, 3),
            turn_finish_reasons=finish_reasons,
        )
        bad = next((r for r in finish_reasons if r not in (None, "finish", "stop")), None)
        if bad is not None and joined.get("finish_reason") in (None, "finish", "stop"):
            joined["finish_reason"] = bad  # a turn that hit its step cap or failed is not undone by a later one
        return joined


def converse(
    conversation: AgentConversation,
    case_id: str,
    attempt: int,
    next_message: NextMessage,
    *,
    max_turns: int,
) -> dict[str, Any]:
    """Run the conversation to its end and return the joined trace dict (validated later, by the caller).
    Raises TurnError naming the turn the agent broke."""
    exchange = Exchange(conversation, case_id, attempt)
    while exchange.turns < max_turns:
        text = next_message(exchange.turns, list(exchange.history))
        if text is None:
            break
        exchange.say(text)
    return exchange.trace()
