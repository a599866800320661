"""What an agent's callable returns, as a trace dict: the contract's own shapes and the results agent
frameworks hand back as they come, so a team plugs in the agent it has without writing a converter.

Recognised (`trace_dict(result, case_id)`):
- a trace dict (it has `spans` or `final_output`, or only trace fields);
- OpenAI chat messages: a list of `{role, content, tool_calls, ...}` dicts (or the `openai` package's message
  objects), or a dict holding them under `messages` (with `model`, `usage`, ...);
- Responses-API items (`{"type": "function_call" | "function_call_output" | "message" | ...}`), e.g. the
  OpenAI Agents SDK's `RunResult.to_input_list()`;
- an OpenAI Agents SDK `RunResult` (per-call token usage from its `raw_responses`);
- LangChain messages (`AIMessage`, `ToolMessage`, ...), in a list or in a LangGraph state dict
  `{"messages": [...]}` (what `graph.invoke()` returns);
- pydantic-ai `ModelMessage` lists (`result.all_messages()`), their JSON (`all_messages_json()`), the
  decoded JSON, or the run's result itself (`agent.run_sync(...)`);
- Anthropic Messages (kit.importers.anthropic): `Message`s, the list an agent keeps (`tool_use` /
  `tool_result` blocks, the SDK's block objects as they came), dumped, a `MessageStream` or its events;
- Bedrock Converse messages (kit.importers.converse), as Strands' `agent.messages` holds them;
- Google ADK's `Event`s and Gemini `Content`s (kit.importers.gemini), each event's author its agent;
- the Claude Agent SDK's messages (kit.importers.claude_agent): what `query()` yields, or the CLI's JSON;
- the Microsoft Agent Framework's `AgentResponse` or its `Message`s, objects or `to_dict()`ed
  (kit.importers.agent_framework), each message's `author_name` its agent;
- smolagents' memory steps (kit.runner.smolagents_steps), LlamaIndex's agent workflow events
  (kit.runner.llamaindex_events) and CrewAI's `CrewOutput` (kit.runner.crewai_output);
- any of the dicts above with `mcp_servers` beside the messages: per MCP server, the tools the agent loaded
  from it (names, or the tools as its MCP client listed them), put as `server` on those tools' calls; the
  Agents SDK's RunResult names its MCP servers itself (kit.importers.mcp).

A framework's own objects are recognised by the module their class comes from, so no framework is imported
for a result that is not one of its own (and a framework that is not installed costs nothing). Everything
becomes OpenAI chat messages (each assistant message with its own usage and model) read by the one OpenAI
reader (kit.importers.openai_chat), which makes the spans, pairs each tool result with its call by id and
decides the final output; tool failures the framework marks itself (a LangChain `status="error"`, a
pydantic-ai retry prompt or failed return) become the call's error. Anything else is `UnknownResult`, whose
message says what was found: a dict of unknown shape never becomes an empty trace, and a content block a
reader does not know (a `tool_use` block in an OpenAI list) is named with its place, never dropped. A run of
one agent its framework names carries the name (kit.runner.framework_agents).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Iterable
from types import SimpleNamespace
from typing import Any

from kit.errors import KitInputError
from kit.importers.agent_framework import is_agent_framework_message
from kit.importers.anthropic import is_anthropic_message, is_stream_event
from kit.importers.claude_agent import is_claude_agent_message
from kit.importers.common import OPENAI_OTHER_PARTS, UnknownBlock, block_type, content_text, maybe_json, strict_text
from kit.importers.converse import is_converse_message
from kit.importers.gemini import is_adk_event, is_content
from kit.runner.crewai_output import is_crew_output
from kit.runner.llamaindex_events import event_kind
from kit.runner.smolagents_steps import step_kind

# Fields of a trace (kit.trace.Trace), listed here so that recognising one does not build its schema.
TRACE_FIELDS = frozenset(
    {"case_id", "run_id", "attempt", "model", "final_output", "finish_reason", "latency_ms", "spans", "end_state"}
)
RESPONSES_TYPES = frozenset(
    {"message", "function_call", "function_call_output", "reasoning", "custom_tool_call", "custom_tool_call_output"}
    | {"mcp_call", "mcp_list_tools", "mcp_approval_request", "mcp_approval_response"}
)
EXPECTED = "expected a trace dict, a Trace or an OpenAI message list"
# pydantic-ai ends a run with structured output through a tool of this name (or this prefix).
PYDANTIC_AI_OUTPUT_TOOL = "final_result"


class UnknownResult(ValueError):
    """The agent's result is none of the shapes above; the message (after "the agent ") says what it was."""


