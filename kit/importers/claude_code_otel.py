"""What the Claude Code CLI's own OpenTelemetry export (the Claude Agent SDK's, traces beta and log events) holds
beyond its GenAI spans, for the GenAI span reader (kit.importers.semconv).

Its spans (`claude_code.interaction` an `invoke_agent`, `claude_code.llm_request` a `chat` with its tokens and
no content, `claude_code.tool` an `execute_tool` with the tool's bare name, its MCP server in
`anthropic.mcp.server.name` and its result in a `tool.output` event) carry no tool arguments and no answer:
the arguments are in its `tool_result` log events (`tool_input`, by `tool_use_id`; with OTEL_LOG_TOOL_DETAILS)
and the answer in its `assistant_response` events (with OTEL_LOG_ASSISTANT_RESPONSES), both logged on the
interaction's span, so `kit import TRACES LOGS` (or one file of both) joins them. A tool's bare name two
servers (or a server and a built-in tool) share in the run is kept as the CLI's full `mcp__<server>__<tool>`,
as the return value's reader does (kit.importers.claude_agent): two tools are never one. The CLI writes all
this with CLAUDE_CODE_ENABLE_TELEMETRY=1, CLAUDE_CODE_ENHANCED_TELEMETRY_BETA=1, OTEL_TRACES_EXPORTER=otlp,
OTEL_LOGS_EXPORTER=otlp, OTEL_LOG_TOOL_DETAILS=1 and OTEL_LOG_ASSISTANT_RESPONSES=1 (recorded so by
tests/fixtures/frameworks/record.py).
"""

from __future__ import annotations

from typing import Any

from kit.importers.otlp import OtelSpan

SERVER_ATTR = "anthropic.mcp.server.name"
FULL_NAME_ATTR = "tool_name"  # the CLI's own name of the tool, `mcp__<server>__<tool>` for an MCP tool


def _is_claude_code(span: OtelSpan) -> bool:
    return span.resource.get("service.name") == "claude-code" or span.name.startswith("claude_code.")


def logged_tool_inputs(spans: list[OtelSpan]) -> dict[str, Any]:
    """Each call's arguments (JSON text) from the `tool_result` log events joined to the run's spans, by id."""
    out: dict[str, Any] = {}
    for s in spans:
        if not _is_claude_code(s):
            continue
        for name, ev in s.events:
            if name == "tool_result" and isinstance(ev.get("tool_use_id"), str) and "tool_input" in ev:
                out[ev["tool_use_id"]] = ev["tool_input"]
    return out


def failed_tools(spans: list[OtelSpan]) -> dict[str, str]:
    """Each failed call's error, by id: the CLI marks the call's `claude_code.tool.execution` span (its status,
    `success` false, `error`) and its `tool_result` log event (`success` "false"), never its tool span."""
    out: dict[str, str] = {}
    for s in spans:
        if not _is_claude_code(s):
            continue
        call = s.attrs.get("gen_ai.tool.call.id")
        if (
            s.name == "claude_code.tool.execution"
            and isinstance(call, str)
            and (s.error or s.attrs.get("success") is False)
        ):
            out[call] = str(s.attrs.get("error") or s.error or "the tool failed")
        for name, ev in s.events:
            if (
                name == "tool_result"
                and str(ev.get("success")).lower() == "false"
                and isinstance(ev.get("tool_use_id"), str)
            ):
                out.setdefault(ev["tool_use_id"], str(ev.get("error") or "the tool failed"))
    return out


def logged_answer(root: OtelSpan) -> str | None:
    """The run's last answer, from the `assistant_response` log events on its interaction span."""
    if not _is_claude_code(root):
        return None
    said = [ev.get("response") for name, ev in root.events if name == "assistant_response"]
    said = [t for t in said if isinstance(t, str) and t]
    return said[-1] if said else None


def name_tools(out: list[dict[str, Any]], spans: list[OtelSpan]) -> None:
    """The read tool spans (`out`) of the CLI's `claude_code.tool` spans: each MCP call with its server, or
    with the CLI's full name where its bare name is not the run's one tool of it."""
    by_call = {
        s.attrs.get("gen_ai.tool.call.id"): s for s in spans if _is_claude_code(s) and s.attrs.get(FULL_NAME_ATTR)
    }
    owners: dict[str, set[str]] = {}
    for s in by_call.values():
        owners.setdefault(str(s.attrs.get("gen_ai.tool.name")), set()).add(str(s.attrs[FULL_NAME_ATTR]))
    for span in out:
        s = by_call.get(span.get("tool_call_id")) if span.get("kind") == "tool" else None
        if s is None:
            continue
        if len(owners[str(s.attrs.get("gen_ai.tool.name"))]) > 1:
            span["name"] = s.attrs[FULL_NAME_ATTR]
            span.pop("server", None)
        elif isinstance(s.attrs.get(SERVER_ATTR), str):
            span["server"] = s.attrs[SERVER_ATTR]
