"""What OpenTelemetry spans mean: the GenAI semantic conventions and OpenInference, mapped to the trace.

GenAI (`gen_ai.*`): `gen_ai.operation.name` is `chat` / `text_completion` / `generate_content` for a model
call, `execute_tool` for a tool, `invoke_agent` for the agent; tokens in `gen_ai.usage.input_tokens` /
`output_tokens`; messages as JSON in `gen_ai.input.messages` / `gen_ai.output.messages` (parts of type
`text`, `tool_call`, `tool_call_response`); tool calls in `gen_ai.tool.name`, `gen_ai.tool.call.id`,
`gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`.
OpenInference: `openinference.span.kind` LLM / TOOL / AGENT / CHAIN; `llm.model_name`,
`llm.token_count.prompt` / `completion`, `llm.cost.total`; flattened `llm.input_messages.N.message.*` and
`llm.output_messages.N.message.tool_calls.M.tool_call.*`; tools in `tool.name`, `input.value`,
`output.value`.
Tool arguments and results that a span leaves out (content capture is opt-in) are filled from the model
calls around it by tool-call id; when no tool span exists at all, the model's tool calls become the spans.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from kit.importers.common import content_text, maybe_json, parse_arguments, result_error
from kit.importers.otlp import OtelSpan

GENAI, OPENINFERENCE = "genai", "openinference"
LLM_OPS = ("chat", "text_completion", "generate_content")
AGENT_OPS = ("invoke_agent", "create_agent", "invoke_workflow")
CASE_ID_ATTR = "kit.case_id"  # lets an instrumented agent name the golden case it ran


@dataclass
class Msg:
    role: str
    text: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # {id, name, arguments}
    tool_results: list[dict[str, Any]] = field(default_factory=list)  # {id, response}


def kind(span: OtelSpan, convention: str | None = None) -> tuple[str | None, str | None]:
    """(llm | tool | agent | None, the convention that said so)."""
    if convention in (None, GENAI):
        op = span.attrs.get("gen_ai.operation.name")
        if op in LLM_OPS:
            return "llm", GENAI
        if op == "execute_tool":
            return "tool", GENAI
        if op in AGENT_OPS:
            return "agent", GENAI
    if convention in (None, OPENINFERENCE):
        oi = str(span.attrs.get("openinference.span.kind") or "").upper()
        if oi == "LLM":
            return "llm", OPENINFERENCE
        if oi == "TOOL":
            return "tool", OPENINFERENCE
        if oi in ("AGENT", "CHAIN"):
            return "agent", OPENINFERENCE
    return None, None


def _json(v: Any) -> Any:
    return json.loads(v) if isinstance(v, str) and v.strip()[:1] in ("[", "{") else v


# --- messages -------------------------------------------------------------------------------------------


def genai_messages(raw: Any) -> list[Msg]:
    """`gen_ai.input.messages` / `gen_ai.output.messages` (JSON text or already a list) as messages."""
    try:
        items = _json(raw)
    except json.JSONDecodeError:
        return [Msg("assistant", text=str(raw))]
    out = []
    for m in items if isinstance(items, list) else []:
        if not isinstance(m, dict):
            continue
        msg = Msg(str(m.get("role") or "assistant"))
        texts = []
        for p in m.get("parts") or []:
            t = p.get("type") if isinstance(p, dict) else None
            if t == "text":
                texts.append(str(p.get("content", "")))
            elif t == "tool_call":
                msg.tool_calls.append({"id": p.get("id"), "name": p.get("name"), "arguments": p.get("arguments")})
            elif t == "tool_call_response":
                msg.tool_results.append({"id": p.get("id"), "response": p.get("response", p.get("result"))})
        if "content" in m and not m.get("parts"):  # the older {role, content} shape
            texts.append(content_text(m["content"]) or "")
        msg.text = "".join(texts) if texts else None
        out.append(msg)
    return out


def _tree(attrs: dict[str, Any], prefix: str) -> dict[str, Any]:
    """Flattened attributes under `prefix` as a nested dict (`a.0.b` -> {"0": {"b": ...}})."""
    root: dict[str, Any] = {}
    for key, v in attrs.items():
        if not key.startswith(prefix):
            continue
        node = root
        parts = key[len(prefix) :].split(".")
        for p in parts[:-1]:
            nxt = node.setdefault(p, {})
            if not isinstance(nxt, dict):
                nxt = node[p] = {"": nxt}
            node = nxt
        node[parts[-1]] = v
    return root


def _indexed(node: Any) -> list[Any]:
    if not isinstance(node, dict):
        return []
    return [node[k] for k in sorted((k for k in node if k.isdigit()), key=int)]


def openinference_messages(attrs: dict[str, Any], which: str) -> list[Msg]:
    """`llm.input_messages.*` or `llm.output_messages.*` as messages."""
    out = []
    for item in _indexed(_tree(attrs, f"llm.{which}_messages.")):
        m = item.get("message", {}) if isinstance(item, dict) else {}
        msg = Msg(str(m.get("role") or "assistant"))
        text = m.get("content")
        if text is None and "contents" in m:
            parts = [c.get("message_content", {}) for c in _indexed(m["contents"])]
            text = "".join(str(p.get("text", "")) for p in parts if p.get("type", "text") == "text")
        msg.text = text
        for tc in _indexed(m.get("tool_calls")):
            call = tc.get("tool_call", {})
            fn = call.get("function", {})
            msg.tool_calls.append({"id": call.get("id"), "name": fn.get("name"), "arguments": fn.get("arguments")})
        if msg.role == "tool":
            msg.tool_results.append({"id": m.get("tool_call_id"), "response": text})
        out.append(msg)
    return out


# --- one trace -----------------------------------------------------------------------------------------


@dataclass
class _Llm:
    span: OtelSpan
    convention: str
    inputs: list[Msg]
    outputs: list[Msg]


def _llm(span: OtelSpan, conv: str) -> _Llm:
    a = span.attrs
    if conv == GENAI:
        inputs = genai_messages(a.get("gen_ai.input.messages", "[]"))
        outputs = genai_messages(a.get("gen_ai.output.messages", "[]"))
        for name, ev in span.events:  # GenAI <= 1.36 logged content as span events
            if name in ("gen_ai.user.message", "gen_ai.system.message"):
                inputs.append(Msg(name.split(".")[1], text=content_text(maybe_json(ev.get("content")))))
            elif name == "gen_ai.choice":
                m = maybe_json(ev.get("message")) or {}
                msg = Msg("assistant", text=content_text(m.get("content")) if isinstance(m, dict) else None)
                for tc in (m.get("tool_calls") or []) if isinstance(m, dict) else []:
                    fn = tc.get("function", {})
                    msg.tool_calls.append(
                        {"id": tc.get("id"), "name": fn.get("name"), "arguments": fn.get("arguments")}
                    )
                outputs.append(msg)
        return _Llm(span, conv, inputs, outputs)
    return _Llm(span, conv, openinference_messages(a, "input"), openinference_messages(a, "output"))


def _llm_span(x: _Llm) -> dict[str, Any]:
    a = x.span.attrs
    if x.convention == GENAI:
        model = a.get("gen_ai.response.model") or a.get("gen_ai.request.model")
        tin = a.get("gen_ai.usage.input_tokens", a.get("gen_ai.usage.prompt_tokens"))
        tout = a.get("gen_ai.usage.output_tokens", a.get("gen_ai.usage.completion_tokens"))
        cost = a.get("gen_ai.usage.cost")
    else:
        model = a.get("llm.model_name")
        tin, tout = a.get("llm.token_count.prompt"), a.get("llm.token_count.completion")
        cost = a.get("llm.cost.total")
    span: dict[str, Any] = {
        "kind": "llm",
        "name": model or x.span.name,
        "tokens_in": int(tin or 0),
        "tokens_out": int(tout or 0),
        "latency_ms": x.span.latency_ms,
    }
    if cost is not None:
        span["cost_usd"] = float(cost)
    if x.span.error:
        span["error"] = x.span.error
    return span


def _tool_span(span: OtelSpan, conv: str, calls: dict[str, dict], results: dict[str, Any]) -> dict[str, Any]:
    a = span.attrs
    if conv == GENAI:
        name = a.get("gen_ai.tool.name") or span.name.removeprefix("execute_tool").strip()
        call_id = a.get("gen_ai.tool.call.id")
        raw_args, raw_result = a.get("gen_ai.tool.call.arguments"), a.get("gen_ai.tool.call.result")
    else:
        name = a.get("tool.name") or span.name
        call_id = a.get("tool_call.id")
        raw_args, raw_result = a.get("input.value"), a.get("output.value")
    if raw_args is None and call_id in calls:
        raw_args = calls[call_id]["arguments"]
    if raw_result is None and call_id in results:
        raw_result = results[call_id]
    args, arg_error = parse_arguments(raw_args)
    output = maybe_json(raw_result)
    error = span.error or a.get("error.type") or arg_error or result_error(output)
    out = {"kind": "tool", "name": name, "input": args, "output": output, "error": error, "latency_ms": span.latency_ms}
    if call_id:
        out["tool_call_id"] = call_id
    return out


def build_trace(spans: list[OtelSpan], *, case_id: str, convention: str | None = None) -> dict[str, Any]:
    """One OTel trace (its spans sorted by start time) -> one trace dict."""
    ids = {s.span_id for s in spans}
    roots = [s for s in spans if not s.parent_id or s.parent_id not in ids]
    kinds = [(s, *kind(s, convention)) for s in spans]
    llms = [_llm(s, c) for s, k, c in kinds if k == "llm"]
    by_span = {x.span.span_id: x for x in llms}
    calls = {tc["id"]: tc for x in llms for m in x.outputs for tc in m.tool_calls if tc.get("id")}
    results = {r["id"]: r["response"] for x in llms for m in x.inputs for r in m.tool_results if r.get("id")}
    has_tool_spans = any(k == "tool" for _, k, _ in kinds)
    conventions = sorted({c for _, k, c in kinds if c})

    out: list[dict[str, Any]] = []
    seen_inputs: list[str] = []  # user/system messages already emitted, in order (every call repeats them)
    final_from_llm: str | None = None
    last_llm: _Llm | None = None
    for s, k, conv in kinds:
        if k == "llm":
            x = by_span[s.span_id]
            _emit_new_inputs(x.inputs, seen_inputs, out)
            out.append(_llm_span(x))
            for m in x.outputs:
                if m.text:
                    out.append({"kind": "message", "role": "assistant", "content": m.text})
                if not has_tool_spans:
                    for tc in m.tool_calls:
                        out.append(_synth_tool(tc, results))
            texts = [m.text for m in x.outputs if m.text]
            pending = any(m.tool_calls for m in x.outputs)
            final_from_llm = texts[-1] if texts and not pending else None
            last_llm = x
        elif k == "tool":
            out.append(_tool_span(s, conv or GENAI, calls, results))

    root = roots[0] if roots else None
    agent_output = _agent_output(root, convention) if root is not None else None
    final = agent_output if agent_output is not None else final_from_llm
    finish = _finish(root, last_llm, final)
    starts = [s.start_ns for s in spans if s.start_ns]
    ends = [s.end_ns for s in spans if s.end_ns]
    cid = next((str(s.attrs[CASE_ID_ATTR]) for s in spans if CASE_ID_ATTR in s.attrs), None)
    cid = cid or (str(spans[0].resource[CASE_ID_ATTR]) if spans and CASE_ID_ATTR in spans[0].resource else case_id)
    trace: dict[str, Any] = {
        "case_id": cid,
        "model": _llm_span(last_llm)["name"] if last_llm else None,
        "final_output": final,
        "finish_reason": finish,
        "latency_ms": round((max(ends) - min(starts)) / 1e6, 3) if starts and ends else None,
        "spans": out,
        "source_format": "otel-" + "+".join(conventions) if conventions else "otel",
        "otel_trace_id": spans[0].trace_id if spans else None,
    }
    return trace


def _emit_new_inputs(inputs: list[Msg], seen: list[str], out: list[dict[str, Any]]) -> None:
    n = 0
    for m in inputs:
        if m.role not in ("user", "system", "developer") or m.text is None:
            continue
        if n >= len(seen):
            seen.append(m.text)
            out.append({"kind": "message", "role": m.role, "content": m.text})
        n += 1


def _synth_tool(tc: dict[str, Any], results: dict[str, Any]) -> dict[str, Any]:
    args, arg_error = parse_arguments(tc.get("arguments"))
    found = tc.get("id") in results
    output = maybe_json(results.get(tc.get("id")))
    error = arg_error or (None if found else "no tool result in the trace") or result_error(output)
    return {
        "kind": "tool",
        "name": tc.get("name"),
        "input": args,
        "output": output,
        "error": error,
        "tool_call_id": tc.get("id"),
    }


def _agent_output(root: OtelSpan, convention: str | None) -> str | None:
    k, conv = kind(root, convention)
    if k != "agent":
        return None
    if conv == GENAI:
        texts = [m.text for m in genai_messages(root.attrs.get("gen_ai.output.messages", "[]")) if m.text]
        return texts[-1] if texts else None
    v = root.attrs.get("output.value")
    return v if isinstance(v, str) else (None if v is None else json.dumps(v, default=str))


def _finish(root: OtelSpan | None, last: _Llm | None, final: str | None) -> str | None:
    if (root is not None and root.error) or (last is not None and last.span.error):
        return "error"
    if last is not None:
        reasons = last.span.attrs.get("gen_ai.response.finish_reasons") or []
        if "length" in (reasons if isinstance(reasons, list) else [reasons]):
            return "step_cap"
    return "finish" if final is not None else None