def trace_dict(result: Any, case_id: str) -> dict[str, Any]:
    """The agent's result as a trace dict (not yet validated: `kit.trace.parse_trace` does that), or
    UnknownResult naming what was found. An empty result (`[]`, `()`, `{"messages": []}`) is no run. An
    `end_state` handed as a database (a sqlite3 or DuckDB connection, a database file's path) is read into
    its tables' rows and columns (`end_state_columns`). A tool call `kit mcp replay` answered as not in its
    cassette makes the result UnknownResult naming the call."""
    result = with_end_state_read(result)
    data = _trace_dict(result, case_id)
    from kit.importers.mcp import replay_miss

    missed = replay_miss(data)  # whatever framework passed the failed call on, and whether or not it named a server
    if missed:
        raise UnknownResult(missed)
    if isinstance(result, dict) and "end_state_columns" in result:
        data["end_state_columns"] = result["end_state_columns"]
    return data


class Unreadable:
    """A result whose end-state database could not be read where the agent returned it; `trace_dict` turns
    it into UnknownResult saying why."""

    def __init__(self, why: str) -> None:
        self.why = why


def with_end_state_read(result: Any) -> Any:
    """`result`, with an `end_state` given as a database replaced by its tables (rows) and their columns, or
    Unreadable saying why it could not be read. Called in the thread the agent returned in (a sqlite3
    connection serves only the thread that made it) and again by `trace_dict` (then a no-op). Never raises."""
    if not isinstance(result, dict) or "end_state" not in result or isinstance(result["end_state"], dict):
        return result
    from kit.importers.end_state import end_state_of

    try:
        state = end_state_of(result["end_state"])
    except Exception as e:  # a database the agent closed, or anything else it could not hand over
        return Unreadable(str(e) if isinstance(e, ValueError) else f"returned an end_state that cannot be read: {e}")
    if state is None:
        return result
    return {**result, **state.fields()}


def _trace_dict(result: Any, case_id: str) -> dict[str, Any]:
    if isinstance(result, Unreadable):
        raise UnknownResult(result.why)
    if isinstance(result, list | tuple) and not result:
        raise UnknownResult(f"returned no run (an empty {type(result).__name__})")
    origin = _origin(result)
    if origin == "openai_agents":
        from kit.importers.mcp import ReplayMissed, agents_sdk_servers, with_servers
        from kit.runner.framework_agents import agents_sdk

        trace = agents_sdk(_converted(_from_run_result(result), case_id, "openai_agents"), result)
        try:
            return with_servers(trace, agents_sdk_servers(result))
        except ReplayMissed as e:  # a call `kit mcp replay` had no recording for: the run's error
            raise UnknownResult(str(e)) from None
    if origin == "pydantic_ai" and callable(getattr(result, "all_messages", None)):
        result = result.all_messages()  # a run's result (AgentRunResult): its messages
    if origin == "strands":  # its AgentResult keeps the last message only: the calls are in agent.messages
        raise UnknownResult("returned a Strands AgentResult, which holds only its last message: return agent.messages")
    if origin == "smolagents" and isinstance(getattr(result, "steps", None), list):
        result = result.steps  # an AgentMemory, or a run's RunResult (`return_full_result=True`): its steps
    if origin == "crewai" and callable(getattr(result, "model_dump", None)):
        return _from_crew(result.model_dump(mode="json"), case_id)
    if origin == "llamaindex":  # one event (the run's AgentOutput): read as a list, which says what it lacks
        return _from_messages([result], {}, case_id, where="a LlamaIndex event")
    if origin == "agent_framework" and callable(getattr(result, "to_dict", None)):
        result = result.to_dict()  # an AgentResponse (or a Message): its dict, read below
    if origin == "claude_agent":  # one message alone (its ResultMessage): read as a list, which says what it lacks
        return _from_messages([result], {}, case_id, where="a Claude Agent SDK message")
    if origin == "anthropic":
        if callable(getattr(result, "get_final_message", None)):
            result = result.get_final_message()  # a MessageStream: the message it streamed
        return _from_messages([result], {}, case_id, where="an Anthropic message")
    if isinstance(result, bytes | bytearray | str):
        decoded = _json_or_none(result)
        if decoded is None:
            raise UnknownResult(f"returned {type(result).__name__}, {EXPECTED}")
        return _trace_dict(decoded, case_id)
    if isinstance(result, dict):
        return _from_dict(result, case_id)
    if isinstance(result, list | tuple):
        return _from_messages(list(result), {}, case_id, where="a message list")
    raise UnknownResult(f"returned {type(result).__name__}, {EXPECTED}")


