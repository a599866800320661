"""A triage desk that answers alone, named by its framework: the OpenAI Agents SDK's `Agent(name="triage")`
and LangGraph's `create_react_agent(name="triage")`, each returning what its framework returns. The model is
the OpenAI-compatible endpoint DESK_MODEL_URL names (`desk_model` is its script); DESK_BUG=1 plants the bug:
the desk forgets to give the model its `lookup_order` tool, so it refunds without a lookup.

Entry points for `kit run --agent _triage_desk:<name>`: agents_triage, langgraph_triage
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import warnings
from typing import Any

from _desk_frameworks import INSTRUCTIONS, MODEL, issue_refund, lookup_order


def desk_model(body: dict[str, Any]) -> Any:
    """The scripted model: look the order up when it has the tool, refund its total, answer."""
    messages = body["messages"]
    text = " ".join(str(m["content"]) for m in messages if m["role"] == "user")
    order_id = re.search(r"ORD-\d+", text).group()  # type: ignore[union-attr]
    tools = {t["function"]["name"] for t in body.get("tools", [])}
    results = [m["content"] for m in messages if m["role"] == "tool"]
    if not results:
        if "lookup_order" in tools:
            return {"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": order_id}}]}
        return {"tool_calls": [{"name": "issue_refund", "arguments": {"order_id": order_id, "amount": 42.0}}]}
    if len(results) == 1 and "lookup_order" in tools:
        return {"tool_calls": [{"name": "issue_refund", "arguments": {"order_id": order_id, "amount": 42.0}}]}
    return f"Refunded 42 on order {order_id}."


def _tools() -> list[Any]:
    return [issue_refund] if os.environ.get("DESK_BUG") == "1" else [lookup_order, issue_refund]


def agents_triage(text: str) -> Any:
    """The Agents SDK's RunResult of one agent named triage."""
    from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
    from openai import AsyncOpenAI

    set_tracing_disabled(os.environ.get("DESK_TRACING") != "1")  # its own traces would go to OpenAI's servers
    client = AsyncOpenAI(base_url=os.environ["DESK_MODEL_URL"], api_key="offline")
    model = OpenAIChatCompletionsModel(model=MODEL, openai_client=client)
    agent = Agent(name="triage", instructions=INSTRUCTIONS, model=model, tools=[function_tool(t) for t in _tools()])
    return asyncio.run(Runner.run(agent, text))


def langgraph_triage(text: str) -> Any:
    """`graph.invoke()`'s state of `create_react_agent(name="triage")`: its AI messages are named triage."""
    from langchain_openai import ChatOpenAI

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent's move to langchain.agents
        from langgraph.prebuilt import create_react_agent

        model = ChatOpenAI(model=MODEL, base_url=os.environ["DESK_MODEL_URL"], api_key="offline", max_retries=0)
        graph = create_react_agent(model, _tools(), prompt=INSTRUCTIONS, name="triage")
    return graph.invoke({"messages": [("user", text)]})


def as_json(result: Any) -> Any:
    """A run's return value as JSON the runner reads back the same way (for the committed recordings)."""
    if hasattr(result, "to_input_list"):  # a RunResult: its items, each with the agent that made it
        return {"messages": json.loads(json.dumps(result.to_input_list(), default=str))}
    from langchain_core.messages import messages_to_dict

    return messages_to_dict(result["messages"])
