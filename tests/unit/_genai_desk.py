"""The help desk on the plain `openai` SDK, traced by the official OpenTelemetry GenAI instrumentation
(`opentelemetry-instrumentation-openai-v2` for each model call, `opentelemetry-util-genai` for the agent's
`invoke_agent` span and its tools' `execute_tool` spans, the newest conventions opted into). It returns its
OpenAI message list. The model is whatever OpenAI-compatible endpoint DESK_MODEL_URL names
(`_triage_desk.desk_model` is its script); DESK_BUG=1 leaves `lookup_order` out of its tools."""

from __future__ import annotations

import json
import os
from typing import Any

from _desk_frameworks import INSTRUCTIONS, MODEL, issue_refund, lookup_order

TOOLS = {"lookup_order": lookup_order, "issue_refund": issue_refund}
SCHEMAS = {
    "lookup_order": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
    "issue_refund": {
        "type": "object",
        "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
        "required": ["order_id", "amount"],
    },
}


def desk(text: str, handler: Any) -> list[dict[str, Any]]:
    """One run under `handler` (a util-genai TelemetryHandler): an invoke_agent span named support_desk."""
    from openai import OpenAI

    client = OpenAI(base_url=os.environ["DESK_MODEL_URL"], api_key="offline", max_retries=0)
    names = ["issue_refund"] if os.environ.get("DESK_BUG") == "1" else ["lookup_order", "issue_refund"]
    tools = [{"type": "function", "function": {"name": n, "parameters": SCHEMAS[n]}} for n in names]
    messages: list[dict[str, Any]] = [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": text}]
    with handler.invoke_local_agent(agent_name="support_desk", request_model=MODEL):
        for _ in range(6):
            reply = client.chat.completions.create(model=MODEL, messages=messages, tools=tools).choices[0].message
            messages.append(reply.model_dump(mode="json", exclude_none=True))
            if not reply.tool_calls:
                break
            for call in reply.tool_calls:
                args = json.loads(call.function.arguments)
                with handler.tool(call.function.name) as run:
                    run.tool_call_id, run.arguments = call.id, args
                    result = TOOLS[call.function.name](**args)
                    run.tool_result = result
                messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
    return messages