def _origin(obj: Any) -> str | None:
    """Which framework an object comes from, by the modules of its class and their bases (never an import)."""
    for cls in type(obj).__mro__:
        root = cls.__module__.partition(".")[0]
        if root in ("langchain_core", "langchain", "langgraph"):
            return "langchain"
        if root == "pydantic_ai":
            return "pydantic_ai"
        if root == "smolagents" and callable(getattr(obj, "dict", None)):
            return "smolagents"
        if root == "strands" and hasattr(obj, "stop_reason") and hasattr(obj, "metrics"):
            return "strands"
        if cls.__module__.startswith(("google.adk", "google.genai")) and hasattr(obj, "model_dump"):
            return "gemini"
        if root in ("llama_index", "workflows") and hasattr(obj, "model_dump"):  # StopEvent: llama-index-workflows'
            return "llamaindex"
        if root == "crewai" and hasattr(obj, "tasks_output"):
            return "crewai"
        if root == "agents" and hasattr(obj, "to_input_list") and hasattr(obj, "raw_responses"):
            return "openai_agents"
        if root == "openai" and hasattr(obj, "model_dump"):
            return "openai"
        if root == "claude_agent_sdk":
            return "claude_agent"
        if root == "agent_framework" and hasattr(obj, "to_dict"):
            return "agent_framework"
        if root == "anthropic" and (hasattr(obj, "model_dump") or hasattr(obj, "get_final_message")):
            return "anthropic"
    return None


def _json_or_none(raw: bytes | bytearray | str) -> Any:
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes | bytearray) else raw
    stripped = text.lstrip()
    if not stripped or stripped[0] not in "[{":
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def _from_dict(result: dict[str, Any], case_id: str) -> dict[str, Any]:
    if "mcp_servers" in result:
        return _with_declared_servers(result, case_id)
    messages = result.get("messages")
    if "spans" not in result and isinstance(messages, list | tuple):
        if not messages and result.get("final_output") is None:
            raise UnknownResult("returned no run (a dict whose `messages` is empty)")
        if messages:  # what the agent did is in its messages, `final_output` beside them or not
            extra = {k: v for k, v in result.items() if k != "messages"}
            return _from_messages(list(messages), extra, case_id, where="a message list")
    if "spans" in result or "final_output" in result or (result and set(result) <= TRACE_FIELDS):
        return {k: v for k, v in result.items() if k != "messages"}
    if is_crew_output(result):
        return _from_crew(result, case_id)
    if is_anthropic_message(result):  # one Message, dumped
        return _from_messages([result], {}, case_id, where="an Anthropic message")
    if isinstance(result.get("choices"), list) or isinstance(result.get("traj"), list):
        return _converted({"messages": [result]} if "choices" in result else result, case_id, "openai")
    keys = ", ".join(repr(k) for k in list(result)[:8]) or "no keys"
    raise UnknownResult(
        f"returned a dict with {keys}: neither a trace (spans, final_output) nor a conversation "
        "(messages: OpenAI, LangChain or pydantic-ai messages)"
    )


def _with_declared_servers(result: dict[str, Any], case_id: str) -> dict[str, Any]:
    """A result with `mcp_servers` beside its messages: the MCP server of each tool as the agent loaded them
    (pydantic-ai's messages and LangChain's name no server), put on the calls of those tools."""
    from kit.importers.mcp import ReplayMissed, declared_servers, servers_by_call, with_servers

    try:
        tools = declared_servers(result["mcp_servers"])
    except ValueError as e:
        raise UnknownResult(f"returned mcp_servers that {e}") from None
    trace = _from_dict({k: v for k, v in result.items() if k != "mcp_servers"}, case_id)
    try:
        return with_servers(trace, servers_by_call(trace, tools))
    except ReplayMissed as e:  # a call `kit mcp replay` had no recording for: the run's error
        raise UnknownResult(str(e)) from None


