"""The help desk on the Claude Agent SDK: `query()` runs the bundled Claude Code CLI, which calls the Anthropic
Messages endpoint DESK_MODEL_URL names (`desk_model` is its script), the desk's tools an in-process SDK MCP
server (`create_sdk_mcp_server`, so the model sees them as `mcp__desk__lookup_order`). DESK_BUG=1 leaves
`lookup_order` out of the server, so the desk refunds without a lookup; DESK_TOOL_ERROR=1 makes the lookup
raise. Entry points: messages (the objects `query()` yields), dumped (the same, each `dataclasses.asdict()`ed)"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import re
import tempfile
from typing import Any

from _desk_frameworks import INSTRUCTIONS
from _desk_frameworks import issue_refund as _refund
from _desk_frameworks import lookup_order as _lookup

MODEL = "claude-desk"
SERVER = "desk"
# The CLI's own traffic off (its documented switches): no telemetry, error reports, update checks or other
# nonessential calls; only the model's endpoint is called.
QUIET = {
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_NON_ESSENTIAL_MODEL_CALLS": "1",
}


def desk_model(body: dict[str, Any]) -> Any:
    """The scripted model: look the order up when it has the tool, refund its total, answer. A request
    without the desk's tools (the CLI's own housekeeping, if any) is answered with a short text."""
    tools = {t.get("name", "").rpartition("__")[2] for t in body.get("tools", [])}
    if "issue_refund" not in tools:
        return "Desk."
    text = json.dumps(body["messages"])
    order_id = re.search(r"ORD-\d+", text).group()  # type: ignore[union-attr]
    results = [
        b
        for m in body["messages"]
        if m["role"] == "user" and isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]
    refund = {"name": f"mcp__{SERVER}__issue_refund", "arguments": {"order_id": order_id, "amount": 42.0}}
    if not results:
        if "lookup_order" in tools:
            return {"tool_calls": [{"name": f"mcp__{SERVER}__lookup_order", "arguments": {"order_id": order_id}}]}
        return {"tool_calls": [refund]}
    if len(results) == 1 and "lookup_order" in tools:
        return {"tool_calls": [refund]}
    return f"Refunded 42 on order {order_id}."


def _options(config_dir: str) -> Any:
    from claude_agent_sdk import ClaudeAgentOptions, create_sdk_mcp_server, tool

    @tool("lookup_order", "Look up an order by its id: its status and total.", {"order_id": str})
    async def lookup_order(args: dict[str, Any]) -> dict[str, Any]:
        if os.environ.get("DESK_TOOL_ERROR") == "1":
            raise RuntimeError("database down")  # the SDK answers the model with an is_error result
        return {"content": [{"type": "text", "text": json.dumps(_lookup(args["order_id"]))}]}

    @tool("issue_refund", "Refund an amount on an order.", {"order_id": str, "amount": float})
    async def issue_refund(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": json.dumps(_refund(args["order_id"], args["amount"]))}]}

    tools = [issue_refund] if os.environ.get("DESK_BUG") == "1" else [lookup_order, issue_refund]
    server = create_sdk_mcp_server(SERVER, tools=tools)
    env = {
        **QUIET,
        "ANTHROPIC_BASE_URL": os.environ["DESK_MODEL_URL"],
        "ANTHROPIC_API_KEY": "offline",
        "CLAUDE_CONFIG_DIR": config_dir,  # the CLI's settings and sessions, kept out of the user's home
        **{k: v for k, v in os.environ.items() if k.startswith("OTEL_") or k == "CLAUDE_CODE_ENABLE_TELEMETRY"},
    }
    return ClaudeAgentOptions(
        model=MODEL,
        system_prompt=INSTRUCTIONS,
        mcp_servers={SERVER: server},
        tools=[],  # none of the CLI's built-in tools: the desk's only
        allowed_tools=[f"mcp__{SERVER}__{t.name}" for t in tools],
        setting_sources=[],
        max_turns=6,
        cwd=config_dir,
        env=env,
    )


async def _run(text: str) -> list[Any]:
    from claude_agent_sdk import query

    with tempfile.TemporaryDirectory(prefix="claude-desk-") as config_dir:
        return [m async for m in query(prompt=text, options=_options(config_dir))]


def messages(text: str) -> Any:
    """The messages `query()` yields, as it yields them."""
    return asyncio.run(_run(text))


def dumped(text: str) -> Any:
    """The same, as JSON: each message `dataclasses.asdict()`ed."""
    return [dataclasses.asdict(m) for m in messages(text)]
