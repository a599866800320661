"""`run_agent`: one run of the reference agent on a fresh sandbox, returned as a contract trace dict."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from kit.agent.cassette import Cassette, ReplayMiss
from kit.agent.fixtures import TABLES, load_fixtures
from kit.agent.guard import VARIANT_DISABLES, Guard
from kit.agent.sandbox import Sandbox
from kit.agent.session import DEFAULT_MAX_STEPS, Session, StepCapReached
from kit.agent.tools import ToolError, run_tool

VARIANTS = tuple(VARIANT_DISABLES)
POLICIES = ("deterministic", "model")


def _messages(case_input: Any) -> list[dict[str, str]]:
    if isinstance(case_input, str):
        return [{"role": "user", "content": case_input}]
    if isinstance(case_input, list) and all(
        isinstance(m, dict) and isinstance(m.get("content"), str) and m.get("role") in ("user", "assistant")
        for m in case_input
    ):
        return [{"role": m["role"], "content": m["content"]} for m in case_input]
    raise ValueError("case input must be a string or a list of {role: user|assistant, content} messages")


def run_agent(
    case_input: Any,
    *,
    case_id: str,
    attempt: int = 0,
    context: dict[str, Any] | None = None,
    variant: str | None = None,
    policy: str = "deterministic",
    cassette: str | Path | Cassette | None = None,
    record: bool = False,
) -> dict[str, Any]:
    """Run the support-desk agent once. With `cassette` and not `record`, tools (and the model) replay
    from the cassette and no database is opened; with `record`, the live run is written to it.

    The fault variants change the deterministic policy's decisions; with the model policy a variant only
    switches off the guard rules (and, for ignore_step_cap, the step cap) that its fault needs."""
    started = time.perf_counter()
    if variant is not None and variant not in VARIANT_DISABLES:
        raise ValueError(f"unknown variant {variant!r}; known: {', '.join(VARIANTS)}")
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; known: {', '.join(POLICIES)}")
    context = dict(context or {})
    messages = _messages(case_input)
    config = None
    if policy == "model":
        from kit.agent.model_policy import ModelConfig

        config = ModelConfig.from_env()  # refuses a floating alias before anything runs

    replay = cassette is not None and not record
    tape: Cassette | None = None
    if cassette is not None:
        tape = (
            cassette if isinstance(cassette, Cassette) else (Cassette(cassette) if record else Cassette.load(cassette))
        )
    sandbox = None if replay else Sandbox()

    def execute(name: str, args: dict[str, Any]) -> dict[str, Any]:
        if replay:
            assert tape is not None
            entry = tape.tool_response(name, args)
            if entry["error"]:
                raise ToolError(entry["error"])
            return entry["output"]
        assert sandbox is not None
        try:
            output = run_tool(sandbox, name, args)
        except ToolError as exc:
            if tape is not None:
                tape.add_tool(name, args, None, str(exc))
            raise
        if tape is not None:
            tape.add_tool(name, args, output, None)
        return output

    guard = Guard(context, disabled=VARIANT_DISABLES.get(variant or "", frozenset()))
    max_steps = int(context.get("max_steps", DEFAULT_MAX_STEPS))
    session = Session(guard=guard, execute=execute, max_steps=max_steps, honour_cap=variant != "ignore_step_cap")
    for m in messages:
        session.message(m["role"], m["content"])

    finish_reason = "finish"
    extra: dict[str, Any] = {}
    try:
        if policy == "deterministic":
            from kit.agent.deterministic import NAME, DeterministicPolicy

            model_name = NAME
            DeterministicPolicy(session, messages, context, variant).run()
        else:
            from kit.agent.model_policy import ModelError, ModelPolicy

            assert config is not None
            model_name = config.model
            model_policy = ModelPolicy(session, messages, context, config, tape, replay)
            try:
                model_policy.run()
                extra["ended_by"] = model_policy.ended_by
            except ModelError as exc:
                finish_reason, extra["error"] = "error", str(exc)
        if finish_reason == "finish" and not session.finished:
            finish_reason = "error"
            extra["error"] = "the agent stopped without finishing"
    except StepCapReached as exc:
        finish_reason = "step_cap"
        if exc.backstop:
            extra["backstop"] = True
    finally:
        seed = load_fixtures(sandbox.path if sandbox else None)
        if sandbox is not None:
            end_state = sandbox.end_state()
            sandbox.close()
        else:
            assert tape is not None
            end_state = tape.end_state(seed)

    if replay:
        assert tape is not None
        unused = tape.unused()
        if unused:
            # The replayed run made fewer calls than the recording: its end state would be a lie.
            raise ReplayMiss(f"{tape.path}: replay diverged from the recording; unused: {', '.join(unused[:5])}")
    elif record and tape is not None:
        tape.save(
            case_id=case_id,
            recorded_with={"policy": policy, "variant": variant, "model": model_name},
            end_state=end_state,
            seed=seed,
        )
    return {
        "case_id": case_id,
        "attempt": attempt,
        "model": model_name,
        "final_output": session.final_output,
        "finish_reason": finish_reason,
        "latency_ms": round((time.perf_counter() - started) * 1000, 3),
        "spans": session.spans,
        "end_state": end_state,
        # Column names per table, so an empty table can still be queried by column (an extra field).
        "end_state_columns": {t: list(cols) for t, cols in TABLES.items()},
        "agent": {"name": "kit-support-desk", "policy": policy, "variant": variant, "replay": replay},
        **extra,
    }
