"""A triage -> billing desk written twice, with the OpenAI Agents SDK (a handoff) and with LangGraph (two
`create_react_agent` agents; triage's transfer tool hands control to billing), each returning what its
framework returns. Triage looks the order up and hands off; billing refunds. DESK_BUG=1 plants a bug: triage
gets the refund tool and refunds itself before it hands off (billing then only confirms). The model is the local double at DESK_MODEL_URL, answering from
`script` (which reads the tools each agent offers and what the conversation holds).

Entry points for `kit run --agent _multiagent_desk:<name>`: agents_desk, agents_tool_desk, langgraph_desk,
pydantic_ai_desk.
"""

import asyncio
import json
import os
import warnings
from typing import Any  # no `from __future__ import annotations`: LangChain reads the transfer tool's hints

MODEL = "desk-model"
ORDERS = {"ORD-7": {"order_id": "ORD-7", "status": "delivered", "total": 42.0}}
TRIAGE = "You are the triage desk. Look the order up, then hand billing questions to billing."
BILLING = "You are the billing desk. Refund what triage passed you."


def lookup_order(order_id: str) -> dict[str, Any]:
    """Look up an order by its id: its status and total."""
    return dict(ORDERS.get(order_id) or {"error": f"no order {order_id}"})


def issue_refund(order_id: str, amount: float) -> dict[str, Any]:
    """Refund an amount on an order."""
    return {"refund_id": f"R-{order_id}", "order_id": order_id, "amount": amount}


def _bug() -> bool:
    return os.environ.get("DESK_BUG") == "1"


def _url() -> str:
    return os.environ["DESK_MODEL_URL"]


# --- the model double's script --------------------------------------------------------------------------