def _from_messages(items: list[Any], extra: dict[str, Any], case_id: str, *, where: str) -> dict[str, Any]:
    """A message list (or a dict's `messages`) of whichever kind its items are."""
    kinds = {_item_kind(m) for m in items}
    if "anthropic" in kinds and kinds <= {"anthropic", "openai"}:
        return _from_anthropic(items, extra, case_id, where)
    if "converse" in kinds and kinds <= {"converse", "openai"}:
        return _from_converse(items, extra, case_id, where)
    if kinds == {"gemini"}:
        return _from_gemini(items, extra, case_id, where)
    if kinds == {"llamaindex"}:
        return _from_llamaindex(items, extra, case_id, where)
    if kinds == {"claude_agent"}:
        return _from_claude_agent(items, extra, case_id, where)
    if kinds == {"agent_framework"}:
        return _from_agent_framework(items, extra, case_id, where)
    if not items or kinds == {"openai"}:
        from kit.runner.framework_agents import by_message_name

        conv = {**_openai_extra(extra), "messages": items}
        names = [m.get("name") for m in items if m.get("role") == "assistant"]  # OpenAI's `name`: who said it
        return by_message_name(_converted(conv, case_id, "openai", what=where), names)
    if kinds == {"openai", "openai_object"} or kinds == {"openai_object"}:
        dumped = [m if isinstance(m, dict) else m.model_dump(mode="json", exclude_none=True) for m in items]
        return _from_messages(dumped, extra, case_id, where=where)
    if kinds <= {"responses", "openai"}:
        return _converted({"messages": _from_responses(items)}, case_id, "openai_responses", what=where)
    if kinds == {"langchain"}:
        from kit.runner.framework_agents import by_message_name

        items = [_langchain_dict(m) or m if isinstance(m, dict) else m for m in items]
        conv, errors = _from_langchain(items)
        names = [getattr(m, "name", None) for m in items if getattr(m, "type", None) in ("ai", "AIMessageChunk")]
        trace = _converted(conv, case_id, "langchain", errors=errors, what=where)
        return by_message_name(trace, names, one_is_named=True)
    if kinds == {"smolagents"}:
        from kit.runner.smolagents_steps import UnreadStep, to_messages

        try:
            conv, errors = to_messages(items)
        except UnreadStep as e:
            raise UnknownResult(f"returned smolagents steps that cannot be read: {e}") from None
        return _converted({**_openai_extra(extra), **conv}, case_id, "smolagents", errors=errors, what=where)
    if kinds <= {"pydantic_ai", "pydantic_ai_dict"}:
        conv, errors = _from_pydantic_ai(items)
        return _converted(conv, case_id, "pydantic_ai", errors=errors, what=where)
    found = ", ".join(sorted({_describe(m) for m in items[:50]}))
    raise UnknownResult(f"returned {where} holding items of no known kind ({found}), {EXPECTED}")


def _item_kind(m: Any) -> str:
    if isinstance(m, dict):
        if m.get("kind") in ("request", "response") and isinstance(m.get("parts"), list):
            return "pydantic_ai_dict"
        if _langchain_dict(m) is not None:
            return "langchain"
        if step_kind(m) is not None:
            return "smolagents"
        if event_kind(m) is not None:
            return "llamaindex"
        if is_claude_agent_message(m):
            return "claude_agent"
        if is_agent_framework_message(m):
            return "agent_framework"
        if is_anthropic_message(m) or is_stream_event(m):
            return "anthropic"
        if is_converse_message(m):
            return "converse"
        if is_adk_event(m) or is_content(m):
            return "gemini"
        if m.get("type") in RESPONSES_TYPES:
            return "responses"
        if "role" in m:
            return "openai"
        return "unknown-dict"
    origin = _origin(m)
    if origin == "openai":
        return "responses" if getattr(m, "type", None) in RESPONSES_TYPES else "openai_object"
    return origin or "unknown"


def _describe(m: Any) -> str:
    if isinstance(m, dict):
        return "dict with " + (", ".join(repr(k) for k in list(m)[:5]) or "no keys")
    return type(m).__name__


def _read_blocks(to_openai: Callable[[list[Any]], tuple[Any, Any]], items: list[Any], where: str) -> tuple[Any, Any]:
    """A reader's `to_openai` on a framework's messages, a block it does not know refused by name and place."""
    try:
        return to_openai(items)
    except UnknownBlock as e:
        raise UnknownResult(f"returned {where} that cannot be read: {e}") from None


def _from_anthropic(items: list[Any], extra: dict[str, Any], case_id: str, where: str) -> dict[str, Any]:
    """Anthropic messages (kit.importers.anthropic), a block it does not know refused by name and place."""
    from kit.importers.anthropic import to_openai, usage_of

    messages, errors = _read_blocks(to_openai, items, where)
    conv = {**_openai_extra(extra), "messages": messages}
    if isinstance(conv.get("usage"), dict):
        conv["usage"] = usage_of(conv["usage"]) or conv["usage"]
    return _converted(conv, case_id, "anthropic", errors=errors, what=where)


