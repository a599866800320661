"""MCP tool calls in what agents return and export: the call's server, and its result as a value.

Exports (called from kit.importers.semconv and kit.importers): an agent's MCP call is seen up to three times,
by the agent framework's tool span (OpenInference TOOL, GenAI `execute_tool`), by the `mcp` SDK's client span
(`mcp.method.name` tools/call, kind CLIENT) and by the server's own span (`mcp.method.name` tools/call,
`gen_ai.operation.name` execute_tool, `gen_ai.tool.name`; another process's export when the server runs
apart, joined by the W3C trace context MCP carries in `_meta`). One call is one tool span: the framework's
when there is one, and the MCP spans under it are left out; else the server's (or the client's) span alone.
Spans of the protocol itself (server/discover, initialize, tools/list, notifications) are no step of the agent,
and a trace of nothing else (a session's handshake) is no run. OpenLLMetry's MCP spans (`<tool>.tool`,
`traceloop.span.kind` tool, `traceloop.entity.input` {tool_name, arguments}, `traceloop.entity.output`) read as
GenAI tool spans.

The server of a call: `mcp.server.name` on one of its spans, else the `service.name` of the process whose
server span answered it, else the client span's `server.address` (and `server.port`). An MCP result
(`{"content": [{"type": "text", "text": ...}]}`, or its text parts alone) is read as its text, JSON decoded.

What agents return: the OpenAI Agents SDK marks each item of an MCP tool with `tool_origin`
(`mcp_server_name`): `agents_sdk_servers(result)` maps the call ids to servers and `with_servers` puts them on
the trace's tool spans. pydantic-ai's messages and LangChain's name no server (a tool call has its name, a
LangChain ToolMessage from an MCP tool its structured content at most), so such an agent declares them beside
its messages: `mcp_servers`, per server the tools it loaded from it (`declared_servers`, `servers_by_call`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable
from typing import Any

from kit.importers.common import maybe_json
from kit.importers.otlp import OtelSpan
from kit.mcp.cassette import MISS

METHOD = "mcp.method.name"
SERVER_NAME = "mcp.server.name"  # not in the conventions; lets an instrumented agent or server name itself
_TEXT_PARTS = ("text", "input_text", "output_text")


def _method(span: OtelSpan) -> str | None:
    m = span.attrs.get(METHOD)
    if isinstance(m, str):
        return m
    given = span.attrs.get("traceloop.entity.input")
    if span.attrs.get("traceloop.span.kind") == "tool" and isinstance(given, str) and "tool_name" in given:
        return "tools/call"
    if span.name.endswith(".mcp") and "traceloop.entity.name" not in span.attrs:
        return span.name.removesuffix(".mcp")
    return None


def is_protocol(span: OtelSpan) -> bool:
    """An MCP span that is no tool call (a handshake, a listing, a notification)."""
    m = _method(span)
    return m is not None and m != "tools/call"


def protocol_only(spans: Iterable[OtelSpan]) -> bool:
    """A trace of MCP protocol spans alone: a session's handshake, no run of an agent."""
    spans = list(spans)
    methods = [_method(s) for s in spans]
    return bool(methods) and None not in methods and "tools/call" not in methods


def result_value(raw: Any) -> Any:
    """An MCP tool result as a value: its text parts' text, JSON decoded; anything else as it is."""
    value = maybe_json(raw)
    if isinstance(value, dict) and isinstance(value.get("structuredContent"), dict) and not value.get("isError"):
        return value["structuredContent"]
    parts = value.get("content") if isinstance(value, dict) and "content" in value else value
    if isinstance(parts, dict) and parts.get("type") in _TEXT_PARTS:
        parts = [parts]
    if isinstance(parts, list) and parts and all(isinstance(p, dict) and p.get("type") in _TEXT_PARTS for p in parts):
        return maybe_json("".join(str(p.get("text", "")) for p in parts))
    return value


