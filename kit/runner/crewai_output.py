"""CrewAI's `CrewOutput` as one conversation: each task's `messages` (OpenAI chat messages, as CrewAI keeps them
for its native tool calls) in task order, each assistant message made by the task's `agent` (its role).

What the output does not hold is refused, never read as a run of no calls: a task without messages (its
calls are in no field of the output), and an assistant message that acts in text (CrewAI's ReAct prompt:
`Action:` / `Action Input:`), whose calls are no tool calls of the message.
"""

from __future__ import annotations

import re
from typing import Any

_REACT = re.compile(r"^\s*Action:\s*\S.*^\s*Action Input:", re.M | re.S)


class UnreadOutput(ValueError):
    """A CrewOutput whose calls its fields do not hold; the message names the task and why."""


def is_crew_output(result: Any) -> bool:
    return isinstance(result, dict) and isinstance(result.get("tasks_output"), list) and "raw" in result


def to_messages(output: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str | None]]:
    """The tasks' messages, and the agent of each assistant message."""
    messages: list[dict[str, Any]] = []
    agents: list[str | None] = []
    for n, task in enumerate(output["tasks_output"]):
        name = task.get("name") if isinstance(task, dict) else None
        held = task.get("messages") if isinstance(task, dict) else None
        if not held:
            raise UnreadOutput(
                f"task {n} ({name!r}) holds no messages: its calls are in no field of the CrewOutput; "
                "import the crew's OpenTelemetry export instead"
            )
        agent = task.get("agent") if isinstance(task.get("agent"), str) else None
        for i, m in enumerate(held):
            if not isinstance(m, dict):
                raise UnreadOutput(f"task {n}, message {i}: a {type(m).__name__}, not a message")
            text = m.get("content")
            if (
                m.get("role") == "assistant"
                and not m.get("tool_calls")
                and isinstance(text, str)
                and _REACT.search(text)
            ):
                raise UnreadOutput(
                    f"task {n}, message {i}: an action written as text (Action: / Action Input:), whose call is "
                    "no tool call of the message; import the crew's OpenTelemetry export instead"
                )
            if m.get("role") == "assistant":
                agents.append(agent)
            messages.append(m)
    return messages, agents
