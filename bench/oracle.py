"""Oracle speed: median time per check on a 50-span trace, for every check type, side by side with
DeepEval's own deterministic tool check (ToolCorrectnessMetric, given a model that is never called).

    .venv/bin/python bench/oracle.py

Targets: median < 20 µs per check for all but end_state and schema; >= 10x faster than
DeepEval's check; `import kit` < 150 ms.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
ROOT = Path(__file__).resolve().parent.parent
# bench/deepeval.py would shadow the deepeval package: import from the project root, not from bench/.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))

from kit.case import parse_case  # noqa: E402
from kit.evaluate import evaluate, run_check  # noqa: E402
from kit.trace import Trace  # noqa: E402

TOOLS = ["lookup_customer", "lookup_order", "search_kb", "issue_refund", "send_email"]
SCHEMAS = {
    t: {
        "type": "object",
        "properties": {"order_id": {"type": "string"}, "n": {"type": "integer"}},
        "required": ["order_id"],
    }
    for t in TOOLS
}


def fifty_span_trace() -> dict:
    spans = [{"kind": "message", "role": "user", "content": "Please refund ORD-123456"}]
    for i in range(24):
        spans.append(
            {
                "kind": "llm",
                "name": "gpt-4o-2024-08-06",
                "tokens_in": 800 + i,
                "tokens_out": 60,
                "cost_usd": 0.003,
                "latency_ms": 900,
            }
        )
        tool = TOOLS[i % len(TOOLS)]
        spans.append(
            {
                "kind": "tool",
                "name": tool,
                "input": {"order_id": f"ORD-{100000 + i}", "n": i},
                "output": {"ok": True, "total": 42.5},
                "latency_ms": 12,
            }
        )
    spans.append({"kind": "message", "role": "assistant", "content": "Refund of $42.50 issued for ORD-123456."})
    return {
        "case_id": "bench",
        "final_output": '{"status": "refunded", "amount": 42.5, "order": "ORD-123456"}',
        "finish_reason": "finish",
        "spans": spans,
        "end_state": {
            "refunds": [{"order_id": "ORD-123456", "amount": 42.5}],
            "orders": [{"order_id": f"ORD-{100000 + i}", "total": 10.0 + i} for i in range(20)],
        },
    }


CHECKS = [
    {"type": "exact", "expected": '{"status": "refunded"}'},
    {"type": "number", "expected": 42.5},
    {"type": "contains", "text": ["refunded", "ord-123456"]},
    {"type": "regex", "pattern": r"ORD-\d{6}"},
    {"type": "no_pii"},
    {"type": "json", "keys": ["status", "amount"]},
    {"type": "schema", "schema": {"type": "object", "required": ["status"]}},
    {"type": "tool_schemas", "schemas": SCHEMAS},
    {"type": "called", "tool": "issue_refund"},
    {"type": "not_called", "tool": ["drop_table", "handoff_to_human"]},
    {"type": "called_at_most", "tool": "issue_refund", "n": 10},
    {"type": "arg", "tool": "issue_refund", "key": "order_id", "expected": "ORD-100003"},
    {"type": "args", "tool": "issue_refund", "expected": {"order_id": "ORD-100003", "n": 3}},
    {"type": "order", "before": "lookup_order", "after": "issue_refund"},
    {"type": "guarded", "tool": "issue_refund", "requires": "lookup_order"},
    {"type": "trajectory", "tools": TOOLS, "mode": "in_order"},
    {"type": "no_repeat"},
    {"type": "no_tool_errors"},
    {"type": "finished"},
    {"type": "budget", "steps": 30, "tokens": 100000, "cost_usd": 1.0, "latency_ms": 60000},
    {"type": "end_state", "query": "SELECT order_id, amount FROM refunds", "expected": [["ORD-123456", 42.5]]},
]


def median_us(fn, n: int) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter_ns()
        fn()
        times.append(time.perf_counter_ns() - t)
    return statistics.median(times) / 1000


def import_kit_ms(module: str = "kit") -> float:
    code = f"import time; t=time.perf_counter(); import {module}; print((time.perf_counter()-t)*1000)"
    runs = [
        float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout)
        for _ in range(5)
    ]
    return statistics.median(runs)


def deepeval_tool_correctness_us(raw: dict, n: int) -> float:
    from deepeval.metrics import ToolCorrectnessMetric
    from deepeval.models import DeepEvalBaseLLM
    from deepeval.test_case import LLMTestCase, ToolCall

    class NeverCalled(DeepEvalBaseLLM):
        """A judge that fails loudly if used: the deterministic path must not need it."""

        def __init__(self):
            super().__init__(model="never-called")

        def load_model(self):
            return None

        def generate(self, *a, **k):
            raise AssertionError("ToolCorrectnessMetric called the model")

        async def a_generate(self, *a, **k):
            raise AssertionError("ToolCorrectnessMetric called the model")

        def get_model_name(self):
            return "never-called"

    calls = [
        ToolCall(name=s["name"], input_parameters=s["input"], output=s["output"])
        for s in raw["spans"]
        if s["kind"] == "tool"
    ]
    tc = LLMTestCase(
        input="Please refund ORD-123456", actual_output=raw["final_output"], tools_called=calls, expected_tools=calls
    )
    metric = ToolCorrectnessMetric(model=NeverCalled(), async_mode=False, include_reason=True)

    def once():
        metric.measure(tc, _show_indicator=False)
        assert metric.success

    return median_us(once, n)


def main() -> None:
    raw = fifty_span_trace()
    case = parse_case({"id": "bench", "input": "x", "checks": CHECKS}, file="bench", base_dir=ROOT, invariants={})
    trace = Trace.model_validate(raw)
    evaluate(trace, case)  # derived data (tool list, canonical args, end-state database) built once per trace
    n = 2000
    print(f"{'check':<16}{'median µs':>12}   (50-span trace, 24 tool calls, {n} runs each, warm trace)")
    fast = []
    for spec in case.checks:
        us = median_us(lambda spec=spec: run_check(spec, trace), n if spec.type != "end_state" else 200)
        if spec.type not in ("end_state", "schema"):
            fast.append(us)
        print(f"{spec.type:<16}{us:>12.2f}")
    prep = median_us(lambda: evaluate(Trace.model_validate(raw), case), 200)
    parse = median_us(lambda: Trace.model_validate(raw), 500)
    print(f"\nslowest check but end_state/schema: {max(fast):.2f} µs (target < 20)")
    print(
        f"whole case, all {len(case.checks)} checks on a fresh trace incl. parsing: {prep:.0f} µs "
        f"(parsing alone {parse:.0f} µs)"
    )
    trajectory = next(s for s in case.checks if s.type == "trajectory")
    args_spec = next(s for s in case.checks if s.type == "args")
    kit_tool_us = median_us(lambda: (run_check(trajectory, trace), run_check(args_spec, trace)), n)
    de_us = deepeval_tool_correctness_us(raw, 500)
    print(f"\nkit trajectory+args          {kit_tool_us:>10.2f} µs")
    print(f"DeepEval ToolCorrectnessMetric {de_us:>8.2f} µs   ({de_us / kit_tool_us:.0f}x slower; target >= 10x)")
    print(f"\nimport kit: {import_kit_ms():.1f} ms (median of 5 fresh interpreters; target < 150)")
    print(f"import kit.evaluate (models, every check registered): {import_kit_ms('kit.evaluate'):.1f} ms")


if __name__ == "__main__":
    main()