def _call(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": args}]}


def script(body: dict[str, Any]) -> dict[str, Any] | str:
    """The model's answer to one request, from the tools it offers and the tool calls made so far (the same
    for both frameworks: each sends the conversation so far and the current agent's tools)."""
    tools = {t.get("function", {}).get("name") for t in body.get("tools") or []}
    called = [
        c.get("function", {}).get("name")
        for m in body.get("messages", [])
        if m.get("role") == "assistant"
        for c in m.get("tool_calls") or []
    ]
    handoff = next((t for t in tools if t and t.startswith(("transfer_to_", "ask_"))), None)
    if "lookup_order" in tools and "lookup_order" not in called:
        return _call("lookup_order", {"order_id": "ORD-7"})
    refund = _call("issue_refund", {"order_id": "ORD-7", "amount": 42.0})
    if handoff and "issue_refund" in tools and "issue_refund" not in called:
        return refund  # the planted bug: triage has the refund tool and uses it
    if handoff and handoff not in called:
        return _call(handoff, {"input": "Refund 42.0 on ORD-7."} if handoff.startswith("ask_") else {})
    if "issue_refund" in called or (handoff and handoff in called):
        return "Refund of 42.0 issued for ORD-7."
    if "issue_refund" in tools:
        return refund
    return "I could not help."


# --- OpenAI Agents SDK ------------------------------------------------------------------------------------


def agents_desk(text: str) -> Any:
    """The Agents SDK's RunResult of triage (handing off to billing)."""
    from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
    from openai import AsyncOpenAI

    set_tracing_disabled(
        os.environ.get("DESK_TRACING") != "1"
    )  # traces go to OpenAI's servers unless a test sets a processor
    model = OpenAIChatCompletionsModel(model=MODEL, openai_client=AsyncOpenAI(base_url=_url(), api_key="offline"))
    billing = Agent(name="billing", instructions=BILLING, model=model, tools=[function_tool(issue_refund)])
    triage_tools = [function_tool(lookup_order)] + ([function_tool(issue_refund)] if _bug() else [])
    triage = Agent(name="triage", instructions=TRIAGE, model=model, tools=triage_tools, handoffs=[billing])
    return asyncio.run(Runner.run(triage, text))


def agents_tool_desk(text: str) -> Any:
    """Triage calls billing as a tool (`billing.as_tool`): the Agents SDK's RunResult of triage. The sub-agent's
    own steps run inside the tool call and are not among the parent's items."""
    from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
    from openai import AsyncOpenAI

    set_tracing_disabled(os.environ.get("DESK_TRACING") != "1")
    model = OpenAIChatCompletionsModel(model=MODEL, openai_client=AsyncOpenAI(base_url=_url(), api_key="offline"))
    billing = Agent(name="billing", instructions=BILLING, model=model, tools=[function_tool(issue_refund)])
    ask = billing.as_tool(tool_name="ask_billing", tool_description="Ask the billing desk to act on a request.")
    triage = Agent(name="triage", instructions=TRIAGE, model=model, tools=[function_tool(lookup_order), ask])
    return asyncio.run(Runner.run(triage, text))


# --- LangGraph ----------------------------------------------------------------------------------------------


def _langgraph() -> Any:
    from typing import Annotated

    from langchain_core.messages import ToolMessage
    from langchain_core.tools import InjectedToolCallId, tool
    from langchain_openai import ChatOpenAI
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import InjectedState
    from langgraph.types import Command

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent's move to langchain.agents
        from langgraph.prebuilt import create_react_agent

    @tool("transfer_to_billing")
    def transfer_to_billing(
        state: Annotated[dict, InjectedState], tool_call_id: Annotated[str, InjectedToolCallId]
    ) -> Command:
        """Hand the conversation to the billing desk."""
        done = ToolMessage(json.dumps({"assistant": "billing"}), tool_call_id=tool_call_id)
        # The parent graph gets triage's messages too (the call included), as langgraph-supervisor's do.
        return Command(goto="billing", graph=Command.PARENT, update={"messages": [*state["messages"], done]})

    model = ChatOpenAI(model=MODEL, base_url=_url(), api_key="offline", max_retries=0)
    triage_tools: list[Any] = [lookup_order, transfer_to_billing] + ([issue_refund] if _bug() else [])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        triage = create_react_agent(model, triage_tools, prompt=TRIAGE, name="triage")
        billing = create_react_agent(model, [issue_refund], prompt=BILLING, name="billing")
    graph = StateGraph(MessagesState)
    graph.add_node("triage", triage, destinations=("billing",))
    graph.add_node("billing", billing)
    graph.add_edge(START, "triage")
    graph.add_edge("billing", END)
    return graph.compile()


def langgraph_desk(text: str) -> Any:
    """What `graph.invoke()` returns: the state dict {"messages": [...]}, each AI message named by its agent."""
    return _langgraph().invoke({"messages": [("user", text)]})


# --- pydantic-ai: delegation ---------------------------------------------------------------------------------


def pydantic_ai_desk(text: str, *, instrument: bool = False) -> Any:
    """Triage delegates to billing from inside a tool (`ask_billing` runs the billing agent), as pydantic-ai's
    docs delegate; the run's result (AgentRunResult). The delegate's steps are in the OpenTelemetry export
    (`instrument=True`: pydantic-ai's GenAI spans, `invoke_agent` with `gen_ai.agent.name`), not in the
    parent's messages."""
    from pydantic_ai import Agent, RunContext
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    if instrument:
        Agent.instrument_all(True)  # pydantic-ai's own spans, to the global tracer provider
    model = OpenAIChatModel(MODEL, provider=OpenAIProvider(base_url=_url(), api_key="offline"))
    billing = Agent(model, name="billing", system_prompt=BILLING, tools=[issue_refund])

    async def ask_billing(ctx: RunContext[None], input: str) -> str:
        """Ask the billing desk to act on a request."""
        return (await billing.run(input, usage=ctx.usage)).output

    tools: list[Any] = [lookup_order, ask_billing] + ([issue_refund] if _bug() else [])
    triage = Agent(model, name="triage", system_prompt=TRIAGE, tools=tools)
    return triage.run_sync(text)


# --- a conversation: OpenAI messages named by agent ----------------------------------------------------------


def chat_desk(text: str, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Two turns without a model: triage asks first; on the customer's yes it hands off and billing refunds.
    Returns this turn's OpenAI messages, each assistant message named by its agent."""
    if not history:
        return [{"role": "assistant", "name": "triage", "content": "Shall I pass this to billing for a refund?"}]
    call = {"id": "c1", "type": "function", "function": {"name": "transfer_to_billing", "arguments": "{}"}}
    refund = {"id": "c2", "type": "function", "function": {"name": "issue_refund", "arguments": '{"amount": 42.0}'}}
    return [
        {"role": "assistant", "name": "triage", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"assistant": "billing"}'},
        {"role": "assistant", "name": "billing", "content": None, "tool_calls": [refund]},
        {"role": "tool", "tool_call_id": "c2", "content": '{"refund_id": "R-ORD-7"}'},
        {"role": "assistant", "name": "billing", "content": "Refund of 42.0 issued for ORD-7."},
    ]