class McpSpans:
    """The spans of one trace with MCP's duplicates and protocol spans left out (`spans`), and the server of
    each tool call (`server(span)`). `is_tool(span)`: whether the importer reads a span as a tool call."""

    def __init__(self, spans: list[OtelSpan], is_tool: Callable[[OtelSpan], bool]) -> None:
        by_id = {s.span_id: s for s in spans}
        self._servers: dict[str, str] = {}
        self._mcp_tools: set[str] = set()
        drop: set[str] = set()
        calls = [s for s in spans if _method(s) == "tools/call"]
        for s in spans:
            if is_protocol(s):
                drop.add(s.span_id)
        for s in calls:
            owner = self._framework_tool(s, by_id, is_tool)
            if owner is not None:
                drop.add(s.span_id)
            else:
                owner = self._top_call(s, by_id)
                if owner is not s:
                    drop.add(s.span_id)
            self._mcp_tools.add(owner.span_id)
            server = _server_of(s)
            if server and owner.span_id not in self._servers:
                self._servers[owner.span_id] = server
            elif server and _method(s) == "tools/call" and SERVER_NAME in s.attrs:
                self._servers[owner.span_id] = server  # a name the span gives itself wins over a guess
        self.spans = [_as_genai(s, by_id) for s in spans if s.span_id not in drop]

    @staticmethod
    def _framework_tool(s: OtelSpan, by_id: dict[str, OtelSpan], is_tool: Callable[[OtelSpan], bool]) -> Any:
        seen = set()
        p = by_id.get(s.parent_id or "")
        while p is not None and p.span_id not in seen:
            seen.add(p.span_id)
            if _method(p) is None and is_tool(p):
                return p
            p = by_id.get(p.parent_id or "")
        return None

    @staticmethod
    def _top_call(s: OtelSpan, by_id: dict[str, OtelSpan]) -> OtelSpan:
        """Of the MCP spans of one call (a client span and the server's under it), the server's: it names the
        tool (`gen_ai.tool.name`); the client's only when the server's is not in the export."""
        parent = by_id.get(s.parent_id or "")
        if parent is not None and _method(parent) == "tools/call":
            return s  # the server's span, under the client's
        children = [c for c in by_id.values() if c.parent_id == s.span_id and _method(c) == "tools/call"]
        return children[0] if children else s

    def server(self, span: OtelSpan) -> str | None:
        return self._servers.get(span.span_id)

    def annotate(self, out: dict[str, Any], span: OtelSpan) -> dict[str, Any]:
        """A tool span read by the importer, with its MCP server and its MCP result as a value."""
        if span.span_id in self._mcp_tools:
            out["output"] = result_value(out.get("output"))
            server = self._servers.get(span.span_id)
            if server:
                out["server"] = server
        return out


def _server_of(s: OtelSpan) -> str | None:
    if isinstance(s.attrs.get(SERVER_NAME), str):
        return str(s.attrs[SERVER_NAME])
    service = s.resource.get("service.name")
    if "mcp.protocol.version" in s.attrs and isinstance(service, str) and not service.startswith("unknown_service"):
        return service
    address = s.attrs.get("server.address")
    if isinstance(address, str):
        port = s.attrs.get("server.port")
        return f"{address}:{port}" if port else address
    return None


def _as_genai(s: OtelSpan, by_id: dict[str, OtelSpan]) -> OtelSpan:
    """An MCP call span as the GenAI conventions' tool span: OpenLLMetry's `<tool>.tool`, and a client span
    whose server span is not in the export."""
    a = s.attrs
    if _method(s) != "tools/call" or a.get("gen_ai.operation.name") == "execute_tool":
        return s
    attrs = dict(a)
    attrs["gen_ai.operation.name"] = "execute_tool"
    if a.get("traceloop.span.kind") == "tool":
        given = maybe_json(a.get("traceloop.entity.input"))
        given = given if isinstance(given, dict) else {}
        name = given.get("tool_name") or a.get("traceloop.entity.name") or s.name.removesuffix(".tool")
        attrs["gen_ai.tool.name"] = name
        attrs["gen_ai.tool.call.arguments"] = json.dumps(given.get("arguments") or {})
        if "traceloop.entity.output" in a:
            attrs["gen_ai.tool.call.result"] = a["traceloop.entity.output"]
    else:
        attrs.setdefault("gen_ai.tool.name", s.name.rpartition(" ")[2])
    return dataclasses.replace(s, attrs=attrs)


# --- what the OpenAI Agents SDK returns -------------------------------------------------------------------


HOSTED_SKIPPED = frozenset({"mcp_list_tools", "mcp_approval_request", "mcp_approval_response"})


def hosted_mcp_items(items: Iterable[Any]) -> list[Any]:
    """Responses-API items with each hosted MCP call (`mcp_call`: the model provider called the MCP server,
    the result is in the same item) as a function call and its output (a failed call's output
    `{"error": ...}`), and MCP's own listing and approval items left out. Other items are kept as they are."""
    out: list[Any] = []
    for raw in items:
        item = raw if isinstance(raw, dict) else None
        kind = item.get("type") if item is not None else getattr(raw, "type", None)
        if kind in HOSTED_SKIPPED:
            continue
        if kind != "mcp_call":
            out.append(raw)
            continue
        item = item if item is not None else raw.model_dump(mode="json", exclude_none=True)
        call_id = item.get("id")
        out.append(
            {"type": "function_call", "call_id": call_id, "name": item.get("name"), "arguments": item.get("arguments")}
        )
        error = item.get("error")
        if isinstance(error, dict):  # a protocol or HTTP error's message, or a failed tool's own content
            said = error.get("message") or result_value(error.get("content"))
            error = said if isinstance(said, str) else json.dumps(said)
        output = {"error": error} if error not in (None, "") else item.get("output")
        out.append(
            {
                "type": "function_call_output",
                "call_id": call_id,
                "output": output if isinstance(output, str) else json.dumps(output),
            }
        )
    return out


