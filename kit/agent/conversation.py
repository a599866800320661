"""A conversation with the reference agent: one sandbox, guard and session kept across the customer's turns.

    conv = Conversation(case_id="c1", context={"customer_id": "C001"})
    first = conv.turn("Please refund ORD-100001, it arrived damaged.")   # asks for a yes
    second = conv.turn("Yes, go ahead.")                                  # refunds
    conv.close()

Each `turn` returns that turn's trace dict (its spans without the customer's message, its answer, the
sandbox's end state after it); the runner joins the turns into one trace. `respond` is the general form:
it adds any messages (a whole message list, for a single-turn run) and lets the agent answer once.
"""

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


class Conversation:
    def __init__(
        self,
        *,
        case_id: str,
        attempt: int = 0,
        context: dict[str, Any] | None = None,
        variant: str | None = None,
        policy: str = "deterministic",
        cassette: str | Path | Cassette | None = None,
        record: bool = False,
    ) -> None:
        """With `cassette` and not `record`, tools (and the model) replay from the cassette and no database
        is opened; with `record`, the live conversation is written to it when it closes."""
        if variant is not None and variant not in VARIANT_DISABLES:
            raise ValueError(f"unknown variant {variant!r}; known: {', '.join(VARIANTS)}")
        if policy not in POLICIES:
            raise ValueError(f"unknown policy {policy!r}; known: {', '.join(POLICIES)}")
        self.case_id, self.attempt, self.variant, self.policy = case_id, attempt, variant, policy
        self.context = dict(context or {})
        self.config = None
        if policy == "model":
            from kit.agent.model_policy import ModelConfig

            self.config = ModelConfig.from_settings()  # refuses a floating alias before anything runs
        self.model_name = self.config.model if self.config is not None else "deterministic-policy-v1"
        self.replay = cassette is not None and not record
        self.record = record
        self.tape: Cassette | None = None
        if cassette is not None:
            if isinstance(cassette, Cassette):
                self.tape = cassette
            else:
                self.tape = Cassette(cassette) if record else Cassette.load(cassette)
        self.sandbox = None if self.replay else Sandbox()
        self.guard = Guard(self.context, disabled=VARIANT_DISABLES.get(variant or "", frozenset()))
        self.session = Session(
            guard=self.guard,
            execute=self._execute,
            max_steps=int(self.context.get("max_steps", DEFAULT_MAX_STEPS)),
            honour_cap=variant != "ignore_step_cap",
        )
        self.messages: list[dict[str, str]] = []  # what the customer said and what the agent answered
        self.seed = load_fixtures(self.sandbox.path if self.sandbox else None)
        self.closed = False

    def _execute(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        if self.replay:
            assert self.tape is not None
            entry = self.tape.tool_response(name, args)
            if entry["error"]:
                raise ToolError(entry["error"])
            return entry["output"]
        assert self.sandbox is not None
        try:
            output = run_tool(self.sandbox, name, args)
        except ToolError as exc:
            if self.tape is not None:
                self.tape.add_tool(name, args, None, str(exc))
            raise
        if self.tape is not None:
            self.tape.add_tool(name, args, output, None)
        return output

    def end_state(self) -> dict[str, list[dict[str, Any]]]:
        if self.sandbox is not None:
            return self.sandbox.end_state()
        assert self.tape is not None
        return self.tape.end_state(self.seed)

    def turn(self, text: str, history: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """The customer says `text`; the agent answers. `history` is accepted for the runner's calling
        convention and not needed: the conversation keeps its own."""
        out = self.respond([{"role": "user", "content": text}])
        spans = out["spans"]
        if spans and spans[0].get("kind") == "message" and spans[0].get("role") == "user":
            out["spans"] = spans[1:]  # the runner adds the customer's message itself
        return out

    def respond(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        """Add `messages` (user or assistant) and let the agent answer once: this turn's trace dict."""
        if self.closed:
            raise RuntimeError("the conversation is closed")
        started = time.perf_counter()
        session = self.session
        session.new_turn()
        first_span = len(session.spans)
        for m in messages:
            session.message(m["role"], m["content"])
            self.messages.append({"role": m["role"], "content": m["content"]})
        finish_reason = "finish"
        extra: dict[str, Any] = {}
        try:
            if self.policy == "deterministic":
                from kit.agent.deterministic import DeterministicPolicy

                DeterministicPolicy(session, self.messages, self.context, self.variant).run()
            else:
                from kit.agent.model_policy import ModelError, ModelPolicy

                assert self.config is not None
                model_policy = ModelPolicy(session, self.messages, self.context, self.config, self.tape, self.replay)
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
        if session.final_output is not None:
            self.messages.append({"role": "assistant", "content": session.final_output})
        return {
            "case_id": self.case_id,
            "attempt": self.attempt,
            "model": self.model_name,
            "final_output": session.final_output,
            "finish_reason": finish_reason,
            "latency_ms": round((time.perf_counter() - started) * 1000, 3),
            "spans": session.spans[first_span:],
            "end_state": self.end_state(),
            # Column names per table, so an empty table can still be queried by column (an extra field).
            "end_state_columns": {t: list(cols) for t, cols in TABLES.items()},
            "agent": {
                "name": "kit-support-desk",
                "policy": self.policy,
                "variant": self.variant,
                "replay": self.replay,
            },
            **extra,
        }

    def close(self) -> None:
        """Release the sandbox; save the recording, or check that the replay used all of it."""
        if self.closed:
            return
        self.closed = True
        end_state = self.end_state() if self.record else {}
        if self.sandbox is not None:
            self.sandbox.close()
        if self.replay:
            assert self.tape is not None
            unused = self.tape.unused()
            if unused:
                # The replayed run made fewer calls than the recording: its end state would be a lie.
                raise ReplayMiss(
                    f"{self.tape.path}: replay diverged from the recording; unused: {', '.join(unused[:5])}"
                )
        elif self.record and self.tape is not None:
            self.tape.save(
                case_id=self.case_id,
                recorded_with={"policy": self.policy, "variant": self.variant, "model": self.model_name},
                end_state=end_state,
                seed=self.seed,
            )

    def __enter__(self) -> Conversation:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.close()
        else:  # an error is already on its way: release the sandbox without masking it
            self.closed = True
            if self.sandbox is not None:
                self.sandbox.close()
