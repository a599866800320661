"""The help desk on the Microsoft Agent Framework: an `Agent` named support_desk on its OpenAI chat-completions
client (`OpenAIChatCompletionClient`), pointed at the OpenAI-compatible endpoint DESK_MODEL_URL names
(`_triage_desk.desk_model` is its script). DESK_BUG=1 leaves `lookup_order` out of its tools; DESK_TOOL_ERROR=1
makes it raise. Its built-in OpenTelemetry instrumentation writes the spans (to the global tracer provider) when
the recorder enables it.
Entry points: response (the AgentResponse `agent.run()` returns), dumped (its `to_dict()`)"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from _desk_frameworks import INSTRUCTIONS, MODEL
from _desk_frameworks import issue_refund as _refund
from _desk_frameworks import lookup_order as _lookup


def _agent() -> Any:
    from agent_framework import Agent, tool
    from agent_framework.openai import OpenAIChatCompletionClient

    @tool
    def lookup_order(order_id: str) -> dict[str, Any]:
        """Look up an order by its id: its status and total."""
        if os.environ.get("DESK_TOOL_ERROR") == "1":
            raise RuntimeError("database down")  # the framework answers the model with the failure
        return _lookup(order_id)

    @tool
    def issue_refund(order_id: str, amount: float) -> dict[str, Any]:
        """Refund an amount on an order."""
        return _refund(order_id, amount)

    tools = [issue_refund] if os.environ.get("DESK_BUG") == "1" else [lookup_order, issue_refund]
    client = OpenAIChatCompletionClient(model=MODEL, base_url=os.environ["DESK_MODEL_URL"], api_key="offline")
    return Agent(client, INSTRUCTIONS, name="support_desk", tools=tools)


def response(text: str) -> Any:
    """The AgentResponse of one run: its messages (function calls, their results, the answer) and usage."""
    return asyncio.run(_agent().run(text))


def dumped(text: str) -> Any:
    """The same, `to_dict()`ed."""
    return response(text).to_dict()
