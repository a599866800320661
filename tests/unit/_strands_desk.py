"""The help desk as a Strands agent on its OpenAI model class, returning `agent.messages`: Bedrock Converse
messages (`{"role", "content": [{"text"} | {"toolUse"} | {"toolResult"}]}`), which Strands keeps whatever
the model. The model is the OpenAI-compatible endpoint DESK_MODEL_URL names (`_triage_desk.desk_model` is its
script); DESK_BUG=1 leaves `lookup_order` out of its tools. Entry point: messages"""

from __future__ import annotations

import os
from typing import Any

from _desk_frameworks import INSTRUCTIONS, MODEL
from _desk_frameworks import issue_refund as _refund
from _desk_frameworks import lookup_order as _lookup


def _agent() -> Any:
    from strands import Agent, tool
    from strands.models.openai import OpenAIModel

    @tool
    def lookup_order(order_id: str) -> dict:
        """Look up an order by its id: its status and total."""
        return _lookup(order_id)

    @tool
    def issue_refund(order_id: str, amount: float) -> dict:
        """Refund an amount on an order."""
        return _refund(order_id, amount)

    tools = [issue_refund] if os.environ.get("DESK_BUG") == "1" else [lookup_order, issue_refund]
    client = {"base_url": os.environ["DESK_MODEL_URL"], "api_key": "offline", "max_retries": 0}
    model = OpenAIModel(client_args=client, model_id=MODEL, stream=False)
    return Agent(model=model, tools=tools, system_prompt=INSTRUCTIONS, name="support_desk", callback_handler=None)


def messages(text: str) -> Any:
    """`agent.messages` after the run: its Converse messages."""
    agent = _agent()
    agent(text)
    return agent.messages
