"""The help desk as a Google ADK `LlmAgent` named support_desk, its model reached through ADK's LiteLLM
wrapper on the OpenAI-compatible endpoint DESK_MODEL_URL names (`_triage_desk.desk_model` is its script),
returning the `Event`s its Runner yields (each `model_dump()`ed for the recording). DESK_BUG=1 leaves
`lookup_order` out of its tools. Entry point: events"""

from __future__ import annotations

import os
from typing import Any

from _desk_frameworks import INSTRUCTIONS, MODEL, issue_refund, lookup_order


def events(text: str) -> Any:
    """The run's Events, as `Runner.run` yields them."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch of LiteLLM's price list
    from google.adk.agents import LlmAgent
    from google.adk.models.lite_llm import LiteLlm
    from google.adk.runners import Runner
    from google.adk.sessions import InMemorySessionService
    from google.genai import types

    tools = [issue_refund] if os.environ.get("DESK_BUG") == "1" else [lookup_order, issue_refund]
    model = LiteLlm(model=f"openai/{MODEL}", api_base=os.environ["DESK_MODEL_URL"], api_key="offline")
    agent = LlmAgent(name="support_desk", model=model, instruction=INSTRUCTIONS, tools=tools)
    sessions = InMemorySessionService()
    sessions.create_session_sync(app_name="desk", user_id="u", session_id="s")
    runner = Runner(agent=agent, app_name="desk", session_service=sessions)
    message = types.Content(role="user", parts=[types.Part(text=text)])
    return list(runner.run(user_id="u", session_id="s", new_message=message))
