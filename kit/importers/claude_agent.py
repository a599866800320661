"""Claude Agent SDK messages -> Anthropic messages, read by the Anthropic reader (kit.importers.anthropic).

Read as `query()` / `ClaudeSDKClient.receive_response()` yield them (the SDK's dataclasses, recognised by class
name: nothing of the SDK is imported), `dataclasses.asdict()`ed (the class told by its fields; a server tool's
call, then a tool call's twin, refused) and as the Claude Code CLI writes them (`--output-format stream-json`,
what the TypeScript SDK yields): `{"type": "assistant" | "user", "message": {...}}`, `{"type": "system",
"subtype"}`, `{"type": "result", ...}`.
- The CLI yields each content block of one model call as an AssistantMessage of its own (one message id):
  they are one call. A UserMessage's `tool_result` blocks are the calls' results (`is_error` their error).
- Tokens: an AssistantMessage carries the usage of its stream's start (its output tokens not yet counted), so
  each turn's ResultMessage total is read (put on the turn's first model call, never counted twice), with the
  turn's cost (its `total_cost_usd` less the session's before it); a turn without its ResultMessage keeps
  each message's usage.
- A tool of an MCP server is named `mcp__<server>__<tool>`: read as `<tool>` with its `server` (as the Agents
  SDK's MCP calls are), so `called: lookup_order` judges it. A bare name two servers (or a server and a
  built-in tool) share in the run keeps its full name on each, so two different tools are never one.
- The init SystemMessage, hook and status messages, rate-limit events and partial stream events (the whole
  message follows them) are no steps. A subagent's messages (`parent_tool_use_id`), a task message, a
  conversation reset, a server tool's block or any type it does not know is refused by name and place.
"""

from __future__ import annotations

from typing import Any

from kit.importers.anthropic import to_openai as anthropic_to_openai
from kit.importers.anthropic import usage_of
from kit.importers.common import UnknownBlock, block_type

READER = "the Claude Agent SDK reader"
# The SDK's message classes, and the CLI's `type` each is written as.
MESSAGE_TYPES = {
    "AssistantMessage": "assistant",
    "UserMessage": "user",
    "SystemMessage": "system",
    "ResultMessage": "result",
    "StreamEvent": "stream_event",
    "RateLimitEvent": "rate_limit_event",
}
BLOCK_TYPES = {
    "TextBlock": "text",
    "ThinkingBlock": "thinking",
    "ToolUseBlock": "tool_use",
    "ToolResultBlock": "tool_result",
    "ServerToolUseBlock": "server_tool_use",
    "ServerToolResultBlock": "server_tool_result",
}
# System messages that are no step of the agent: the session's start, hooks running, status lines.
_QUIET_SYSTEM = frozenset({"init", "status", "compact_boundary", "hook_started", "hook_progress", "hook_response"})
# The blocks each side's messages carry (as the Anthropic reader reads them): any other is refused here, where the
# message's place in what the SDK yielded is known.
_BLOCKS = {
    "assistant": frozenset({"text", "thinking", "redacted_thinking", "tool_use"}),
    "user": frozenset({"text", "tool_result", "image", "document"}),
}
_NO_STEP = frozenset({"stream_event", "rate_limit_event"})  # partial events repeat the message; limits no step
MCP_PREFIX = "mcp__"
# The fields `dataclasses.asdict()` always writes for each message class, which tell the classes apart.
_DUMPED_FIELDS = (
    ("AssistantMessage", frozenset({"content", "model", "message_id", "parent_tool_use_id"})),
    ("UserMessage", frozenset({"content", "tool_use_result", "parent_tool_use_id"})),
    ("ResultMessage", frozenset({"subtype", "duration_ms", "is_error", "num_turns", "session_id"})),
    ("SystemMessage", frozenset({"subtype", "data"})),
    ("StreamEvent", frozenset({"event", "uuid", "session_id"})),
    ("RateLimitEvent", frozenset({"rate_limit_info", "uuid", "session_id"})),
    ("ConversationResetMessage", frozenset({"new_conversation_id", "uuid", "session_id"})),
)
# The server tools the SDK names (its ServerToolName): dumped without its type, such a call is a ToolUseBlock's twin.
SERVER_TOOLS = frozenset({"advisor", "web_search", "web_fetch", "code_execution", "bash_code_execution"})
SERVER_TOOLS |= frozenset({"text_editor_code_execution", "tool_search_tool_regex", "tool_search_tool_bm25"})


def _dumped_class(m: dict[str, Any]) -> str | None:
    """The SDK's class of a message `dataclasses.asdict()` dumped (no `type`: its fields say which), or None."""
    if "type" in m:
        return None
    keys = set(m)
    for name, fields in _DUMPED_FIELDS:
        if fields <= keys:
            return name
    return None


