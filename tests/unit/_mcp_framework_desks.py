"""The MCP help desk (tests/unit/_mcp_desk.py) written with pydantic-ai and with LangGraph, each with the
framework's MCP client pointed at the server named "shop" by one setting. The model is whatever
OpenAI-compatible endpoint DESK_MODEL_URL names (the tests start `_mcp_desk.desk_model` as a double).

  MCP_SHOP_COMMAND  a JSON list: the stdio command of the shop server (e.g. `kit mcp replay C`)
  MCP_SHOP_URL      or its streamable HTTP URL (e.g. `kit mcp replay C --port 8765`)
  MCP_EXTRA_COMMAND / MCP_EXTRA_URL   an optional second server, named "extra" (the red team's hostile one)

Neither framework's result says which MCP server a tool came from (pydantic-ai's messages carry the tool's
name alone; a LangChain ToolMessage its name and, from an MCP tool, the structured content), so each desk
returns its messages with `mcp_servers`: the tools it loaded from each server, as its MCP client listed them.

Entry points for `kit run --agent _mcp_framework_desks:<name>`: pydantic_ai_desk, langgraph_desk.
"""

from __future__ import annotations

import asyncio
import json
import os
import warnings
from contextlib import AsyncExitStack
from typing import Any

MODEL = "desk-model"
INSTRUCTIONS = "You are a shop's help desk. Look an order up before acting on it."
TIMEOUT = 20.0


def _transports() -> dict[str, Any]:
    """fastmcp's transport to each server named in the environment (what both clients below are built on)."""
    from fastmcp.client.transports import StdioTransport, StreamableHttpTransport

    out: dict[str, Any] = {}
    for name in ("shop", "extra"):
        command, url = os.environ.get(f"MCP_{name.upper()}_COMMAND"), os.environ.get(f"MCP_{name.upper()}_URL")
        if command:
            argv = json.loads(command)
            out[name] = StdioTransport(argv[0], argv[1:], env=dict(os.environ))
        elif url:
            out[name] = StreamableHttpTransport(url)
    return out


# --- pydantic-ai: its own MCP client, MCPToolset ----------------------------------------------------------


async def _pydantic_ai(text: str) -> dict[str, Any]:
    from pydantic_ai import Agent
    from pydantic_ai.mcp import MCPToolset
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    # The one setting per server: where it is (the kit's server in its place).
    servers = {
        name: MCPToolset(transport, id=name, init_timeout=TIMEOUT, read_timeout=TIMEOUT)
        for name, transport in _transports().items()
    }
    provider = OpenAIProvider(base_url=os.environ["DESK_MODEL_URL"], api_key="offline")
    model = OpenAIChatModel(MODEL, provider=provider)
    agent = Agent(model, instructions=INSTRUCTIONS, toolsets=list(servers.values()))
    async with agent:  # one MCP session per server for the run and the listings below
        result = await agent.run(text)
        listed = {name: await toolset.list_tools() for name, toolset in servers.items()}
    return {"messages": result.all_messages(), "mcp_servers": listed}


def pydantic_ai_desk(text: str) -> dict[str, Any]:
    return asyncio.run(_pydantic_ai(text))


# --- LangGraph: the prebuilt ReAct agent over MCP tools ---------------------------------------------------


def _langchain_tool(client: Any, tool: Any) -> Any:
    """An MCP tool as a LangChain tool, as langchain-mcp-adapters makes one (its 0.3 does not import with the
    `mcp` 2 SDK installed here): the tool's schema, its text as the result, and a failed call (`isError`) as a
    ToolMessage with status "error", which the model reads and the kit reads as the call's error."""
    from langchain_core.tools import StructuredTool, ToolException

    async def call(**arguments: Any) -> str:
        result = await client.call_tool(tool.name, arguments, raise_on_error=False)
        text = "".join(getattr(part, "text", "") for part in result.content)
        if result.is_error:
            raise ToolException(text or f"{tool.name} failed")
        return text

    return StructuredTool(
        name=tool.name,
        description=tool.description or "",
        args_schema=tool.input_schema,
        coroutine=call,
        handle_tool_error=True,
    )


async def _langgraph(text: str) -> dict[str, Any]:
    from fastmcp import Client
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent
    from openai import DefaultAsyncHttpxClient

    url = os.environ["DESK_MODEL_URL"]
    # The one setting per server: where it is (the kit's server in its place). The model's HTTP client is this
    # run's own: langchain-openai's shared one would outlive this run's event loop.
    async with AsyncExitStack() as stack:
        declared: dict[str, list[Any]] = {}
        for name, transport in _transports().items():
            client = await stack.enter_async_context(Client(transport, timeout=TIMEOUT, init_timeout=TIMEOUT))
            declared[name] = [_langchain_tool(client, t) for t in await client.list_tools()]
        http = await stack.enter_async_context(DefaultAsyncHttpxClient())
        model = ChatOpenAI(model=MODEL, base_url=url, api_key="offline", max_retries=0, http_async_client=http)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # create_react_agent's move to langchain.agents
            graph = create_react_agent(model, [t for tools in declared.values() for t in tools], prompt=INSTRUCTIONS)
        state = await graph.ainvoke({"messages": [("user", text)]})
    return {**state, "mcp_servers": declared}


def langgraph_desk(text: str) -> dict[str, Any]:
    return asyncio.run(_langgraph(text))


# --- the scripted model the tests run them with -----------------------------------------------------------


def desk_model(body: dict[str, Any]) -> Any:
    """`_mcp_desk.desk_model`, reading a failed call as pydantic-ai's OpenAI model sends it (`{"error": ...}`)
    as the failure's text, as the other frameworks send it."""
    from _mcp_desk import desk_model as model

    messages = []
    for m in body["messages"]:
        if m["role"] == "tool" and isinstance(m.get("content"), str) and m["content"].startswith('{"error"'):
            said = json.loads(m["content"])
            if isinstance(said, dict) and set(said) == {"error"}:
                m = {**m, "content": str(said["error"])}
        messages.append(m)
    return model({**body, "messages": messages})