def _from_converse(items: list[Any], extra: dict[str, Any], case_id: str, where: str) -> dict[str, Any]:
    """Bedrock Converse messages (Strands' `agent.messages`; kit.importers.converse)."""
    from kit.importers.converse import to_openai

    messages, errors = _read_blocks(to_openai, items, where)
    conv = {**_openai_extra(extra), "messages": messages}
    return _converted(conv, case_id, "converse", errors=errors, what=where)


def _from_gemini(items: list[Any], extra: dict[str, Any], case_id: str, where: str) -> dict[str, Any]:
    """Google ADK's Events or Gemini Contents (kit.importers.gemini): an event's author is its agent."""
    from kit.importers.gemini import to_openai
    from kit.runner.framework_agents import by_message_name

    plain = [m if isinstance(m, dict) else m.model_dump(mode="json", exclude_none=True) for m in items]
    messages, authors = _read_blocks(to_openai, plain, where)
    trace = _converted({**_openai_extra(extra), "messages": messages}, case_id, "adk", what=where)
    return by_message_name(trace, authors, one_is_named=True)


def _from_llamaindex(items: list[Any], extra: dict[str, Any], case_id: str, where: str) -> dict[str, Any]:
    """LlamaIndex agent workflow events (kit.runner.llamaindex_events): an output's agent is its agent."""
    from kit.runner.framework_agents import by_message_name
    from kit.runner.llamaindex_events import UnreadEvent, to_messages

    try:
        messages, agents, errors = to_messages(items)
    except UnreadEvent as e:
        raise UnknownResult(f"returned {e}") from None
    conv = {**_openai_extra(extra), "messages": messages}
    trace = _converted(conv, case_id, "llamaindex", errors=errors, what=where)
    return by_message_name(trace, agents, one_is_named=True)


def _from_claude_agent(items: list[Any], extra: dict[str, Any], case_id: str, where: str) -> dict[str, Any]:
    """The Claude Agent SDK's messages (kit.importers.claude_agent): its MCP calls named by tool, with their server."""
    from kit.importers.claude_agent import to_openai, with_cost
    from kit.importers.mcp import with_servers

    try:
        messages, errors, servers, total = to_openai(items)
    except UnknownBlock as e:
        raise UnknownResult(f"returned {where} that cannot be read: {e}") from None
    if not any(m.get("role") == "assistant" for m in messages):
        raise UnknownResult(f"returned {where} holding no model call: return every message query() yields")
    costs = total.pop("costs")
    trace = _converted({**_openai_extra(extra), **total, "messages": messages}, case_id, "claude_agent", errors=errors)
    return with_servers(with_cost(trace, costs), servers)


def _from_agent_framework(items: list[Any], extra: dict[str, Any], case_id: str, where: str) -> dict[str, Any]:
    """The Agent Framework's messages (kit.importers.agent_framework), an AgentResponse's usage beside them."""
    from kit.importers.agent_framework import to_openai, usage_of
    from kit.runner.framework_agents import by_message_name

    try:
        messages, errors, authors = to_openai(items)
    except UnknownBlock as e:
        raise UnknownResult(f"returned {where} that cannot be read: {e}") from None
    said = [m for m in messages if m["role"] == "assistant"]
    if said and isinstance(extra.get("finish_reason"), str):  # the last call's, as chat completions say it
        said[-1]["finish_reason"] = extra["finish_reason"]
    conv = {**_openai_extra({k: v for k, v in extra.items() if k != "finish_reason"}), "messages": messages}
    if usage_of(extra.get("usage_details")):
        conv["usage"] = usage_of(extra["usage_details"])
    trace = _converted(conv, case_id, "agent_framework", errors=errors, what=where)
    return by_message_name(trace, authors, one_is_named=True)


