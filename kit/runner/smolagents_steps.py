"""smolagents' memory as chat messages: `agent.memory.steps` (its step objects, each `.dict()`ed) or the dicts
`agent.memory.get_full_steps()` gives.

A `TaskStep` is the user's message, a `SystemPromptStep` the system's; an `ActionStep` of a `ToolCallingAgent`
is one model call (its `token_usage`, its model) with its `tool_calls`, and its `observations` the result of
its one call (an `error` of the step is that call's error); `final_answer` is smolagents' own tool, kept as a
call, whose answer is the final output. What the steps do not record is refused by name, never guessed: a
`CodeAgent`'s step (the tools its code calls are in no step), several calls in one step (their results share
one observations text), an error with no call.
"""

from __future__ import annotations

import ast
import json
from typing import Any

from kit.importers.common import content_text

FINAL_ANSWER = "final_answer"
CODE_TOOL = "python_interpreter"  # a CodeAgent's action: code, whose own tool calls no step records
_ACTION_KEYS = frozenset({"step_number", "tool_calls", "observations"})


class UnreadStep(ValueError):
    """A step whose calls the memory does not record one by one; the message names the step and why."""


def step_kind(m: Any) -> str | None:
    """The kind of a smolagents step as a dict (`task`, `action`, `planning`, `final`, `system`), or None."""
    if not isinstance(m, dict):
        return None
    if set(m) >= _ACTION_KEYS:
        return "action"
    if set(m) == {"task", "task_images"} or set(m) == {"task"}:
        return "task"
    if "plan" in m and "model_output_message" in m:
        return "planning"
    if set(m) == {"output"}:
        return "final"
    if set(m) == {"system_prompt"}:
        return "system"
    return None


def as_dict(step: Any) -> dict[str, Any]:
    """A step object as smolagents itself dumps it."""
    if isinstance(step, dict):
        return step
    dumped: dict[str, Any] = step.dict()
    return dumped


def _usage(raw: Any) -> dict[str, Any] | None:
    if not isinstance(raw, dict):
        return None
    return {"input_tokens": raw.get("input_tokens") or 0, "output_tokens": raw.get("output_tokens") or 0}


def _model(step: dict[str, Any]) -> str | None:
    raw = (step.get("model_output_message") or {}).get("raw")
    model = raw.get("model") if isinstance(raw, dict) else None
    return model if isinstance(model, str) else None


def _observed(result: Any) -> str:
    """An observation as a result: smolagents writes a tool's dict or list result as `str()` of it, a Python
    literal, read back as the value (as JSON text); any other text is kept as it is."""
    if result is None:
        return ""
    text = str(result)
    if text[:1] in "{[":
        try:
            return json.dumps(ast.literal_eval(text))
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return text
    return text


def to_messages(steps: list[Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """The steps as a conversation (`messages`, and `final_output` when the run answered) and the error of
    each call whose step failed, by call id. UnreadStep names what the steps do not record."""
    messages: list[dict[str, Any]] = []
    errors: dict[str, str] = {}
    final: Any = None
    for n, raw in enumerate(steps):
        step = as_dict(raw)
        kind = step_kind(step)
        if kind == "task":
            messages.append({"role": "user", "content": str(step.get("task") or "")})
        elif kind == "system":
            messages.append({"role": "system", "content": str(step.get("system_prompt") or "")})
        elif kind == "final":
            final = step.get("output")
        elif kind == "planning":
            msg = {"role": "assistant", "content": str(step.get("plan") or "")}
            usage = _usage(step.get("token_usage"))
            messages.append({**msg, **({"usage": usage} if usage else {})})
        elif kind == "action":
            final = _action(n, step, messages, errors, final)
        else:
            found = ", ".join(repr(k) for k in list(step)[:5])
            raise UnreadStep(f"step {n}: a dict with {found}, which is no smolagents step the reader knows")
    conv: dict[str, Any] = {"messages": messages}
    if final is not None:  # the run answered (final_answer ran, or a FinalAnswerStep): it finished
        conv["final_output"] = final if isinstance(final, str) else json.dumps(final, default=str)
        conv["finish_reason"] = "finish"
    return conv, errors


def _action(n: int, step: dict[str, Any], messages: list[dict[str, Any]], errors: dict[str, str], final: Any) -> Any:
    calls = [c for c in step.get("tool_calls") or [] if isinstance(c, dict)]
    names = [(c.get("function") or {}).get("name") for c in calls]
    if CODE_TOOL in names or step.get("code_action"):
        raise UnreadStep(
            f"step {n}: a CodeAgent's action (code): the tools its code calls are in no step; "
            "import the run's OpenTelemetry export instead"
        )
    if len(calls) > 1:
        raise UnreadStep(
            f"step {n}: {len(calls)} tool calls ({', '.join(map(str, names))}) share one observations text, so "
            "which result is whose is not recorded; import the run's OpenTelemetry export instead"
        )
    error = step.get("error")
    why = error.get("message") if isinstance(error, dict) else (str(error) if error else None)
    if why and not calls:
        raise UnreadStep(f"step {n}: the step failed before any tool call ({why})")
    out = step.get("model_output_message") or {}
    text = content_text(out.get("content")) if isinstance(out, dict) else None
    msg: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        fn = calls[0].get("function") or {}
        msg["tool_calls"] = [{"id": calls[0].get("id"), "type": "function", "function": fn}]
    usage = _usage(step.get("token_usage"))
    if usage:
        msg["usage"] = usage
    model = _model(step)
    if model:
        msg["model"] = model
    messages.append(msg)
    if not calls:
        return final
    cid = calls[0].get("id")
    result = step.get("observations")
    messages.append({"role": "tool", "tool_call_id": cid, "content": _observed(result)})
    if why and isinstance(cid, str):
        errors[cid] = why
    if names[0] == FINAL_ANSWER and not why:
        args = (calls[0].get("function") or {}).get("arguments")
        answer = args.get("answer") if isinstance(args, dict) else None
        return answer if answer is not None else step.get("action_output", result)
    return final
