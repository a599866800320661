"""Builders for oracle tests: a trace from a few tool calls, a case from a few checks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kit.case import Case, parse_case
from kit.evaluate import evaluate
from kit.result import Result
from kit.trace import Trace


def tool(name: str, input: Any = None, output: Any = None, error: Any = None) -> dict[str, Any]:
    return {"kind": "tool", "name": name, "input": input or {}, "output": output, "error": error}


def llm(tokens_in: int = 100, tokens_out: int = 20, cost_usd: float = 0.001, latency_ms: float = 100) -> dict:
    return {
        "kind": "llm",
        "name": "m-2024-01-01",
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "cost_usd": cost_usd,
        "latency_ms": latency_ms,
    }


def make_trace(*spans: dict[str, Any], output: str = "", finish: str = "finish", **extra: Any) -> Trace:
    return Trace.model_validate(
        {"case_id": "c1", "final_output": output, "finish_reason": finish, "spans": list(spans), **extra}
    )


def make_case(*checks: dict[str, Any], base_dir: Path | None = None, **fields: Any) -> Case:
    raw = {"id": "c1", "input": "hi", "checks": list(checks), **fields}
    return parse_case(raw, file="test.yaml", base_dir=base_dir, invariants={})


def run1(trace: Trace, check: dict[str, Any], base_dir: Path | None = None) -> Result:
    """The one result of a case holding one check."""
    (result,) = evaluate(trace, make_case(check, base_dir=base_dir)).results
    return result