def _from_crew(output: dict[str, Any], case_id: str) -> dict[str, Any]:
    """A CrewAI CrewOutput (kit.runner.crewai_output): its tasks' messages, each task's agent named."""
    from kit.runner.crewai_output import UnreadOutput, to_messages
    from kit.runner.framework_agents import by_message_name

    try:
        messages, agents = to_messages(output)
    except UnreadOutput as e:
        raise UnknownResult(f"returned a CrewOutput that cannot be read: {e}") from None
    for m in messages:  # CrewAI writes a tool's dict result as str() of it
        if m.get("role") == "tool" and isinstance(m.get("content"), str):
            value = _python_or_json(m["content"])
            m["content"] = value if isinstance(value, str) else json.dumps(value, default=str)
    conv: dict[str, Any] = {"messages": messages, "final_output": output.get("raw")}
    usage = output.get("token_usage")  # the crew's total: put on its first model call, never counted twice
    if isinstance(usage, dict) and "prompt_tokens" in usage:
        conv["usage"] = {
            "prompt_tokens": usage["prompt_tokens"],
            "completion_tokens": usage.get("completion_tokens", 0),
        }
    return by_message_name(_converted(conv, case_id, "crewai", what="a CrewOutput"), agents, one_is_named=True)


def _openai_extra(extra: dict[str, Any]) -> dict[str, Any]:
    keep = ("model", "usage", "response", "finish_reason", "latency_ms", "final_output", "end_state")
    return {k: extra[k] for k in keep if k in extra}


def _converted(
    conv: dict[str, Any],
    case_id: str,
    source: str,
    *,
    errors: dict[str, str] | None = None,
    what: str = "a conversation",
) -> dict[str, Any]:
    """One conversation through the OpenAI reader, then the framework's own tool-failure marks by call id."""
    from kit.importers.openai_chat import from_openai

    try:
        traces = from_openai(conv, case_id=case_id)
    except KitInputError as e:
        raise UnknownResult(f"returned {what} that does not import: {e}") from None
    if len(traces) != 1:
        raise UnknownResult(f"returned {what} that imports as several traces")
    [trace] = traces
    for span in trace["spans"]:
        cid = span.get("tool_call_id")
        if span["kind"] == "tool" and cid in (errors or {}) and not span.get("error"):
            span["error"] = (errors or {})[cid]
    trace.pop("case_id", None)
    if source != "openai":
        trace["source_format"] = source
    return trace


def _strict(content: Any, where: str, reader: str, skip: frozenset[str] = OPENAI_OTHER_PARTS) -> str | None:
    """A message's text; a content block the reader does not know is the run's error, naming it and its place."""
    try:
        return strict_text(content, where, reader, skip=skip)
    except UnknownBlock as e:
        raise UnknownResult(f"returned {e}") from None