def is_claude_agent_message(m: Any) -> bool:
    """One of the SDK's message objects, one `dataclasses.asdict()`ed, or one as the CLI writes it."""
    if not isinstance(m, dict):
        return type(m).__module__.partition(".")[0] == "claude_agent_sdk"
    if _dumped_class(m) is not None:
        return True
    kind = m.get("type")
    if kind in ("assistant", "user"):
        return isinstance(m.get("message"), dict) and "role" not in m and "session_id" in m
    if kind in ("system", "result"):
        return isinstance(m.get("subtype"), str) and "session_id" in m
    return kind in _NO_STEP and "session_id" in m and "uuid" in m


def is_claude_agent(data: Any) -> bool:
    """Decoded JSON that is a run's messages as the CLI writes them (a list, or under `messages`)."""
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        data = data["messages"]
    return isinstance(data, list) and bool(data) and all(is_claude_agent_message(m) for m in data)


def _block(b: Any, where: str) -> dict[str, Any]:
    if isinstance(b, dict):
        return b if "type" in b else _dumped_block(b, where)
    kind = BLOCK_TYPES.get(type(b).__name__)
    if kind is None:
        raise UnknownBlock(f"{where}: a {type(b).__name__} block, which {READER} does not read")
    return {"type": kind, **vars(b)}


def _dumped_block(b: dict[str, Any], where: str) -> dict[str, Any]:
    """A block `dataclasses.asdict()` dumped, typed by its fields (any other is left for the refusal to name)."""
    keys = set(b)
    if keys == {"id", "name", "input"} and b.get("name") in SERVER_TOOLS:
        raise UnknownBlock(
            f"{where}: a block dumped without its type that calls {b['name']}, a server tool's name: a "
            f"ServerToolUseBlock, which {READER} does not read, cannot be told from a ToolUseBlock"
        )
    for kind, fields in (
        ("text", {"text"}),
        ("thinking", {"thinking", "signature"}),
        ("tool_use", {"id", "name", "input"}),
        ("tool_result", {"tool_use_id", "content", "is_error"}),
    ):
        if keys == fields:
            return {"type": kind, **b}
    return b


def _wire(m: Any, where: str) -> dict[str, Any]:
    """A message as the CLI writes it: the SDK's object (or its `dataclasses.asdict()`) turned back into it."""
    if isinstance(m, dict) and _dumped_class(m) is None:
        return m
    name = _dumped_class(m) if isinstance(m, dict) else type(m).__name__
    fields = dict(m) if isinstance(m, dict) else dict(vars(m))
    if name == "AssistantMessage":
        blocks = [_block(b, f"{where}, content block {j}") for j, b in enumerate(fields.get("content") or [])]
        message = {"id": fields.get("message_id"), "role": "assistant", "model": fields.get("model")}
        message |= {"content": blocks, "usage": fields.get("usage"), "stop_reason": fields.get("stop_reason")}
        return {"type": "assistant", "message": message, "parent_tool_use_id": fields.get("parent_tool_use_id")}
    if name == "UserMessage":
        content = fields.get("content")
        if isinstance(content, list):
            content = [_block(b, f"{where}, content block {j}") for j, b in enumerate(content)]
        message = {"role": "user", "content": content}
        return {"type": "user", "message": message, "parent_tool_use_id": fields.get("parent_tool_use_id")}
    if isinstance(fields.get("subtype"), str) and isinstance(fields.get("data"), dict):  # SystemMessage, subclasses
        return {**fields["data"], "type": "system", "subtype": fields["subtype"]}
    if name in MESSAGE_TYPES:
        return {"type": MESSAGE_TYPES[name], **fields}
    raise UnknownBlock(f"{where}: a {name}, which {READER} does not read")


def _tool_names(messages: list[dict[str, Any]], servers: list[str]) -> dict[str, str]:
    """`mcp__<server>__<tool>` calls renamed `<tool>` where that name is the run's one tool of it; the server
    of each call so renamed, by call id."""
    calls = [c for m in messages for c in m.get("tool_calls") or []]

    def split(name: str) -> tuple[str, str] | None:
        if not name.startswith(MCP_PREFIX):
            return None
        rest = name[len(MCP_PREFIX) :]
        known = [s for s in servers if rest.startswith(s + "__")]  # a server whose name holds "__" too
        server = max(known, key=len) if known else rest.partition("__")[0]
        tool = rest[len(server) + 2 :]
        return (server, tool) if tool else None

    owners: dict[str, set[str]] = {}
    for c in calls:
        name = str(c["function"]["name"])
        tool = (split(name) or ("", name))[1]
        owners.setdefault(tool, set()).add(name)
    by_call: dict[str, str] = {}
    for c in calls:
        parts = split(str(c["function"]["name"]))
        if parts and len(owners[parts[1]]) == 1:
            c["function"]["name"] = parts[1]
            if isinstance(c.get("id"), str):
                by_call[c["id"]] = parts[0]
    return by_call


