"""What a Promptfoo call asks of the kit: the agent input, its context and variant, and the case to judge by.

Pydantic at the edge: Promptfoo hands over free-form `vars` and provider/assertion `config`; they are
validated here once, so the provider and the assertion fail with one clear line on bad input.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kit.errors import error_line


class KitVars(BaseModel):
    """The kit's keys in a test's `vars` or in a provider's / assertion's `config` (vars win)."""

    model_config = ConfigDict(extra="ignore")

    case_id: str | None = None
    case_file: str | None = None
    context: dict[str, Any] = Field(default_factory=dict)
    variant: str | None = None
    policy: str | None = None
    # The agent this config runs (`module:callable`); else the plan's (KIT_AGENT, [tool.kit] agent).
    agent: str | None = None
    # Only the kit's own reference configs run the reference agent when no agent is named anywhere.
    reference: bool = False
    # Which attempt of the case this test is (a case with `runs: N` is N tests); else Promptfoo's repeat index.
    attempt: int | None = Field(default=None, ge=0)


def merged(config: dict[str, Any] | None, vars_: dict[str, Any] | None) -> KitVars:
    """Provider/assertion config first, test vars over it; `context` may arrive as a JSON string."""
    data: dict[str, Any] = {k: v for k, v in (config or {}).items() if v is not None}
    data.update({k: v for k, v in (vars_ or {}).items() if k in KitVars.model_fields and v is not None})
    if isinstance(data.get("context"), str):
        data["context"] = json.loads(data["context"]) if data["context"].strip() else {}
    try:
        return KitVars.model_validate(data)
    except ValidationError as e:
        raise ValueError(f"kit vars: {error_line(e)}") from None


def encode_turns(turns: Any) -> str:
    """A conversation's user turns as the one-line prompt Promptfoo shows and sends: `{"turns": [...]}`."""
    return json.dumps({"turns": list(turns)}, ensure_ascii=False)


def prompt_turns(prompt: str) -> tuple[str, ...] | None:
    """The user turns a prompt encodes (`{"turns": ["...", ...]}`: a multi-turn test or attack), else None."""
    text = prompt.strip()
    if not (text.startswith("{") and text.endswith("}")):
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return None
    turns = data.get("turns") if isinstance(data, dict) else None
    if isinstance(turns, list) and turns and all(isinstance(t, str) and t.strip() for t in turns):
        return tuple(turns)
    return None


def agent_input(prompt: str) -> str | list[dict[str, str]]:
    """The rendered prompt, or the message list it encodes (a message list is sent as a JSON array)."""
    text = prompt.strip()
    if text.startswith("[") and text.endswith("]"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            return prompt
        if isinstance(data, list) and all(isinstance(m, dict) and "role" in m and "content" in m for m in data):
            return data
    return prompt


def load_case(case_file: str, case_id: str, plan: Any = None) -> Any:
    """The case `case_id` of `case_file` (relative to the project root), as the plan reads it (`Plan.case`;
    default: this process's plan, kit.plan.current_plan), or ValueError naming both."""
    from kit.errors import KitInputError

    if plan is None:
        from kit.plan import current_plan

        plan = current_plan()
    try:
        return plan.case(case_file, case_id)
    except KitInputError as e:
        raise ValueError(str(e)) from None


def request_case(req: KitVars, case: Any, prompt: str) -> Any:
    """The Case the agent runs on: the rendered prompt (a red-team attack, say) as its input, the case's
    context overlaid by the request's, the case's checks for the verdict. A prompt that encodes turns
    (`{"turns": [...]}`) is a whole conversation, run turn by turn; a simulated-user case whose prompt is
    its own instruction keeps its user. A case's cassette is left out: it recorded the case's own input,
    not this prompt."""
    import dataclasses

    from kit.case import Case

    base = case if case is not None else Case(id=req.case_id or "promptfoo", input=prompt)
    extra = {k: v for k, v in base.extra.items() if k != "cassette"}
    context = {**base.context, **req.context}
    turns = prompt_turns(prompt)
    if turns is not None:
        return dataclasses.replace(base, input=None, turns=turns, user=None, context=context, extra=extra)
    user = getattr(base, "user", None)
    if user is not None and prompt.strip() == user.instruction.strip():
        return dataclasses.replace(base, context=context, extra=extra)
    return dataclasses.replace(base, input=agent_input(prompt), turns=None, user=None, context=context, extra=extra)