def _call(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    """One tool call as a chat message's `tool_calls` entry."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


# --- Responses-API items (and the OpenAI Agents SDK) ---------------------------------------------------


def _plain(item: Any) -> dict[str, Any]:
    if isinstance(item, dict):
        return item
    dumped: dict[str, Any] = item.model_dump(mode="json", exclude_none=True)
    return dumped


def _python_or_json(text: Any) -> Any:
    """A tool output as a value: JSON, or a Python literal (the Agents SDK writes a dict result as str(dict))."""
    value = maybe_json(text)
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return ast.literal_eval(value)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return value
    return value


def _from_responses(items: Iterable[Any], usage: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Responses-API items as chat messages: a run of assistant items (text, function calls) is one model
    call, with the n-th call's usage when `usage` lists one per call."""
    from kit.importers.mcp import hosted_mcp_items  # a hosted MCP call is a call and its output

    items = hosted_mcp_items(items)
    messages: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    calls = 0
    for n, raw in enumerate(items):
        item = _plain(raw)
        kind = item.get("type")
        calling = kind in ("function_call", "custom_tool_call")
        if calling or (kind in (None, "message") and item.get("role") == "assistant"):
            if current is None:
                current = {"role": "assistant", "content": None}
                if usage is not None and calls < len(usage):
                    current["usage"] = usage[calls]
                calls += 1
                messages.append(current)
            model = (item.get("provider_data") or {}).get("model")
            if model:
                current["model"] = model
            if calling:
                args = item.get("arguments", item.get("input"))
                current.setdefault("tool_calls", []).append(_call(item.get("call_id"), item.get("name"), args))
            else:
                text = _strict(item.get("content"), f"item {n}", "a Responses-API message")
                current["content"] = (current["content"] or "") + (text or "")
            continue
        if kind == "reasoning":
            continue  # the model's hidden reasoning is not a step of the agent
        current = None
        if kind in ("function_call_output", "custom_tool_call_output"):
            output = _python_or_json(item.get("output"))
            content = output if isinstance(output, str) else json.dumps(output, default=str)
            messages.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": content})
        elif isinstance(item.get("role"), str):
            text = _strict(item.get("content"), f"item {n}", "a Responses-API message")
            messages.append({"role": item["role"], "content": text})
        else:
            raise UnknownResult(f"returned a Responses-API item of unknown type {kind!r}")
    return messages


def _from_run_result(result: Any) -> dict[str, Any]:
    """An OpenAI Agents SDK RunResult: its items, each model call's usage, the agent's model."""
    usage = []
    for response in getattr(result, "raw_responses", None) or []:
        u = getattr(response, "usage", None)
        usage.append({"input_tokens": getattr(u, "input_tokens", 0), "output_tokens": getattr(u, "output_tokens", 0)})
    items = result.to_input_list()
    messages = _from_responses(items, usage)
    calls = sum(1 for m in messages if m["role"] == "assistant")
    if calls != len(usage):  # the items do not line up with the calls: keep the total, never a wrong split
        for m in messages:
            m.pop("usage", None)
    conv: dict[str, Any] = {"messages": messages}
    if calls != len(usage) and usage:
        conv["usage"] = {
            "input_tokens": sum(u["input_tokens"] or 0 for u in usage),
            "output_tokens": sum(u["output_tokens"] or 0 for u in usage),
        }
    model = getattr(getattr(result, "last_agent", None), "model", None)
    model = model if isinstance(model, str) or model is None else getattr(model, "model", None)
    if isinstance(model, str):
        conv["model"] = model
    return conv


# --- LangChain / LangGraph -------------------------------------------------------------------------------

_LANGCHAIN_TYPES = {"human", "ai", "system", "tool", "function", "AIMessageChunk", "HumanMessageChunk"}


def _langchain_dict(m: dict[str, Any]) -> SimpleNamespace | None:
    """A LangChain message as its JSON (`messages_to_dict`'s `{"type", "data"}`, or `dumpd`'s `{"lc": 1, "id":
    [..., "AIMessage"], "kwargs"}`), as an object `_from_langchain` reads; None for any other dict."""
    if isinstance(m.get("data"), dict) and m.get("type") in _LANGCHAIN_TYPES and "role" not in m:
        fields = {**m["data"], "type": m["type"]}
    elif m.get("lc") == 1 and isinstance(m.get("kwargs"), dict) and isinstance(m.get("id"), list) and m["id"]:
        kind = str(m["id"][-1]).removesuffix("Message").lower()
        fields = {**m["kwargs"], "type": m["kwargs"].get("type", kind)}
    else:
        return None
    fields.setdefault("content", "")
    return SimpleNamespace(**fields)


_LANGCHAIN_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "function": "function"}


