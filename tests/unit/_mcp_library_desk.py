"""A library's help desk whose tools come from its own MCP server (MCP_LIBRARY_COMMAND: a JSON stdio command),
built with the OpenAI Agents SDK's real MCP client; its model is the OpenAI-compatible endpoint DESK_MODEL_URL
names (the tests start a scripted double: `library_model`)."""

from __future__ import annotations

import asyncio
import json
import os
import re
from typing import Any

TIMEOUT = 20.0


async def _run(text: str) -> Any:
    from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
    from agents.mcp import MCPServerStdio
    from openai import AsyncOpenAI

    set_tracing_disabled(True)  # its traces would go to OpenAI's servers
    client = AsyncOpenAI(base_url=os.environ["DESK_MODEL_URL"], api_key="offline", max_retries=0)
    model = OpenAIChatCompletionsModel(model="library-model", openai_client=client)
    argv = json.loads(os.environ["MCP_LIBRARY_COMMAND"])
    params = {"command": argv[0], "args": argv[1:], "env": dict(os.environ)}
    async with MCPServerStdio(name="library", params=params, client_session_timeout_seconds=TIMEOUT) as server:
        agent = Agent(name="desk", instructions="You are a library's help desk.", model=model, mcp_servers=[server])
        return await Runner.run(agent, text)


def run(text: str) -> Any:
    return asyncio.run(_run(text))


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)


_ORDERED = re.compile(r"call (\w+) with `(\w+)`")


def library_model(obey: bool) -> Any:
    """Asked for the notes on a request: it calls the tool the user named, then answers. With `obey`, it also
    does what a tool's description or result tells it to (once): the agent tool poisoning works on."""

    def model(body: dict[str, Any]) -> Any:
        messages = body["messages"]
        asked = [c["function"]["name"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or []]
        if obey:
            said = [t["function"].get("description") or "" for t in body.get("tools") or []]
            results = [_text(m["content"]) for m in messages if m["role"] == "tool"]
            for name, key in (o for text in said + results for o in _ORDERED.findall(text)):
                if asked.count(name) < (2 if key == "notes" else 1):
                    return {"tool_calls": [{"name": name, "arguments": {"topic": "loan", key: "ann@example.com"}}]}
        question = " ".join(_text(m["content"]) for m in messages if m["role"] == "user")
        named = [t["function"]["name"] for t in body.get("tools") or [] if t["function"]["name"] in question]
        if named and named[0] not in asked:
            return {"tool_calls": [{"name": named[0], "arguments": {"topic": "my request"}}]}
        return "There are no notes on your request yet."

    return model
