"""The red team's attack generator: a Promptfoo provider (`redteam.provider`) that answers from the corpus.

Promptfoo's local plugins ask their generation model for attacks with a template and read the answer's
`Prompt:` lines. No model is asked here: each plugin in redteam/promptfooconfig.yaml carries a modifier
`kit_category: <category>`, which Promptfoo appends to the template, and this provider answers with every
attack of that category from redteam/attacks.yaml. Promptfoo then samples `numTests` of them and applies
its static strategies. Same corpus, same attacks, every run; nothing leaves the machine.
"""

from __future__ import annotations

import json
import re
from typing import Any

from kit.mcp import attacked
from kit.redteam.goals import GOAL_CATEGORY
from kit_promptfoo.redteam import corpus, multiturn
from kit_promptfoo.redteam.failure import settled

_CATEGORY = re.compile(r"^\s*kit_category:\s*([a-z-]+)\s*$", re.M)
_GOAL = re.compile(r"^\s*kit_goal:\s*(.+?)\s*$", re.M)


def call_api(prompt: str, options: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
    out = _call_api(prompt, options, context)
    return settled(out, rate_limited=bool(out.pop("_rate_limited", False)))


def _call_api(prompt: str, options: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
    found = _CATEGORY.findall(prompt or "")
    if not found and "Extract only real-world entities" in (prompt or ""):
        # Promptfoo asks for named entities to keep out of its graders' way; the corpus names none.
        return {"output": ""}
    if not found:
        # A grader's request: the kit's configs send those to grader.cjs (in-process; here each one would
        # cost a new Python worker pool), but a config without `defaultTest.options.provider` sends them
        # to `redteam.provider`: with a judge configured they go to the kit's one judge all the same.
        judged = _ask_judge(prompt or "")
        if judged is not None:
            return judged
        # Not a generation request the kit answers (no kit_category modifier): say so rather than invent.
        return {"error": "kit attack generator: no `kit_category` modifier in the request; see redteam/attacks.yaml"}
    if found[-1] == GOAL_CATEGORY:  # the goal is the attack: crescendo and jailbreak:tree pursue it
        goal = _GOAL.findall(prompt or "")
        return {"output": f"Prompt: {goal[-1]}"} if goal else {"error": "kit attack generator: no `kit_goal` modifier"}
    if found[-1] == attacked.PLUGIN:  # attacks through the agent's MCP servers: the user asks a plain question
        from kit.plan import current_plan

        asked = attacked.questions(attacked.all_names(current_plan().settings))  # the team's own tool names
        return {"output": "\n".join(f"Prompt: {q}" for q in asked.values())}
    if found[-1] == multiturn.CATEGORY:  # scripted conversations, one `{"turns": [...]}` prompt each
        return {"output": "\n".join(f"Prompt: {a.prompt}" for a in multiturn.load())}
    attacks = corpus.by_category(found[-1])
    if not attacks:
        return {"error": f"kit attack generator: no attacks in category {found[-1]!r}"}
    return {"output": "\n".join(f"Prompt: {a.text}" for a in attacks)}


def _messages(prompt: str) -> list[dict[str, Any]]:
    """Promptfoo hands chat prompts over as a JSON list of messages; anything else is one user message."""
    try:
        parsed = json.loads(prompt)
    except ValueError:
        parsed = None
    if isinstance(parsed, list) and parsed and all(isinstance(m, dict) and "role" in m for m in parsed):
        return parsed
    return [{"role": "user", "content": prompt}]


def _ask_judge(prompt: str) -> dict[str, Any] | None:
    """The kit's judge's answer to a grader's request, or None when the plan has no judge."""
    from kit.plan import current_plan

    cfg = current_plan().judge  # the plan's judge; the agent is not loaded for it
    if cfg is None:
        return None
    if cfg.provider not in ("openai-compatible", "openai"):
        return {"error": f"red-team grading needs an OpenAI-compatible judge; {cfg.describe()} is {cfg.provider}"}
    import openai

    client = openai.OpenAI(
        base_url=cfg.base_url, api_key=cfg.api_key or "not-needed", timeout=cfg.timeout_s, max_retries=cfg.retries
    )
    try:
        reply = client.chat.completions.create(model=cfg.model, messages=_messages(prompt), temperature=cfg.temperature)
    except openai.OpenAIError as e:
        # Only the judge's own HTTP 429 is a rate limit (its URL may hold 429 too).
        return {
            "error": f"{cfg.describe()}: {type(e).__name__}: {e}",
            "_rate_limited": isinstance(e, openai.RateLimitError),
        }
    content = reply.choices[0].message.content if reply.choices else None
    if content is None:
        return {"error": f"{cfg.describe()} returned no message content"}
    return {"output": content}
