"""One run's bookkeeping: the spans, the step cap, and every tool call through the guard to the tools."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from kit.agent.guard import Guard, PolicyViolation
from kit.agent.tools import ToolError, validate_args

DEFAULT_MAX_STEPS = 10
# Even an agent that ignores its step cap is stopped here: the harness's own kill switch.
BACKSTOP_STEPS = 40


class StepCapReached(Exception):
    def __init__(self, steps: int, backstop: bool = False) -> None:
        super().__init__(f"stopped after {steps} steps" + (" (backstop)" if backstop else ""))
        self.steps = steps
        self.backstop = backstop


Executor = Callable[[str, dict[str, Any]], dict[str, Any]]


class Session:
    def __init__(self, *, guard: Guard, execute: Executor, max_steps: int, honour_cap: bool = True) -> None:
        self.guard = guard
        self._execute = execute
        self.max_steps = max_steps
        self.honour_cap = honour_cap
        self.spans: list[dict[str, Any]] = []
        self.steps = 0
        self.final_output: str | None = None
        self.finished = False
        self._context_chars = 0  # what a model would have read so far: the deterministic token estimate

    def new_turn(self) -> None:
        """The next turn of a conversation: its own step cap and its own final answer; what the agent
        learnt (the guard) and what it read (the context size) carry over."""
        self.steps = 0
        self.final_output = None
        self.finished = False

    def message(self, role: str, content: str) -> None:
        self.spans.append({"kind": "message", "role": role, "content": content})
        self._context_chars += len(content)
        if role == "user":
            self.guard.user_said(content)

    def steps_left(self) -> int:
        return self.max_steps - self.steps

    def check_cap(self) -> None:
        """Called before each step: the cap stops the run (unless ignored); the backstop always does."""
        if self.steps >= BACKSTOP_STEPS:
            raise StepCapReached(self.steps, backstop=True)
        if self.honour_cap and self.steps >= self.max_steps:
            raise StepCapReached(self.steps)

    def llm(self, name: str, tokens_in: int, tokens_out: int, cost_usd: float, latency_ms: float, **extra: Any) -> None:
        self.steps += 1
        span = {
            "kind": "llm",
            "name": name,
            "tokens_in": tokens_in,
            "tokens_out": tokens_out,
            "cost_usd": cost_usd,
            "latency_ms": round(latency_ms, 3),
        }
        self.spans.append({**span, **extra})

    def decide(self, name: str, action: dict[str, Any], started: float) -> None:
        """An llm span for a rule-based decision: tokens estimated at ~4 characters each, no cost."""
        self.check_cap()
        out = len(json.dumps(action))
        self.llm(
            name,
            tokens_in=max(1, self._context_chars // 4),
            tokens_out=max(1, out // 4),
            cost_usd=0.0,
            latency_ms=(time.perf_counter() - started) * 1000,
            estimated=True,
        )
        self._context_chars += out

    def call(self, name: str, args: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
        """Run one tool call through the guard; (output, None) or (None, error). `finish` ends the run."""
        started = time.perf_counter()
        output: dict[str, Any] | None = None
        error: str | None = None
        try:
            validate_args(name, args)  # a malformed call is reported as such, before any policy
            self.guard.before(name, args)
            output = self._execute(name, args)
            self.guard.after(name, args, output)
        except (ToolError, PolicyViolation) as exc:
            error = str(exc)
        self.spans.append(
            {
                "kind": "tool",
                "name": name,
                "input": args,
                "output": output,
                "error": error,
                "latency_ms": round((time.perf_counter() - started) * 1000, 3),
            }
        )
        self._context_chars += len(json.dumps(output, default=str)) if output else len(error or "")
        if name == "finish" and error is None:
            self.end(str(args.get("answer", "")))
        return output, error

    def end(self, answer: str) -> None:
        """The turn's final answer (after the guard's PII filter) becomes the trace's output."""
        self.final_output = self.guard.filter_answer(answer)
        self.finished = True
        self.message("assistant", self.final_output)
