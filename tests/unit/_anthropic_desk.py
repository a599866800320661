"""The help desk written directly on the `anthropic` SDK, returning what such an agent has at its end: the
message list it kept (the SDK's blocks as they came), that list `model_dump()`ed, the `Message` objects of
its model calls, or the same run streamed (`messages.stream(...)`, each call's final message). The model is
whatever Messages endpoint DESK_MODEL_URL names (the tests start kit.doubles.anthropic_server); DESK_BUG=1
plants the bug: the desk forgets to give the model its `lookup_order` tool, so it refunds unlooked.

Entry points for `kit run --agent _anthropic_desk:<name>`: kept, dumped, messages, streamed
"""

from __future__ import annotations

import json
import os
from typing import Any

MODEL = "claude-desk"
SYSTEM = "You are a shop's help desk. Look an order up before acting on it."
ORDERS = {"ORD-7": {"order_id": "ORD-7", "status": "delivered", "total": 42.0}}
TOOLS = [
    {
        "name": "lookup_order",
        "description": "Look up an order by its id: its status and total.",
        "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
    },
    {
        "name": "issue_refund",
        "description": "Refund an amount on an order.",
        "input_schema": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
            "required": ["order_id", "amount"],
        },
    },
]


def _run_tool(name: str, args: dict[str, Any]) -> tuple[Any, bool]:
    if name == "lookup_order":
        order = ORDERS.get(args.get("order_id", ""))
        return (order, False) if order else (f"no order {args.get('order_id')}", True)
    return {"refund_id": f"R-{args['order_id']}", "amount": args["amount"]}, False


def _desk(text: str, *, stream: bool = False) -> tuple[list[dict[str, Any]], list[Any]]:
    """The agent loop: the messages it keeps, and each model call's Message."""
    from anthropic import Anthropic

    client = Anthropic(base_url=os.environ["DESK_MODEL_URL"], api_key="offline", max_retries=0)
    tools = TOOLS[1:] if os.environ.get("DESK_BUG") == "1" else TOOLS
    messages: list[dict[str, Any]] = [{"role": "user", "content": text}]
    calls: list[Any] = []
    for _ in range(6):
        kwargs = {"model": MODEL, "max_tokens": 512, "system": SYSTEM, "tools": tools, "messages": messages}
        if stream:
            with client.messages.stream(**kwargs) as events:
                response = events.get_final_message()
        else:
            response = client.messages.create(**kwargs)
        calls.append(response)
        messages.append({"role": "assistant", "content": response.content})
        if response.stop_reason != "tool_use":
            break
        results = []
        for block in response.content:
            if block.type == "tool_use":
                value, failed = _run_tool(block.name, block.input)
                text_value = value if isinstance(value, str) else json.dumps(value)
                results.append(
                    {"type": "tool_result", "tool_use_id": block.id, "content": text_value, "is_error": failed}
                )
        messages.append({"role": "user", "content": results})
    return messages, calls


def kept(text: str) -> Any:
    """The message list as the agent kept it: assistant content is the SDK's own block objects."""
    return _desk(text)[0]


def dumped(text: str) -> Any:
    """The same list as JSON: each block `model_dump()`ed."""
    messages, _ = _desk(text)
    return [
        {**m, "content": [b.model_dump() for b in m["content"]]} if m["role"] == "assistant" else m for m in messages
    ]


def messages(text: str) -> Any:
    """The list with each model call's `Message` in place of its assistant message: its tokens and model kept."""
    kept_messages, calls = _desk(text)
    replies = iter(calls)
    return [next(replies) if m["role"] == "assistant" else m for m in kept_messages]


def streamed(text: str) -> Any:
    """The run streamed: each call's final message from `messages.stream(...)`, beside the user's side."""
    kept_messages, calls = _desk(text, stream=True)
    replies = iter(calls)
    return {"messages": [next(replies) if m["role"] == "assistant" else m for m in kept_messages]}
