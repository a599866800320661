"""The help desk as a smolagents `ToolCallingAgent` on its OpenAI-compatible model class, returning what the
framework has at its end: `agent.memory.steps` (TaskStep, ActionStep, ...) or their dicts
(`memory.get_full_steps()`). The model is the OpenAI-compatible endpoint DESK_MODEL_URL names
(`desk_model` is its script: smolagents ends through its `final_answer` tool); DESK_BUG=1 leaves
`lookup_order` out of its tools. Entry points: steps, full_steps"""

from __future__ import annotations

import os
import re
from typing import Any

from _desk_frameworks import MODEL
from _desk_frameworks import issue_refund as _refund
from _desk_frameworks import lookup_order as _lookup


def desk_model(body: dict[str, Any]) -> Any:
    """The desk's script as smolagents talks to its model (each tool result comes back as a user message
    "Observation: ..."), ending through smolagents' `final_answer` tool."""
    texts = [
        "".join(p.get("text", "") for p in m["content"]) if isinstance(m["content"], list) else m["content"]
        for m in body["messages"]
        if m["role"] == "user"
    ]
    order_id = re.search(r"ORD-\d+", texts[0]).group()  # type: ignore[union-attr]
    tools = {t["function"]["name"] for t in body.get("tools", [])}
    seen = [t for t in texts if t.startswith("Observation:")]
    if not seen:
        if "lookup_order" in tools:
            return {"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": order_id}}]}
        return {"tool_calls": [{"name": "issue_refund", "arguments": {"order_id": order_id, "amount": 42.0}}]}
    if len(seen) == 1 and "lookup_order" in tools:
        return {"tool_calls": [{"name": "issue_refund", "arguments": {"order_id": order_id, "amount": 42.0}}]}
    answer = f"Refunded 42 on order {order_id}."
    return {"tool_calls": [{"name": "final_answer", "arguments": {"answer": answer}}]}


def _agent() -> Any:
    from smolagents import OpenAIServerModel, ToolCallingAgent, tool

    @tool
    def lookup_order(order_id: str) -> dict:
        """Look up an order by its id: its status and total.

        Args:
            order_id: The order's id.
        """
        return _lookup(order_id)

    @tool
    def issue_refund(order_id: str, amount: float) -> dict:
        """Refund an amount on an order.

        Args:
            order_id: The order's id.
            amount: The amount to refund.
        """
        return _refund(order_id, amount)

    tools = [issue_refund] if os.environ.get("DESK_BUG") == "1" else [lookup_order, issue_refund]
    model = OpenAIServerModel(model_id=MODEL, api_base=os.environ["DESK_MODEL_URL"], api_key="offline")
    return ToolCallingAgent(tools=tools, model=model, max_steps=6, verbosity_level=0)


def steps(text: str) -> Any:
    """`agent.memory.steps`: smolagents' own step objects."""
    agent = _agent()
    agent.run(text)
    return agent.memory.steps


def full_steps(text: str) -> Any:
    """`agent.memory.get_full_steps()`: the steps as dicts."""
    agent = _agent()
    agent.run(text)
    return agent.memory.get_full_steps()