def _from_langchain(items: list[Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """LangChain messages as chat messages (read by attribute: nothing of LangChain is imported)."""
    messages: list[dict[str, Any]] = []
    errors: dict[str, str] = {}
    for i, m in enumerate(items):
        kind = getattr(m, "type", None)
        role = _LANGCHAIN_ROLES.get(str(kind).removesuffix("MessageChunk").lower())
        if role is None:
            raise UnknownResult(f"returned a LangChain message of type {kind!r} ({type(m).__name__})")
        # Invalid calls (arguments the model got wrong) are kept: the reader marks their arguments' error.
        both = [*(getattr(m, "tool_calls", None) or []), *(getattr(m, "invalid_tool_calls", None) or [])]
        content = _langchain_text(m.content, {c.get("id") for c in both}, f"message {i}")
        if role == "assistant":
            meta = getattr(m, "response_metadata", None) or {}
            msg: dict[str, Any] = {"role": "assistant", "content": content or None}
            calls = [_call(c.get("id"), c.get("name"), c.get("args")) for c in both]
            if calls:
                msg["tool_calls"] = calls
            usage = getattr(m, "usage_metadata", None) or meta.get("token_usage")
            if usage:
                msg["usage"] = dict(usage)
            if meta.get("model_name") or meta.get("model"):
                msg["model"] = meta.get("model_name") or meta.get("model")
            if meta.get("finish_reason"):
                msg["finish_reason"] = meta["finish_reason"]
            messages.append(msg)
        elif role == "tool":
            cid = getattr(m, "tool_call_id", None)
            messages.append({"role": "tool", "tool_call_id": cid, "content": content})
            if getattr(m, "status", None) == "error" and cid:
                errors[cid] = content or "the tool failed"
        else:
            messages.append({"role": role, "content": content})
    return {"messages": messages}, errors


# Content blocks of LangChain messages that are no step (v1's standard blocks and the providers' own); a
# provider's copy of a call (Anthropic's `tool_use`) is read from `tool_calls`, so it is skipped only when
# `tool_calls` holds its id: a call the message carries only in its content is refused, never dropped.
_LANGCHAIN_SKIP = OPENAI_OTHER_PARTS | {"image", "audio", "video", "file", "reasoning", "thinking", "redacted_thinking"}
_LANGCHAIN_CALL_BLOCKS = frozenset({"tool_use", "tool_call", "function_call", "tool_call_chunk"})


def _langchain_text(content: Any, call_ids: set[Any], where: str) -> str | None:
    if isinstance(content, list):
        content = [
            b
            for b in content
            if not (
                isinstance(b, dict) and b.get("type") in _LANGCHAIN_CALL_BLOCKS and b.get("id") in call_ids - {None}
            )
        ]
    return _strict(content, where, "a LangChain message", _LANGCHAIN_SKIP)


# --- pydantic-ai ------------------------------------------------------------------------------------------


# A model response's parts that are read (text, calls) or no step (its reasoning, a file it made).
_PYDANTIC_AI_RESPONSE_PARTS = frozenset({"text", "tool-call", "thinking", "file"})


def _pydantic_ai_dicts(items: list[Any]) -> list[dict[str, Any]]:
    if all(isinstance(m, dict) for m in items):
        return items
    from pydantic_ai.messages import ModelMessagesTypeAdapter  # the objects are its own: it is imported already

    objects = [m for m in items if not isinstance(m, dict)]
    dumped = iter(ModelMessagesTypeAdapter.dump_python(objects, mode="json"))
    return [m if isinstance(m, dict) else next(dumped) for m in items]


def _from_pydantic_ai(items: list[Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """pydantic-ai requests and responses (as its JSON) as chat messages."""
    messages: list[dict[str, Any]] = []
    errors: dict[str, str] = {}
    final: str | None = None
    instructions: str | None = None
    for i, m in enumerate(_pydantic_ai_dicts(items)):
        parts = m.get("parts") or []
        if m.get("kind") == "request":
            if m.get("instructions") and m["instructions"] != instructions:
                instructions = m["instructions"]
                messages.append({"role": "system", "content": instructions})
            for p in parts:
                _request_part(p, messages, errors)
            continue
        msg: dict[str, Any] = {"role": "assistant", "content": None}
        for j, p in enumerate(parts):
            if p.get("part_kind") not in _PYDANTIC_AI_RESPONSE_PARTS:  # a server-side tool's call, or newer
                kind = p.get("part_kind", block_type(p))
                raise UnknownResult(
                    f"returned message {i}, part {j}: a {kind!r} part, which the pydantic-ai reader does not read"
                )
        texts = [p.get("content") or "" for p in parts if p.get("part_kind") == "text"]
        if texts:
            msg["content"] = "".join(texts)
        calls = [p for p in parts if p.get("part_kind") == "tool-call"]
        if calls:
            msg["tool_calls"] = [_call(p.get("tool_call_id"), p.get("tool_name"), p.get("args")) for p in calls]
            out = [p for p in calls if str(p.get("tool_name", "")).startswith(PYDANTIC_AI_OUTPUT_TOOL)]
            if out:  # structured output: the answer is the output tool's arguments
                args = out[-1].get("args")
                final = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        if m.get("usage"):
            msg["usage"] = m["usage"]
        if m.get("model_name"):
            msg["model"] = m["model_name"]
        messages.append(msg)
    conv: dict[str, Any] = {"messages": messages}
    if final is not None:
        conv["final_output"] = final
    return conv, errors


def _request_part(p: dict[str, Any], messages: list[dict[str, Any]], errors: dict[str, str]) -> None:
    kind = p.get("part_kind")
    if kind == "system-prompt":
        messages.append({"role": "system", "content": content_text(p.get("content"))})
    elif kind == "user-prompt":
        messages.append({"role": "user", "content": content_text(p.get("content"))})
    elif kind in ("tool-return", "retry-prompt") and p.get("tool_call_id") and p.get("tool_name"):
        content = p.get("content")
        text = content if isinstance(content, str) else json.dumps(content, default=str)
        messages.append({"role": "tool", "tool_call_id": p["tool_call_id"], "content": text})
        if kind == "retry-prompt" or p.get("outcome") in ("failed", "denied", "retried", "interrupted"):
            errors[p["tool_call_id"]] = text
    elif kind in ("retry-prompt", "retry-feedback"):  # a retry that answers no tool call (bad output): said to
        content = p.get("content")  # the model as a user message, which is what the model read
        messages.append({"role": "user", "content": content if isinstance(content, str) else json.dumps(content)})
