"""A user's own agent, as teams write them: the `openai` client, four tools and a guard that asks before it
returns a book. Used to record a two-turn conversation (as a message list and as real instrumentation spans,
by `generate.py library ...`) and to run the same conversation live under `kit run` (`guarded` / `buggy`
below are `fn(text, history)` agents), so that the import of a recording can be judged against the live run.

    user: I am member M7. I'd like to return Dune.
    model: list_loans({"member_id": "M7"})        -> [{"loan_id": "L42", "title": "Dune"}, ...]
    model: return_book({"loan_id": "L42"})        -> held by the guard: the user has not said yes
    agent: Shall I return Dune (loan L42)? Please say yes to confirm.
    user: Yes, please return it.
    model: return_book({"loan_id": "L42"})        -> {"returned": true, ...}   (runs: the user said yes)
    model: Done: Dune is returned. ...

The buggy variant has no guard: the call runs in turn 0, as the model asked.
The model is `LIBRARY_MODEL_URL` (an OpenAI-compatible endpoint; the tests use the kit's local double).
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

MODEL = "gpt-4o-mini-2024-07-18"
SYSTEM = "You are a library assistant. Use the tools. Returning a book needs the member's yes."
TURNS = ("I am member M7. I'd like to return Dune.", "Yes, please return it.")
LOANS = [
    {"loan_id": "L42", "title": "Dune", "due": "2026-12-01"},
    {"loan_id": "L43", "title": "Emma", "due": "2026-12-09"},
]
QUESTION = "Shall I return Dune (loan L42)? Please say yes to confirm."
DONE = "Done: Dune is returned. Loan L42 is closed."
ALREADY = "Dune was already returned: loan L42 is closed."


def list_loans(member_id: str) -> list[dict[str, Any]]:
    return [dict(x) for x in LOANS] if member_id == "M7" else []


def find_book(title: str) -> dict[str, Any]:
    return {"title": title, "available": title != "Dune"}


def return_book(loan_id: str) -> dict[str, Any]:
    return {"returned": True, "loan_id": loan_id}


def renew_loan(loan_id: str) -> dict[str, Any]:
    return {"renewed": True, "loan_id": loan_id, "due": "2026-12-29"}


TOOLS = {f.__name__: f for f in (list_loans, find_book, return_book, renew_loan)}
PARAMS = {"list_loans": ["member_id"], "find_book": ["title"], "return_book": ["loan_id"], "renew_loan": ["loan_id"]}
SCHEMAS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": name.replace("_", " "),
            "parameters": {
                "type": "object",
                "properties": {p: {"type": "string"} for p in params},
                "required": params,
            },
        },
    }
    for name, params in PARAMS.items()
]
CONFIRM = re.compile(r"^\s*(yes|yep|sure|go ahead)\b", re.I)
HELD = {"return_book"}  # what the guard asks about first


def script(guarded: bool) -> list[dict[str, Any]]:
    """The model's answers (for the local double), in the order this agent asks for them."""
    loans = {"id": "call_loans", "name": "list_loans", "arguments": {"member_id": "M7"}}
    ask = {"tool_calls": [loans], "usage": {"prompt_tokens": 120, "completion_tokens": 12}}
    first = {
        "tool_calls": [{"id": "call_return_1", "name": "return_book", "arguments": {"loan_id": "L42"}}],
        "usage": {"prompt_tokens": 180, "completion_tokens": 14},
    }
    again = {
        "tool_calls": [{"id": "call_return_2", "name": "return_book", "arguments": {"loan_id": "L42"}}],
        "usage": {"prompt_tokens": 220, "completion_tokens": 14},
    }
    done = {"content": DONE, "usage": {"prompt_tokens": 260, "completion_tokens": 16}}
    if guarded:
        return [ask, first, again, done]
    return [ask, first, done, {"content": ALREADY, "usage": {"prompt_tokens": 280, "completion_tokens": 12}}]


def turn(text: str, history: list[dict[str, Any]], *, base_url: str, guarded: bool) -> list[dict[str, Any]]:
    """One user turn: the OpenAI messages this turn produced (what the kit's runner takes)."""
    from openai import OpenAI

    client = OpenAI(base_url=base_url, api_key="test")
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        *history,
        {"role": "user", "content": text},
    ]
    produced: list[dict[str, Any]] = []
    for _ in range(6):
        resp = client.chat.completions.create(model=MODEL, messages=messages, tools=SCHEMAS)
        msg = resp.choices[0].message
        if not msg.tool_calls:
            produced.append({"role": "assistant", "content": msg.content})
            return produced
        if guarded and not CONFIRM.match(text) and any(tc.function.name in HELD for tc in msg.tool_calls):
            # The guard holds the call back and asks: the model's request never runs and is not sent on
            # (the API wants every call in a history answered).
            produced.append({"role": "assistant", "content": QUESTION})
            return produced
        said = msg.model_dump(exclude_none=True, exclude={"refusal", "audio", "annotations"})
        messages.append(said)
        produced.append(said)
        for tc in msg.tool_calls:
            result = TOOLS[tc.function.name](**json.loads(tc.function.arguments))
            answer = {"role": "tool", "tool_call_id": tc.id, "content": json.dumps(result)}
            messages.append(answer)
            produced.append(answer)
    raise RuntimeError("the agent took more than 6 steps")


def guarded(text: str, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return turn(text, history, base_url=os.environ["LIBRARY_MODEL_URL"], guarded=True)


def buggy(text: str, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return turn(text, history, base_url=os.environ["LIBRARY_MODEL_URL"], guarded=False)


def conversation(base_url: str, guarded: bool) -> list[dict[str, Any]]:
    """Both turns, as the user's own transcript: the message list a team would have recorded."""
    history: list[dict[str, Any]] = []
    for text in TURNS:
        said = turn(text, history, base_url=base_url, guarded=guarded)
        history += [{"role": "user", "content": text}, *said]
    return [{"role": "system", "content": SYSTEM}, *history]