def to_openai(items: list[Any]) -> tuple[list[dict[str, Any]], dict[str, str], dict[str, str], dict[str, Any]]:
    """The SDK's messages as OpenAI chat messages; each failed call's error and each MCP call's server by call
    id; how the run ended and each turn's cost, by the ordinal of its first model call (`extra`: `finish_reason`,
    `costs`). UnknownBlock names what it cannot read, and where."""
    anthropic: list[dict[str, Any]] = []
    servers: list[str] = []
    extra: dict[str, Any] = {"costs": {}}
    last_id: Any = None
    turn_start, spent = 0, 0.0  # where the turn a ResultMessage ends began; the session's cost before it
    for i, raw in enumerate(items):
        where = f"message {i}"
        m = _wire(raw, where)
        kind = m.get("type")
        if m.get("parent_tool_use_id"):
            raise UnknownBlock(
                f"{where}: a subagent's {kind} message (parent_tool_use_id {m['parent_tool_use_id']}), which "
                f"{READER} does not read"
            )
        if kind in _NO_STEP:
            continue
        if kind == "system":
            subtype = m.get("subtype")
            if subtype not in _QUIET_SYSTEM:
                raise UnknownBlock(f"{where}: a system message of subtype {subtype!r}, which {READER} does not read")
            servers += [s["name"] for s in m.get("mcp_servers") or [] if isinstance(s, dict) and "name" in s]
            continue
        if kind == "result":  # the end of a turn (one query): its tokens, the session's cost so far
            said = [n for n in range(turn_start, len(anthropic)) if anthropic[n]["role"] == "assistant"]
            if said and usage_of(m.get("usage")):
                for n in said:
                    anthropic[n].pop("usage", None)  # a stream's start, not the call's tokens
                anthropic[said[0]]["usage"] = m["usage"]  # the turn's total, on its first call
            cost = m.get("total_cost_usd")
            if said and isinstance(cost, int | float):
                first = sum(1 for a in anthropic[: said[0]] if a["role"] == "assistant")
                extra["costs"][first], spent = float(cost) - spent, float(cost)
            extra.pop("finish_reason", None)
            extra |= _finish(m)
            turn_start, last_id = len(anthropic), None
            continue
        message = m.get("message")
        if kind not in ("assistant", "user") or not isinstance(message, dict):
            raise UnknownBlock(f"{where}: a message of type {kind!r}, which {READER} does not read")
        for j, b in enumerate(message.get("content") if isinstance(message.get("content"), list) else []):
            if not isinstance(b, dict) or b.get("type") not in _BLOCKS[kind]:
                raise UnknownBlock(f"{where}, content block {j}: a {block_type(b)} block, which {READER} does not read")
        same_call = message.get("id") is not None and message.get("id") == last_id
        if kind == "assistant" and anthropic and anthropic[-1]["role"] == "assistant" and same_call:
            anthropic[-1]["content"] = [*anthropic[-1]["content"], *(message.get("content") or [])]
            continue  # another block of the same model call
        last_id = message.get("id") if kind == "assistant" else None
        anthropic.append({**message, "role": kind, "content": list(message.get("content") or [])})
        if kind == "user" and isinstance(message.get("content"), str):
            anthropic[-1]["content"] = message["content"]
    messages, errors = anthropic_to_openai(anthropic)
    return messages, errors, _tool_names(messages, servers), extra


def _finish(m: dict[str, Any]) -> dict[str, Any]:
    """How a ResultMessage says its turn ended, when not as it should (the reader decides that from the answer)."""
    if m.get("subtype") == "error_max_turns":
        return {"finish_reason": "step_cap"}
    if m.get("is_error") or m.get("subtype") != "success":
        return {"finish_reason": "error"}
    return {}


def from_claude_agent(data: Any, *, case_id: str, file: str | None = None) -> list[dict[str, Any]]:
    """One trace (a contract dict, not yet validated) from a run's messages as the CLI writes them."""
    from kit.errors import KitInputError
    from kit.importers.mcp import with_servers
    from kit.importers.openai_chat import from_converted

    items = data["messages"] if isinstance(data, dict) else data
    try:
        messages, errors, servers, extra = to_openai(items)
    except UnknownBlock as e:
        raise KitInputError(str(e), file=file) from None
    costs = extra.pop("costs")
    [trace] = from_converted(extra, messages, errors, case_id=case_id, file=file, source_format="claude_agent")
    with_cost(trace, costs)
    return [with_servers(trace, servers)]


def with_cost(trace: dict[str, Any], costs: dict[int, float]) -> dict[str, Any]:
    """Each turn's cost on its first model call (as its tokens are), never counted twice: `costs` by the ordinal
    of that call among the run's model calls (one llm span each)."""
    calls = [s for s in trace.get("spans", []) if s.get("kind") == "llm"]
    for n, cost in costs.items():
        if n < len(calls):
            calls[n]["cost_usd"] = cost
    return trace