def agents_sdk_servers(result: Any) -> dict[str, str]:
    """Call id -> MCP server, for the items of an Agents SDK RunResult that came from an MCP tool (a local
    server's, by `tool_origin`; a hosted one's `mcp_call`, by its `server_label`)."""
    out: dict[str, str] = {}
    for item in getattr(result, "new_items", None) or []:
        origin = getattr(item, "tool_origin", None)
        server = getattr(origin, "mcp_server_name", None)
        raw = getattr(item, "raw_item", None)
        call_id = raw.get("call_id") if isinstance(raw, dict) else getattr(raw, "call_id", None)
        hosted = raw if isinstance(raw, dict) else {"type": getattr(raw, "type", None)}
        if hosted.get("type") == "mcp_call":
            server = raw.get("server_label") if isinstance(raw, dict) else getattr(raw, "server_label", None)
            call_id = raw.get("id") if isinstance(raw, dict) else getattr(raw, "id", None)
        if isinstance(server, str) and isinstance(call_id, str):
            out[call_id] = server
    return out


class ReplayMissed(ValueError):
    """An MCP call a replayed cassette had no recording for (`kit mcp replay` said so in the call's result)."""


def with_servers(trace: dict[str, Any], servers: dict[str, str]) -> dict[str, Any]:
    """The trace's tool spans of these call ids with their `server`, and their MCP results as values.
    ReplayMissed when a call was answered by `kit mcp replay` as not in its cassette: the run is an error,
    as a miss of the kit's own tool cassettes is."""
    for span in trace.get("spans", []):
        server = servers.get(span.get("tool_call_id")) if span.get("kind") == "tool" else None
        if server is None:
            continue
        span["server"] = server
        span["output"] = result_value(span.get("output"))
        text = span["output"] if isinstance(span["output"], str) else ""
        if MISS in text:
            said = text[text.index(MISS) + len(MISS) :]
            raise ReplayMissed(f"made an MCP call to server {server} that its replayed cassette cannot answer: {said}")
    return trace


# --- what an agent declares: pydantic-ai and LangChain results name no server -----------------------------


def declared_servers(declared: Any) -> dict[str, str]:
    """Tool name -> MCP server, from the `mcp_servers` an agent returns beside its messages: per server, the
    tools it loaded from it, as names or as its MCP client listed them (anything with a `name`: MCP tools,
    LangChain tools). ValueError saying what is wrong, a tool two servers claim included."""
    if not isinstance(declared, dict):
        raise ValueError(f"is a {type(declared).__name__}, not a mapping of server name to its tools")
    out: dict[str, str] = {}
    for server, tools in declared.items():
        if not isinstance(server, str) or not server:
            raise ValueError(f"names a server {server!r}: a server's name is a non-empty string")
        if isinstance(tools, str | bytes | dict) or not isinstance(tools, Iterable):
            raise ValueError(f"gives server {server} a {type(tools).__name__}, not a list of its tools")
        for tool in tools:
            name = tool if isinstance(tool, str) else tool.get("name") if isinstance(tool, dict) else None
            name = name if name is not None else getattr(tool, "name", None)
            if not isinstance(name, str) or not name:
                raise ValueError(f"lists a {type(tool).__name__} under server {server}, not a tool or its name")
            if out.get(name, server) != server:
                raise ValueError(f"puts tool {name} on two servers, {out[name]} and {server}")
            out[name] = server
    return out


def servers_by_call(trace: dict[str, Any], tools: dict[str, str]) -> dict[str, str]:
    """Call id -> MCP server for the trace's tool calls of the declared tools (for `with_servers`)."""
    return {
        span["tool_call_id"]: tools[span.get("name")]
        for span in trace.get("spans", [])
        if span.get("kind") == "tool" and span.get("name") in tools and span.get("tool_call_id")
    }


def replay_miss(trace: dict[str, Any]) -> str | None:
    """What the first tool call `kit mcp replay` answered as not in its cassette was (its result or error says
    so), for the run's error; None when there is none."""
    for span in trace.get("spans", []):
        if span.get("kind") != "tool":
            continue
        for value in (span.get("output"), span.get("error")):
            if isinstance(value, str) and MISS in value:
                said = value[value.index(MISS) + len(MISS) :]
                to = f" to server {span['server']}" if span.get("server") else ""
                return f"made an MCP call{to} that its replayed cassette cannot answer: {said}"
    return None
