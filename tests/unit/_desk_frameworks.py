"""One small help desk written three ways (LangGraph, pydantic-ai, the OpenAI Agents SDK), each returning what
its framework returns naturally: the kit gets no glue. The model is whatever OpenAI-compatible endpoint
DESK_MODEL_URL names (the tests start a scripted double); DESK_BUG=1 plants a bug in the desk's own code.

Entry points for `kit run --agent _desk_frameworks:<name>`:
  langgraph_state, langchain_messages, pydantic_ai_messages, pydantic_ai_json, pydantic_ai_result,
  agents_result, agents_items
"""

from __future__ import annotations

import asyncio
import os
import warnings
from typing import Any

MODEL = "desk-model"
INSTRUCTIONS = "You are a shop's help desk. Look an order up before acting on it."
ORDERS = {
    "ORD-7": {"order_id": "ORD-7", "status": "delivered", "total": 42.0},
    "ORD-8": {"order_id": "ORD-8", "status": "shipped", "total": 19.5},
}


def lookup_order(order_id: str) -> dict[str, Any]:
    """Look up an order by its id: its status and total."""
    order = dict(ORDERS.get(order_id) or {"error": f"no order {order_id}"})
    if os.environ.get("DESK_BUG") == "1" and "total" in order:
        order["total"] = order["total"] * 100  # the planted bug: cents where the desk means units
    return order


def issue_refund(order_id: str, amount: float) -> dict[str, Any]:
    """Refund an amount on an order."""
    return {"refund_id": f"R-{order_id}", "order_id": order_id, "amount": amount}


def _url() -> str:
    return os.environ["DESK_MODEL_URL"]


# --- LangGraph ---------------------------------------------------------------------------------------------


def _graph() -> Any:
    from langchain_openai import ChatOpenAI

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent's move to langchain.agents
        from langgraph.prebuilt import create_react_agent

        model = ChatOpenAI(model=MODEL, base_url=_url(), api_key="offline", max_retries=0)
        return create_react_agent(model, [lookup_order, issue_refund], prompt=INSTRUCTIONS)


def langgraph_state(text: str) -> Any:
    """What `graph.invoke()` returns: the state dict {"messages": [LangChain messages]}."""
    return _graph().invoke({"messages": [("user", text)]})


def langchain_messages(text: str) -> Any:
    """The state's message list."""
    return _graph().invoke({"messages": [("user", text)]})["messages"]


# --- pydantic-ai -------------------------------------------------------------------------------------------


def _pydantic_agent() -> Any:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel(MODEL, provider=OpenAIProvider(base_url=_url(), api_key="offline"))
    return Agent(model, system_prompt=INSTRUCTIONS, tools=[lookup_order, issue_refund])


def pydantic_ai_messages(text: str) -> Any:
    """`result.all_messages()`: pydantic-ai's ModelMessage list."""
    return _pydantic_agent().run_sync(text).all_messages()


def pydantic_ai_result(text: str) -> Any:
    """The run's result itself (AgentRunResult)."""
    return _pydantic_agent().run_sync(text)


def pydantic_ai_json(text: str) -> Any:
    """`result.all_messages_json()`: the same as JSON bytes."""
    return _pydantic_agent().run_sync(text).all_messages_json()


# --- OpenAI Agents SDK -------------------------------------------------------------------------------------


def _agents_run(text: str) -> Any:
    from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
    from openai import AsyncOpenAI

    set_tracing_disabled(True)  # its traces would go to OpenAI's servers
    model = OpenAIChatCompletionsModel(model=MODEL, openai_client=AsyncOpenAI(base_url=_url(), api_key="offline"))
    agent = Agent(
        name="desk",
        instructions=INSTRUCTIONS,
        model=model,
        tools=[function_tool(lookup_order), function_tool(issue_refund)],
    )
    # Runner.run_sync refuses to run inside a running loop; a fresh loop per call keeps each run alone.
    return asyncio.run(Runner.run(agent, text))


def agents_result(text: str) -> Any:
    """The Agents SDK's RunResult."""
    return _agents_run(text)


def agents_items(text: str) -> Any:
    """`RunResult.to_input_list()`: Responses-API items."""
    return _agents_run(text).to_input_list()
