"""The help desk as a CrewAI crew of one agent and one task, its LLM the OpenAI-compatible endpoint
DESK_MODEL_URL names (`_triage_desk.desk_model` is its script), returning its `CrewOutput`. DESK_BUG=1 leaves
`lookup_order` out of its tools. Entry point: crew_output"""

from __future__ import annotations

import os
from typing import Any

from _desk_frameworks import MODEL
from _desk_frameworks import issue_refund as _refund
from _desk_frameworks import lookup_order as _lookup


def crew_output(text: str) -> Any:
    """`crew.kickoff()`'s CrewOutput."""
    os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
    os.environ.setdefault("OTEL_SDK_DISABLED", "false")
    from crewai import LLM, Agent, Crew, Task
    from crewai.tools import tool

    @tool("lookup_order")
    def lookup_order(order_id: str) -> dict:
        """Look up an order by its id: its status and total."""
        return _lookup(order_id)

    @tool("issue_refund")
    def issue_refund(order_id: str, amount: float) -> dict:
        """Refund an amount on an order."""
        return _refund(order_id, amount)

    tools = [issue_refund] if os.environ.get("DESK_BUG") == "1" else [lookup_order, issue_refund]
    llm = LLM(model=f"openai/{MODEL}", base_url=os.environ["DESK_MODEL_URL"], api_key="offline", stream=False)
    agent = Agent(role="support_desk", goal="Help the customer", backstory="A shop's help desk.", tools=tools, llm=llm)
    task = Task(description=text, expected_output="What was done", agent=agent)
    return Crew(agents=[agent], tasks=[task]).kickoff()
