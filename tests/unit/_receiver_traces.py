"""Agent runs as an OpenInference-instrumented agent exports them, through the real OTel SDK: a root AGENT span,
a model call (LLM) that asks for the tools, a TOOL span per call and a last model call that answers. A
breaking run refunds without looking the order up (`guarded: issue_refund requires lookup_order`)."""

from __future__ import annotations

import json
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

ORDER = "ORD-000123"


def provider(exporter: Any, *, batch: bool = True, service: str = "desk") -> TracerProvider:
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    tp = TracerProvider(resource=Resource.create({"service.name": service}))
    if batch:
        tp.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=50, max_export_batch_size=256))
    else:
        tp.add_span_processor(SimpleSpanProcessor(exporter))
    return tp


def _llm(tracer: Any, n: int, calls: list[str], answer: str | None) -> None:
    with tracer.start_as_current_span("generation") as s:
        s.set_attribute("openinference.span.kind", "LLM")
        s.set_attribute("llm.model_name", "desk-model-2026-01-01")
        s.set_attribute("llm.input_messages.0.message.role", "user")
        s.set_attribute("llm.input_messages.0.message.content", f"Order {ORDER} arrived broken: please refund it.")
        s.set_attribute("llm.output_messages.0.message.role", "assistant")
        if answer is not None:
            s.set_attribute("llm.output_messages.0.message.content", answer)
        for i, name in enumerate(calls):
            p = f"llm.output_messages.0.message.tool_calls.{i}.tool_call"
            s.set_attribute(f"{p}.id", f"call_{n}_{i}")
            s.set_attribute(f"{p}.function.name", name)
            s.set_attribute(f"{p}.function.arguments", json.dumps(_args(name)))


def _args(name: str) -> dict[str, Any]:
    return {"issue_refund": {"order_id": ORDER, "amount": 19.99, "reason": "arrived broken"}}.get(
        name, {"customer_id": "C001", "order_id": ORDER}
    )


def _tool(tracer: Any, name: str) -> None:
    with tracer.start_as_current_span(name) as s:
        s.set_attribute("openinference.span.kind", "TOOL")
        s.set_attribute("tool.name", name)
        s.set_attribute("input.value", json.dumps(_args(name)))
        s.set_attribute("output.value", json.dumps({"ok": True, "order_id": ORDER}))


def run(tracer: Any, *, breaking: bool, tools: int = 2) -> str:
    """One agent run (one trace); returns its trace id as hex. `tools`: tool calls (a lookup first unless
    breaking, then the refund, then more lookups up to the count)."""
    calls = ["issue_refund"] if breaking else ["lookup_order", "issue_refund"]
    calls += ["lookup_order"] * max(0, tools - len(calls))
    with tracer.start_as_current_span("agent") as root:
        root.set_attribute("openinference.span.kind", "AGENT")
        root.set_attribute("agent.name", "desk")
        root.set_attribute("input.value", f"Order {ORDER} arrived broken: please refund it.")
        _llm(tracer, 0, calls, None)
        for name in calls:
            _tool(tracer, name)
        _llm(tracer, 1, [], "Refunded 19.99 on your order.")
        root.set_attribute("output.value", "Refunded 19.99 on your order.")
        return format(root.get_span_context().trace_id, "032x")
