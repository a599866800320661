"""The help desk as a LlamaIndex `FunctionAgent` named support_desk on its OpenAI-compatible LLM class,
returning the events its run streams (`handler.stream_events()`). The model is the OpenAI-compatible endpoint
DESK_MODEL_URL names (`_triage_desk.desk_model` is its script); DESK_BUG=1 leaves `lookup_order` out of its
tools. Entry point: events"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from _desk_frameworks import INSTRUCTIONS, MODEL, issue_refund, lookup_order


def events(text: str) -> Any:
    """Every event of the run, as `handler.stream_events()` yields them."""
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.llms.openai_like import OpenAILike

    tools = [issue_refund] if os.environ.get("DESK_BUG") == "1" else [lookup_order, issue_refund]
    llm = OpenAILike(
        model=MODEL,
        api_base=os.environ["DESK_MODEL_URL"],
        api_key="offline",
        is_chat_model=True,
        is_function_calling_model=True,
        max_retries=0,
    )
    agent = FunctionAgent(name="support_desk", tools=tools, llm=llm, system_prompt=INSTRUCTIONS, streaming=False)

    async def run() -> list[Any]:
        handler = agent.run(user_msg=text)
        seen = [event async for event in handler.stream_events()]
        await handler
        return seen

    return asyncio.run(run())
