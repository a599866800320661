"""What OpenTelemetry spans mean: the GenAI semantic conventions and OpenInference, mapped to the trace.

GenAI (`gen_ai.*`): `gen_ai.operation.name` is `chat` / `text_completion` / `generate_content` (Latitude:
`completion`) for a model call, `execute_tool` (Latitude: `tool`) for a tool, `invoke_agent` for the agent;
a span without an operation name that carries `gen_ai.*.messages` or `gen_ai.prompt*` is a model call too.
Messages come from, in this order of preference: `gen_ai.input.messages` / `gen_ai.output.messages` (parts
of type `text`, `tool_call`, `tool_call_response`, or OpenAI-style `{role, content, tool_calls}`);
the deprecated `gen_ai.prompt` / `gen_ai.completion` (JSON text); the indexed `gen_ai.prompt.N.*` /
`gen_ai.completion.N.*` of Traceloop's OpenLLMetry and Latitude; and content events (span events, or OTLP
log records joined by span id). Tools: `gen_ai.tool.name`, `gen_ai.tool.call.id`, `...call.arguments`,
`...call.result` (Latitude: `gen_ai.tool.result.value`; pydantic-ai's older `tool_arguments` /
`tool_response`).
OpenInference: `openinference.span.kind` LLM / TOOL / AGENT / CHAIN; `llm.model_name`,
`llm.token_count.prompt` / `completion`, `llm.cost.total`; flattened `llm.input_messages.N.message.*` and
`llm.output_messages.N.message.tool_calls.M.tool_call.*`, else the raw `input.value` / `output.value`;
tools in `tool.name`, `input.value`, `output.value` (LangChain writes the raw tool input and a ToolMessage).

Tool calls are read from the model's side (each model call's output, and any call in its input history not
seen before) and from tool spans; a tool span is joined to the model's call by id, else by name and order,
and a model call no tool span answers becomes a tool span of its own, its result taken from the history.
Results in histories pair with the earliest unanswered call of their id, so reused ids stay right.
A model's call counts as run when a tool span ran it or a later model input shows it with its result;
one that never ran (held back by a confirmation guard, or the run ended) stays as `"executed": false`.
A user message new in a model call's input starts a turn: a run of several turns carries `turn` on every
span, and a call run later than asked (after the user confirmed) belongs to the turn it ran in.
A run of several agents names the agent of every step and the handoffs between them (kit.importers.agents).
One model call is one step: a model-call span nested alone in another (the Anthropic SDK's own span inside
OpenInference's) is its twin, read with it, never counted again. Prompt-cache tokens are kept beside the
prompt's (`tokens_cache_read`, `tokens_cache_write`), from the 2026 names (`gen_ai.usage.cache_read.input_tokens`,
`...cache_creation.input_tokens`), the older ones, and OpenInference's `llm.token_count.prompt_details.*`.
Message content of a type the importer does not read (a `tool_use` block no call lists, a Gemini
`function_call` part) is refused naming the span, the message and the block: never dropped.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import orjson

from kit.errors import KitInputError
from kit.importers.agents import SpanAgents, handoff_marker, handoffs, named_graph, tree
from kit.importers.anthropic import SERVER_RESULTS, is_anthropic_message, server_result, to_openai
from kit.importers.claude_code_otel import failed_tools, logged_answer, logged_tool_inputs, name_tools
from kit.importers.common import (
    UnknownBlock,
    block_type,
    content_text,
    maybe_json,
    parse_arguments,
    result_error,
    strict_text,
)
from kit.importers.converse import is_converse_message
from kit.importers.converse import to_openai as converse_messages
from kit.importers.mcp import McpSpans
from kit.importers.otlp import OtelSpan

GENAI, OPENINFERENCE = "genai", "openinference"
LLM_OPS = ("chat", "text_completion", "generate_content", "completion")
TOOL_OPS = ("execute_tool", "tool")
AGENT_OPS = ("invoke_agent", "create_agent", "invoke_workflow")
CASE_ID_ATTR = "kit.case_id"  # lets an instrumented agent name the golden case it ran
_GENAI_CONTENT = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.prompt", "gen_ai.completion")
_GENAI_CALL = (
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.prompt_tokens",
    "gen_ai.usage.completion_tokens",
    "gen_ai.response.model",
)
# Attribute names that look like content; an LLM span with one of these but no message read is a shape
# the importer does not know, and must say so rather than import an empty run. A name ending `_ms` is a time.
_CONTENTISH = re.compile(r"(prompt|completion|messages|content|input\.value|output\.value)", re.I)
_NOT_CONTENT = re.compile(r"(usage|token|mime_type|_tokens|cost|\.model|request\.(max|top|temperature)|_ms$)", re.I)


@dataclass
class Msg:
    role: str
    text: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # {id, name, arguments}
    tool_results: list[dict[str, Any]] = field(default_factory=list)  # {id, name, response}
    finish_reason: str | None = None


def kind(span: OtelSpan, convention: str | None = None) -> tuple[str | None, str | None]:
    """(llm | tool | agent | None, the convention that said so)."""
    a = span.attrs
    if convention in (None, GENAI):
        op = a.get("gen_ai.operation.name")
        if op in LLM_OPS:
            return "llm", GENAI
        if op in TOOL_OPS or (op is None and "gen_ai.tool.name" in a and "openinference.span.kind" not in a):
            return "tool", GENAI
        if op in AGENT_OPS:
            return "agent", GENAI
        if op is None and "openinference.span.kind" not in a and _has_genai_content(a):
            return "llm", GENAI
    if convention in (None, OPENINFERENCE):
        oi = str(a.get("openinference.span.kind") or "").upper()
        if oi == "LLM" and span.name.endswith("._prepare_chat_with_tools"):
            return None, None  # LlamaIndex's preparation of a call's messages, which its instrumentation marks LLM
        if oi == "LLM":
            return "llm", OPENINFERENCE
        if oi == "TOOL":
            return "tool", OPENINFERENCE
        if oi in ("AGENT", "CHAIN"):
            return "agent", OPENINFERENCE
    return None, None


def _has_genai_content(a: dict[str, Any]) -> bool:
    """A model call that does not name its operation (the semantic conventions' own tool-call example has
    one): it carries messages, per-call usage or a response model."""
    return (
        any(k in a for k in _GENAI_CONTENT)
        or any(k in a for k in _GENAI_CALL)
        or any(k.startswith(("gen_ai.prompt.", "gen_ai.completion.")) for k in a)
        or a.get("llm.request.type") in ("chat", "completion")
    )


def _json(v: Any) -> Any:
    """JSON text of an object or a list, decoded; anything else as it is."""
    if isinstance(v, str) and (v[:1] in _OPENERS or v.strip()[:1] in _OPENERS):
        try:
            return orjson.loads(v)
        except orjson.JSONDecodeError:  # what orjson refuses but Python's json reads (NaN, a lone surrogate, 2**64)
            pass
        try:
            return json.loads(v)
        except json.JSONDecodeError:
            return v
    return v


_OPENERS = ("[", "{")


# --- messages -------------------------------------------------------------------------------------------


def _call(tc: dict[str, Any]) -> dict[str, Any]:
    """A tool call in any of the shapes exporters write: `{id, name, arguments}` or OpenAI's
    `{id, function: {name, arguments}}`."""
    fn = tc.get("function") if isinstance(tc.get("function"), dict) else {}
    return {
        "id": tc.get("id"),
        "name": tc.get("name", fn.get("name")),
        "arguments": tc.get("arguments", fn.get("arguments")),
    }


def _text(content: Any, where: str = "a message") -> str | None:
    """Message content: a string, a JSON string of content parts, or a list of parts (a part of a type that is
    not text, nor input that is no step, is UnknownBlock naming it)."""
    if isinstance(content, str) and content.strip()[:1] == "[":
        parts = _json(content)
        if isinstance(parts, list) and all(isinstance(p, dict) and "type" in p for p in parts):
            return strict_text(parts, where, "a GenAI message", skip=_SKIPPED_PARTS)
    return strict_text(content, where, "a GenAI message", skip=_SKIPPED_PARTS)


# Parts that are no step of the agent: the model's reasoning, and media (the conventions' blob, file, uri and
# OpenAI's content parts).
_SKIPPED_PARTS = frozenset({"reasoning", "thinking", "blob", "file", "uri", "image", "image_url", "input_audio"})
_SKIPPED_PARTS |= frozenset({"audio", "refusal", "input_image", "input_file"})


_MESSAGE_KEYS = frozenset({"role", "content", "parts", "tool_calls", "function_call", "text"})


def chat_messages(items: Any) -> list[Msg]:
    """Messages in the GenAI parts shape, the OpenAI shape or Anthropic's (a list of dicts). A part or block of
    a type the importer does not read is UnknownBlock naming it and its place, never dropped."""
    out = []
    for i, m in enumerate(items if isinstance(items, list) else []):
        if not isinstance(m, dict):
            continue
        if is_anthropic_message(m):  # an Anthropic request's messages (OpenInference's input.value)
            out += chat_messages(to_openai([m])[0])
            continue
        if is_converse_message(m):  # Bedrock Converse blocks (Strands' spans)
            out += chat_messages(converse_messages([m])[0])
            continue
        if not set(m) & _MESSAGE_KEYS:  # a Responses-API item, a stream event: no message this reader knows
            raise UnknownBlock(f"message {i}: a {block_type(m)} item, which the importer does not read as a message")
        if "contents" in m and "content" not in m and "parts" not in m:  # the Agent Framework's own messages
            raise UnknownBlock(f"message {i}: content in `contents`, which the importer does not read")
        if isinstance(m.get("content"), dict):  # an event holding a message (ADK's), not a message's content
            keys = ", ".join(repr(k) for k in list(m["content"])[:4])
            raise UnknownBlock(f"message {i}: content that is an object ({keys}), which the importer does not read")
        msg = Msg(str(m.get("role") or "assistant"), finish_reason=m.get("finish_reason"))
        texts = []
        if isinstance(m.get("parts"), list):
            for j, p in enumerate(m["parts"]):
                t = p.get("type") if isinstance(p, dict) else None
                if t == "text":
                    texts.append(str(p.get("content", "")))
                elif t is None and isinstance(p, dict) and set(p) == {"text"}:  # Gemini's text part
                    texts.append(str(p["text"]))
                elif t == "tool_call":
                    msg.tool_calls.append(_call(p))
                elif t == "tool_call_response":
                    resp = p.get("response", p.get("result"))
                    msg.tool_results.append({"id": p.get("id"), "name": p.get("name"), "response": resp})
                elif t not in _SKIPPED_PARTS:
                    raise UnknownBlock(
                        f"message {i}, part {j}: a {block_type(p)} part, which the importer does not read"
                    )
        else:
            text = _text(m.get("content"), f"message {i}")
            if msg.role in ("tool", "function"):
                msg.tool_results.append({"id": m.get("tool_call_id"), "name": m.get("name"), "response": text})
            elif text is not None:
                texts.append(text)
            for tc in m.get("tool_calls") or []:
                if isinstance(tc, dict):
                    msg.tool_calls.append(_call(tc))
            if isinstance(m.get("function_call"), dict):
                msg.tool_calls.append(_call(m["function_call"]))
        msg.text = "".join(texts) if texts else None
        out.append(msg)
    return out


def genai_messages(raw: Any, role: str = "assistant") -> list[Msg]:
    """`gen_ai.input.messages` / `gen_ai.output.messages` / `gen_ai.prompt` / `gen_ai.completion` (JSON text
    or already decoded) as messages: a list of messages, one message object, `{"messages": [...]}`, the
    deprecated object form `{"text" (or "content"), "finish_reason"}`, or plain text (said by `role`)."""
    items = _json(raw)
    if isinstance(items, str):
        return [Msg(role, text=items)] if items else []
    if isinstance(items, dict):
        if isinstance(items.get("messages"), list):
            return chat_messages(items["messages"])
        if "role" in items or isinstance(items.get("parts"), list) or "tool_calls" in items:
            return chat_messages([{"role": role, **items}])
        text = items.get("text", items.get("content"))
        if isinstance(text, str | list):
            return [Msg(str(items.get("role") or role), text=_text(text), finish_reason=items.get("finish_reason"))]
        return []
    return chat_messages(items)


def _shape(v: Any) -> str:
    """A value's shape, in a few words, for a message about what was not read."""
    if isinstance(v, dict):
        keys = ", ".join(repr(k) for k in list(v)[:5])
        return f"an object with keys {keys}" if keys else "an empty object"
    if isinstance(v, list):
        kinds = ", ".join(sorted({type(x).__name__ for x in v}))
        return f"a list of {kinds}"
    return f"a {type(v).__name__}"


def _unread(span: OtelSpan, key: str, raw: Any, got: list[Msg], notes: list[str]) -> None:
    """A note when a content attribute the importer reads by name holds something it could not read (in part)."""
    v = _json(raw)
    if v is None or v in ("", [], {}):
        return
    skipped = isinstance(v, list) and any(not isinstance(m, dict) for m in v)
    if got and not skipped:
        return
    what = "items that are not message objects" if got else _shape(v)
    notes.append(
        f"span {span.name!r} ({span.span_id}): attribute {key} holds {what}, a shape the importer does not "
        "read: that content is not in the trace"
    )


def _count(span: OtelSpan, key: str, v: Any, notes: list[str], number: type = int) -> Any:
    """A token count or cost as a number; anything else is 0 and a note."""
    if v is None or v == "":
        return None
    try:
        return number(v)
    except (TypeError, ValueError, OverflowError):
        notes.append(
            f"span {span.name!r} ({span.span_id}): attribute {key} is {_shape(v)} ({str(v)[:40]!r}), not a number: "
            "counted as 0"
        )
        return None


def _tree(attrs: dict[str, Any], prefix: str) -> dict[str, Any]:
    """Flattened attributes under `prefix` as a nested dict (`a.0.b` -> {"0": {"b": ...}})."""
    root: dict[str, Any] = {}
    paths = _PATHS.get(prefix)
    if paths is None or len(paths) > _MAX_PATHS:  # bounded: a stream of ever-new names cannot grow it
        paths = _PATHS[prefix] = {}
    for key, v in attrs.items():
        got = paths.get(key)
        if got is None:
            got = paths[key] = _split(key, prefix)
        if not got:
            continue
        *path, last = got
        node = root
        for p in path:
            nxt = node.setdefault(p, {})
            if not isinstance(nxt, dict):
                nxt = node[p] = {"": nxt}
            node = nxt
        node[last] = v
    return root


# An attribute name's parts under a prefix (() when it is not under it), per prefix: the same few names come on
# every span of an instrumentation, so each is split once.
_PATHS: dict[str, dict[str, tuple[str, ...]]] = {}
_MAX_PATHS = 8192


def _split(key: str, prefix: str) -> tuple[str, ...]:
    return tuple(key[len(prefix) :].split(".")) if key.startswith(prefix) else ()


def _indexed(node: Any) -> list[Any]:
    if not isinstance(node, dict):
        return []
    keys = [k for k in node if k.isdigit()]
    if len(keys) > 1:
        keys.sort(key=int)
    return [node[k] for k in keys]


def indexed_messages(attrs: dict[str, Any], prefix: str) -> list[Msg]:
    """OpenLLMetry's and Latitude's `gen_ai.prompt.N.*` / `gen_ai.completion.N.*` as messages."""
    items = []
    for item in _indexed(_tree(attrs, prefix)):
        if not isinstance(item, dict):
            continue
        m = {k: v for k, v in item.items() if k != "tool_calls"}
        m["tool_calls"] = [tc for tc in _indexed(item.get("tool_calls")) if isinstance(tc, dict)]
        items.append(m)
    return chat_messages(items)


# smolagents' history repeats each call and its observation as text in roles of its own; the model's outputs
# and the tool spans hold them as calls and results, so the echo is no message of the run.
_SMOLAGENTS_ECHO = ("tool-call", "tool-response")


def openinference_messages(attrs: dict[str, Any], which: str) -> list[Msg]:
    """`llm.input_messages.*` or `llm.output_messages.*` as messages."""
    out = []
    for item in _indexed(_tree(attrs, f"llm.{which}_messages.")):
        m = item.get("message", {}) if isinstance(item, dict) else {}
        if m.get("role") in _SMOLAGENTS_ECHO:
            continue
        msg = Msg(str(m.get("role") or "assistant"))
        text = m.get("content")
        for tc in _indexed(m.get("tool_calls")):
            call = tc.get("tool_call", {})
            fn = call.get("function", {})
            msg.tool_calls.append({"id": call.get("id"), "name": fn.get("name"), "arguments": fn.get("arguments")})
        if text is None and "contents" in m:
            contents = [c for c in _indexed(m["contents"]) if isinstance(c, dict)]
            calls = {tc["id"] for tc in msg.tool_calls}
            for j, c in enumerate(contents):
                kind = c.get("message_content", {}).get("type", "text")
                where = f"llm.{which}_messages.{len(out)}, content {j}"
                if kind in SERVER_RESULTS:
                    msg.tool_results.append(_server_result(c, calls, where))
                    continue
                # Anthropic's tool_use content is a copy of a call in `tool_calls`; one that is not there is refused.
                copy = kind == "tool_use" and c.get("tool_call", {}).get("id") in calls - {None}
                if kind not in ("text", "image") and not copy:
                    raise UnknownBlock(f"{where}: a {kind!r} content, which the importer does not read")
            parts = [
                c.get("message_content", {})
                for c in contents
                if c.get("message_content", {}).get("type", "text") == "text"
            ]
            text = "".join(str(p.get("text", "")) for p in parts) if parts else None
        if msg.role == "tool":
            msg.tool_results.append({"id": m.get("tool_call_id"), "name": m.get("name"), "response": text})
        else:
            msg.text = text
        out.append(msg)
    return out


def _server_result(c: dict[str, Any], calls: set[Any], where: str) -> dict[str, Any]:
    """A result of a server tool Anthropic ran within the model call, as OpenInference writes it: a content of the
    block's type whose text is the block as JSON. It answers a call of its own message (the Anthropic reader's
    `server_result` reads its content)."""
    kind = c["message_content"]["type"]
    block = _json(c["message_content"].get("text"))
    cid = block.get("tool_use_id") if isinstance(block, dict) else None
    if cid is None or cid not in calls:
        raise UnknownBlock(f"{where}: a {kind!r} content that answers no call of its message")
    text, error = server_result(block.get("content"))
    return {"id": cid, "name": None, "response": text, "error": error}


def _open_calls(m: Msg) -> bool:
    """Whether a model's output asks for a call it does not answer itself (a server tool's call is answered)."""
    answered = {r.get("id") for r in m.tool_results}
    return any(tc.get("id") not in answered for tc in m.tool_calls)


def _openinference_values(attrs: dict[str, Any]) -> tuple[list[Msg], list[Msg]]:
    """An LLM span that records only the raw request and response (`input.value` / `output.value`)."""
    raw_in, raw_out = _json(attrs.get("input.value")), _json(attrs.get("output.value"))
    if isinstance(raw_in, dict) and "messages" in raw_in and not isinstance(raw_in["messages"], list):
        raise UnknownBlock(f"input.value: messages that are {_shape(raw_in['messages'])}, not a list of messages")
    if isinstance(raw_in, dict) and isinstance(raw_in.get("messages"), list):
        inputs = chat_messages(raw_in["messages"])
    elif isinstance(raw_in, list):
        inputs = chat_messages(raw_in)
    else:
        inputs = [Msg("user", text=str(raw_in))] if raw_in not in (None, "") else []
    if isinstance(raw_out, dict) and isinstance(raw_out.get("choices"), list):
        outputs = []
        for ch in raw_out["choices"]:
            if isinstance(ch, dict) and isinstance(ch.get("message"), dict):
                [msg] = chat_messages([{"role": "assistant", **ch["message"]}])
                msg.finish_reason = ch.get("finish_reason")
                outputs.append(msg)
    elif isinstance(raw_out, dict) and "role" in raw_out:
        outputs = chat_messages([raw_out])
    elif isinstance(raw_out, list):
        outputs = chat_messages(raw_out)
    else:
        outputs = [Msg("assistant", text=str(raw_out))] if raw_out not in (None, "") else []
    return inputs, outputs


# --- one span ------------------------------------------------------------------------------------------


@dataclass
class _Llm:
    span: OtelSpan
    convention: str
    inputs: list[Msg]
    outputs: list[Msg]
    twin: OtelSpan | None = None  # another instrumentation's span of the same model call, nested in this one


def _event_messages(span: OtelSpan, notes: list[str]) -> tuple[list[Msg], list[Msg]]:
    """Content recorded as events (on the span, or as OTLP log records joined to it)."""
    inputs: list[Msg] = []
    outputs: list[Msg] = []
    for name, ev in span.events:
        body = ev.get("body")
        payload = body if isinstance(body, dict) else {k: maybe_json(v) for k, v in ev.items() if k != "body"}
        if name == "gen_ai.content.prompt":  # semantic conventions before 1.27: JSON in gen_ai.prompt
            inputs += genai_messages(ev.get("gen_ai.prompt"), "user")
        elif name == "gen_ai.content.completion":
            outputs += genai_messages(ev.get("gen_ai.completion"))
        elif name == "gen_ai.client.inference.operation.details":
            inputs += genai_messages(ev.get("gen_ai.input.messages", payload.get("gen_ai.input.messages")))
            outputs += genai_messages(ev.get("gen_ai.output.messages", payload.get("gen_ai.output.messages")))
        elif name in ("gen_ai.system.message", "gen_ai.user.message", "gen_ai.assistant.message"):
            role = name.split(".")[1]
            inputs += chat_messages([{**payload, "role": role}])
        elif name == "gen_ai.tool.message":
            content = payload.get("content")
            if isinstance(content, list) and is_converse_message({"role": "user", "content": content}):
                inputs += chat_messages([{"role": "user", "content": content}])  # Strands: toolResult blocks
                continue
            resp = content if isinstance(content, str) else json.dumps(content, default=str)
            inputs.append(Msg("tool", tool_results=[{"id": payload.get("id"), "name": None, "response": resp}]))
        elif name == "gen_ai.choice":
            m = maybe_json(payload.get("message")) or {}
            if isinstance(m, str):
                msgs = [Msg("assistant", text=m)]
            elif isinstance(m, dict):
                msgs = chat_messages([{"role": "assistant", **m}])
            elif isinstance(m, list) and m and all(isinstance(b, dict) for b in m):  # its blocks (Strands')
                msgs = chat_messages([{"role": "assistant", "content": m}])
            else:
                msgs = []
                notes.append(
                    f"span {span.name!r} ({span.span_id}): event gen_ai.choice holds a message that is {_shape(m)}, "
                    "a shape the importer does not read: that content is not in the trace"
                )
            for msg in msgs:
                msg.finish_reason = payload.get("finish_reason")
            outputs += msgs
    return inputs, outputs


def _llm(span: OtelSpan, conv: str, notes: list[str]) -> _Llm:
    a = span.attrs
    _numbers(span, conv, notes)
    if conv == OPENINFERENCE:
        inputs, outputs = openinference_messages(a, "input"), openinference_messages(a, "output")
        if not inputs and not outputs:
            inputs, outputs = _openinference_values(a)
        return _Llm(span, conv, inputs, outputs)
    inputs = _read(span, "gen_ai.input.messages", "user", notes)
    outputs = _read(span, "gen_ai.output.messages", "assistant", notes)
    if not inputs:
        inputs = _read(span, "gen_ai.prompt", "user", notes) or indexed_messages(a, "gen_ai.prompt.")
    if not outputs:
        outputs = _read(span, "gen_ai.completion", "assistant", notes) or indexed_messages(a, "gen_ai.completion.")
    ev_in, ev_out = _event_messages(span, notes)
    if "gen_ai.system_instructions" in a and not any(m.role == "system" for m in inputs):
        parts = _json(a["gen_ai.system_instructions"])
        inputs.insert(0, Msg("system", text=content_text(parts) if isinstance(parts, list) else str(parts)))
    return _Llm(span, conv, inputs or ev_in, outputs or ev_out)


def _read(span: OtelSpan, key: str, role: str, notes: list[str]) -> list[Msg]:
    if key not in span.attrs:
        return []
    got = genai_messages(span.attrs[key], role)
    _unread(span, key, span.attrs[key], got, notes)
    return got


_NUMBERS = {
    GENAI: (
        ("gen_ai.usage.input_tokens", int),
        ("gen_ai.usage.output_tokens", int),
        ("gen_ai.usage.prompt_tokens", int),
        ("gen_ai.usage.completion_tokens", int),
        ("gen_ai.usage.cost", float),
    ),
    OPENINFERENCE: (("llm.token_count.prompt", int), ("llm.token_count.completion", int), ("llm.cost.total", float)),
}


def _numbers(span: OtelSpan, conv: str, notes: list[str]) -> None:
    for key, number in _NUMBERS.get(conv, ()):
        if key in span.attrs:
            _count(span, key, span.attrs[key], notes, number)


def _unread_content(x: _Llm) -> list[str]:
    """Attribute names that look like recorded content on a model call from which no message was read."""
    if x.inputs or x.outputs:
        return []
    return sorted(k for k in x.span.attrs if _CONTENTISH.search(k) and not _NOT_CONTENT.search(k))


# Prompt-cache token counts, by convention: the 2026 GenAI names first, then the names instrumentations wrote
# before them (the Anthropic SDK's own `cache_write`, OpenLLMetry's underscored ones), then OpenInference's.
_CACHE_READ = ("gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_read_input_tokens")
_CACHE_WRITE = (
    "gen_ai.usage.cache_creation.input_tokens",
    "gen_ai.usage.cache_write.input_tokens",
    "gen_ai.usage.cache_creation_input_tokens",
)
_OI_CACHE_READ, _OI_CACHE_WRITE = (
    ("llm.token_count.prompt_details.cache_read",),
    ("llm.token_count.prompt_details.cache_write",),
)


def _first(a: dict[str, Any], keys: tuple[str, ...]) -> Any:
    return next((a[k] for k in keys if a.get(k) is not None), None)


def _llm_fields(span: OtelSpan, convention: str) -> dict[str, Any]:
    """A model call's model, tokens and cost as its span records them (None where it does not)."""
    a = span.attrs
    if convention == GENAI:
        model = a.get("gen_ai.response.model") or a.get("gen_ai.request.model")
        tin = a.get("gen_ai.usage.input_tokens", a.get("gen_ai.usage.prompt_tokens"))
        tout = a.get("gen_ai.usage.output_tokens", a.get("gen_ai.usage.completion_tokens"))
        cost, read, write = a.get("gen_ai.usage.cost"), _first(a, _CACHE_READ), _first(a, _CACHE_WRITE)
    else:
        model = a.get("llm.model_name")
        tin, tout = a.get("llm.token_count.prompt"), a.get("llm.token_count.completion")
        cost, read, write = a.get("llm.cost.total"), _first(a, _OI_CACHE_READ), _first(a, _OI_CACHE_WRITE)
    quiet: list[str] = []  # `_numbers` noted what is not a number when the span was read
    return {
        "name": model,
        "tokens_in": _count(span, "tokens", tin, quiet),
        "tokens_out": _count(span, "tokens", tout, quiet),
        "cost_usd": _count(span, "cost", cost, quiet, float),
        "tokens_cache_read": _count(span, "tokens", read, quiet),
        "tokens_cache_write": _count(span, "tokens", write, quiet),
    }


def _llm_span(x: _Llm) -> dict[str, Any]:
    fields = _llm_fields(x.span, x.convention)
    if x.twin is not None:  # what this span leaves out, its twin may record (one call: never added up)
        twin = _llm_fields(x.twin, kind(x.twin)[1] or GENAI)
        fields = {k: v if v is not None else twin[k] for k, v in fields.items()}
    span: dict[str, Any] = {
        "kind": "llm",
        "name": fields["name"] or x.span.name,
        "tokens_in": fields["tokens_in"] or 0,
        "tokens_out": fields["tokens_out"] or 0,
        "latency_ms": x.span.latency_ms,
    }
    for key in ("cost_usd", "tokens_cache_read", "tokens_cache_write"):
        if fields[key] is not None:
            span[key] = fields[key]
    error = x.span.error or (x.twin.error if x.twin is not None else None)
    if error:
        span["error"] = error
    return span


def _twins(kinds: list[tuple[OtelSpan, str | None, str | None]]) -> dict[str, OtelSpan]:
    """One model call that two instrumentations recorded (OpenInference's span and the SDK's own inside it):
    the outer span's id -> the inner one, which is then no step of its own. An outer span holding several model
    calls is a wrapper of calls, not a twin: its inner spans stay."""
    by_id = {s.span_id: s for s, _, _ in kinds}
    llm = {s.span_id for s, k, _ in kinds if k == "llm"}
    inner: dict[str, list[OtelSpan]] = {}
    for s, k, _ in kinds:
        parent, seen = s.parent_id, {s.span_id}
        while k == "llm" and parent and parent in by_id and parent not in seen:
            if parent in llm:
                inner.setdefault(parent, []).append(s)
                break
            seen.add(parent)
            parent = by_id[parent].parent_id
    return {outer: spans[0] for outer, spans in inner.items() if len(spans) == 1}


@dataclass
class _ToolSpan:
    span: OtelSpan
    name: str
    call_id: str | None
    raw_args: Any
    raw_result: Any
    error: str | None
    # raw_args / raw_result decoded once while the span was read (an object, a list), so never decoded again
    args_json: dict[str, Any] | None = None
    result_json: Any = None


def _tool(span: OtelSpan, conv: str) -> _ToolSpan:
    a = span.attrs
    if conv == GENAI:
        name = a.get("gen_ai.tool.name") or span.name.removeprefix("execute_tool").strip()
        raw_args = a.get("gen_ai.tool.call.arguments", a.get("tool_arguments"))
        raw_result = a.get("gen_ai.tool.call.result", a.get("gen_ai.tool.result.value", a.get("tool_response")))
        if raw_args is None and raw_result is None:  # Strands' default: the call and its result as events
            raw_args, raw_result = _tool_events(span)
        given, decoded = raw_result, _json(raw_result)
        raw_result = _blocks_text(raw_result, decoded)
        error = span.error or a.get("error.type")
        if a.get("gen_ai.tool.result.is_error") is True:
            error = error or (raw_result if isinstance(raw_result, str) else "tool reported an error")
        t = _ToolSpan(span, name, a.get("gen_ai.tool.call.id"), raw_args, raw_result, error)
        t.result_json = _decoded(raw_result, decoded) if raw_result is given else None
        return t
    raw, call_id, error = a.get("output.value"), a.get("tool_call.id"), span.error
    raw_result = raw
    output = _json(raw_result)
    if isinstance(output, dict) and {"tool_name", "raw_output", "is_error"} <= set(output):  # LlamaIndex's ToolOutput
        raw_result = output["raw_output"]
        if output["is_error"]:
            error = error or str(output.get("content") or "tool reported an error")
    envelope = _tool_message(raw_result, output if raw_result is raw else _json(raw_result))
    if envelope is not None:  # LangChain's ToolMessage: the tool's content, its call id, its status
        raw_result = envelope.get("content")
        call_id = call_id or envelope.get("tool_call_id")
        if envelope.get("status") == "error":
            error = error or (raw_result if isinstance(raw_result, str) else "tool reported an error")
    raw_input = a.get("input.value")
    given = _json(raw_input)
    args = _called_with(raw_input, given)
    t = _ToolSpan(span, a.get("tool.name") or span.name, call_id, args, raw_result, error)
    t.result_json = _decoded(raw_result, output) if raw_result is raw else None
    t.args_json = given if args is raw_input and isinstance(given, dict) and given is not raw_input else None
    return t


def _decoded(raw: Any, decoded: Any) -> Any:
    """`decoded` when it is `raw`'s JSON text decoded to an object or a list (what `maybe_json` would make of
    it), else None."""
    return decoded if isinstance(raw, str) and isinstance(decoded, dict | list) else None


def _called_with(raw: Any, v: Any) -> Any:
    """A tool's input as OpenInference records it (`v`: `raw` through `_json`); smolagents' instrumentation wraps
    the arguments as the tool's Python call, `{"args": [...], "kwargs": {...}}`: the keywords are the arguments,
    and positional ones (which name no argument) leave the model's own arguments to be read instead."""
    wrapped = isinstance(v, dict) and set(v) <= {"args", "kwargs", "sanitize_inputs_outputs"}
    if wrapped and isinstance(v.get("args", []), list) and isinstance(v.get("kwargs"), dict):
        return None if v.get("args") else v["kwargs"]  # LlamaIndex's FunctionTool.acall: `{"kwargs": ...}` alone
    return raw


def _tool_events(span: OtelSpan) -> tuple[Any, Any]:
    """A tool span's arguments and result recorded as its own events (Strands' default conventions): the
    arguments in `gen_ai.tool.message`'s `content`, the result in `gen_ai.choice`'s `message`."""
    args = result = None
    for name, ev in span.events:
        if name == "gen_ai.tool.message" and "content" in ev:
            args = ev["content"]
        elif name == "gen_ai.choice" and "message" in ev:
            result = ev["message"]
        elif name == "tool.output" and "output" in ev:  # the Claude Code CLI's (its arguments are logged apart)
            result = ev["output"]
    return args, result


def _blocks_text(raw: Any, v: Any) -> Any:
    """A tool result given as content blocks that are all text (`[{"text": ...}]`, Converse's; or `{"type":
    "text", "text"}` parts) as the text they hold; anything else as it is (`v`: `raw` through `_json`)."""
    if not isinstance(v, list) or not v:
        return raw
    texts = []
    for b in v:
        text = b.get("text") if isinstance(b, dict) else None
        if not isinstance(text, str) or not set(b) <= {"text", "type"} or b.get("type", "text") != "text":
            return raw
        texts.append(text)
    return "".join(texts)


def _tool_message(raw: Any, v: Any) -> dict[str, Any] | None:
    """LangChain's ToolMessage in `raw` (`v`: `raw` through `_json`), or None."""
    m = _lc_message(v)
    return m if m.get("type") in ("tool", None) and "content" in m and "tool_call_id" in m else None


def _lc_message(v: Any) -> dict[str, Any]:
    """A LangChain message in any of its serialised forms: `{"lc": 1, "kwargs": {...}}`, `{"type", "data"}`
    (messages_to_dict) or plain fields."""
    if not isinstance(v, dict):
        return {}
    if v.get("lc") is not None and isinstance(v.get("kwargs"), dict):
        return {"type": str((v.get("id") or [""])[-1]).removesuffix("Message").lower() or None, **v["kwargs"]}
    if isinstance(v.get("data"), dict) and isinstance(v.get("type"), str):
        return {**v["data"], "type": v["type"]}
    return v


# --- one trace -----------------------------------------------------------------------------------------


@dataclass
class _Call:
    """A tool call the model asked for, with the result the history gave it and the tool span that ran it."""

    id: str | None
    name: str | None
    arguments: Any
    result: Any = None
    answered: bool = False
    error: str | None = None  # what its result said went wrong (a server tool's error result)
    tool: _ToolSpan | None = None
    answered_at: int | None = None  # the place in the plan where its result was first seen


class _History:
    """Reads each model call's input history once: what it holds beyond what earlier calls held or returned
    (counted per message, so a history re-sent in full adds nothing, and a fresh one adds what is new)."""

    def __init__(self) -> None:
        self.seen: Counter[tuple[Any, ...]] = Counter()
        self.calls: list[_Call] = []
        self.position = 0  # where in the plan the inputs being read go

    def read_inputs(self, inputs: list[Msg]) -> list[tuple[str, Any]]:
        items: list[tuple[str, Any]] = []
        here: dict[tuple[Any, ...], int] = {}  # a plain dict: a Counter per model call costs more than its reading
        for m in inputs:
            if m.role in ("tool", "function"):
                for r in m.tool_results:
                    key = ("result", r.get("id") or r.get("name"))
                    here[key] = here.get(key, 0) + 1
                    if here[key] > self.seen[key]:
                        self.seen[key] += 1
                        self._answer(r)
                continue
            if m.text is not None:
                key = ("assistant" if m.role == "assistant" else m.role, m.text)
                here[key] = here.get(key, 0) + 1
                if here[key] > self.seen[key]:
                    self.seen[key] += 1
                    items.append(("message", {"kind": "message", "role": m.role, "content": m.text}))
            for tc in m.tool_calls:
                key = ("call", tc.get("id"), tc.get("name"))
                here[key] = here.get(key, 0) + 1
                if here[key] > self.seen[key]:
                    self.seen[key] += 1
                    items.append(("call", self._new_call(tc)))
        return items

    def read_outputs(self, outputs: list[Msg]) -> list[tuple[str, Any]]:
        items: list[tuple[str, Any]] = []
        for m in outputs:
            if m.text:
                self.seen[("assistant", m.text)] += 1
                items.append(("message", {"kind": "message", "role": "assistant", "content": m.text}))
            for tc in m.tool_calls:
                self.seen[("call", tc.get("id"), tc.get("name"))] += 1
                items.append(("call", self._new_call(tc)))
            for r in m.tool_results:  # a server tool's result, in the output of the model call that ran it
                self.seen[("result", r.get("id") or r.get("name"))] += 1
                self._answer(r)
        return items

    def _new_call(self, tc: dict[str, Any]) -> _Call:
        c = _Call(tc.get("id"), tc.get("name"), tc.get("arguments"))
        self.calls.append(c)
        return c

    def _answer(self, r: dict[str, Any]) -> None:
        """The earliest unanswered call of this id (or, without an id, of this name, else any)."""
        rid = r.get("id")
        open_calls = [c for c in self.calls if not c.answered]
        match = [c for c in open_calls if c.id == rid] if rid else []
        if not match and not rid:
            match = [c for c in open_calls if c.name == r.get("name")] or open_calls
        if match:
            match[0].result, match[0].answered, match[0].error = r.get("response"), True, r.get("error")
            match[0].answered_at = self.position

    def join(self, t: _ToolSpan) -> _Call | None:
        """The model's call a tool span ran: by id, else the earliest one of that name no span ran yet."""
        free = [c for c in self.calls if c.tool is None]
        match = [c for c in free if t.call_id and c.id == t.call_id]
        if not match and not t.call_id:
            match = [c for c in free if c.name == t.name]
        if match:
            match[0].tool = t
            return match[0]
        return None


def build_trace(
    spans: list[OtelSpan],
    *,
    case_id: str,
    convention: str | None = None,
    notes: list[str] | None = None,
    case_attr: str | None = None,
) -> dict[str, Any]:
    """One OTel trace (its spans sorted by start time) -> one trace dict. `notes` gets a line for each
    attribute the importer knows by name but could not read (its content is then not in the trace)."""
    notes = notes if notes is not None else []
    mcp = McpSpans(spans, lambda s: kind(s, convention)[0] == "tool")  # one span per MCP call, its server
    spans = mcp.spans
    ids = {s.span_id for s in spans}
    roots = [s for s in spans if not s.parent_id or s.parent_id not in ids]
    kinds = [(s, *kind(s, convention)) for s in spans]
    if not any(k in ("llm", "tool", "agent") for _, k, _ in kinds):
        raise KitInputError(_unknown(spans, convention))

    agents = SpanAgents(spans)
    twins = _twins(kinds)
    twinned = {t.span_id for t in twins.values()}
    history = _History()
    logged_args = logged_tool_inputs(spans)  # the Claude Code CLI logs its calls' arguments apart from its spans
    failed = failed_tools(spans)  # and marks a failed call on a span of its own
    plan: list[tuple[str, Any]] = []  # ("llm", _Llm) | ("message", span) | ("call", _Call) | ("tool", ...)
    owners: list[OtelSpan] = []  # the span each plan item came from (its agent is the item's)
    last_llm: _Llm | None = None
    prev: OtelSpan | None = None
    for s, k, conv in kinds:
        if prev is not None:
            owners += [prev] * (len(plan) - len(owners))
        prev = s
        if k == "tool" and handoff_marker(s) is not None:
            continue  # the framework's record of a handoff: an event of the run, not a call
        if k == "llm" and s.span_id in twinned:
            continue  # read with the span it is a twin of
        if k == "llm":
            try:
                x = _llm(s, conv or GENAI, notes)
                twin = twins.get(s.span_id)
                if twin is not None and not x.inputs and not x.outputs:  # the content is on the twin
                    inner = _llm(twin, kind(twin)[1] or GENAI, notes)
                    x = _Llm(s, conv or GENAI, inner.inputs, inner.outputs)
                x.twin = twin
            except UnknownBlock as e:  # content the importer would drop: refused, naming the span and the block
                raise KitInputError(f"span {s.name!r} ({s.span_id}): {e}") from None
            unread = _unread_content(x)
            if unread:
                raise KitInputError(
                    f"span {s.name!r} ({s.span_id}) is a model call with content in {', '.join(unread[:6])} "
                    "in a shape the importer does not read"
                )
            history.position = len(plan)
            plan += history.read_inputs(x.inputs)
            plan.append(("llm", x))
            plan += history.read_outputs(x.outputs)
            last_llm = x
        elif k == "tool":
            t = _tool(s, conv or GENAI)
            if t.raw_args is None and t.call_id in logged_args:
                t.raw_args = logged_args[t.call_id]
            t.error = t.error or failed.get(str(t.call_id))
            plan.append(("tool", (t, history.join(t))))

    if prev is not None:
        owners += [prev] * (len(plan) - len(owners))
    turn_at = _turns(plan)
    out: list[dict[str, Any]] = []
    for n, (what, item) in enumerate(plan):
        count = len(out)
        agent = agents.of.get(owners[n].span_id)
        if what == "llm":
            out.append(_llm_span(item))
        elif what == "message":
            out.append(dict(item))
        elif what == "call" and item.tool is None:
            out.append(_synth_tool(item))
            if item.answered_at is not None:
                n = item.answered_at
        elif what == "tool":
            out.append(mcp.annotate(_tool_span(*item), item[0].span))
        else:
            continue
        if agent is not None and len(out) > count:
            out[-1]["agent"] = agent
        if turn_at[-1] > 0:  # one turn is the whole trace: spans without turns
            out[-1]["turn"] = turn_at[n]

    name_tools(out, spans)
    final_from_llm = None
    if last_llm is not None:
        texts = [m.text for m in last_llm.outputs if m.text]
        pending = any(_open_calls(m) for m in last_llm.outputs)
        final_from_llm = texts[-1] if texts and not pending else None
    # A conversation joined from several traces (one per turn) ends with its last trace's root.
    root = (roots[-1] if len({r.trace_id for r in roots}) > 1 else roots[0]) if roots else None
    try:
        agent_output = _agent_output(root, convention) if root is not None else None
    except UnknownBlock as e:
        raise KitInputError(f"span {root.name!r} ({root.span_id}): {e}") from None  # type: ignore[union-attr]
    final = agent_output if agent_output is not None else final_from_llm
    starts = [s.start_ns for s in spans if s.start_ns]
    ends = [s.end_ns for s in spans if s.end_ns]
    cid = case_of(spans, case_attr or CASE_ID_ATTR)
    if cid is None and case_attr:
        notes.append(
            f"trace {spans[0].trace_id if spans else '(no id)'}: no span or resource has attribute {case_attr}: "
            f"imported as case {case_id!r}"
        )
    cid = cid or case_id
    conventions = sorted({c for _, k, c in kinds if c})
    return {
        "case_id": cid,
        "model": _llm_span(last_llm)["name"] if last_llm else None,
        "final_output": final,
        "finish_reason": _finish(root, last_llm, final),
        "latency_ms": round((max(ends) - min(starts)) / 1e6, 3) if starts and ends else None,
        "spans": out,
        **_agent_fields(out, agents, spans),
        "source_format": "otel-" + "+".join(conventions) if conventions else "otel",
        "otel_trace_id": spans[0].trace_id if spans else None,
        **_session(spans),
    }


def _agent_fields(out: list[dict[str, Any]], agents: SpanAgents, spans: list[OtelSpan]) -> dict[str, Any]:
    """The handoffs of a run of several agents; nothing for a run of one, whose spans then all name its agent
    when a span named it, and none otherwise (the trace reads as before)."""
    named = {s.get("agent") for s in out} - {None}
    graph = named_graph(spans) if not named else None  # looked for only when no span names an agent
    named = named or ({graph} if graph else set())
    if len(named) < 2:
        for s in out:
            s.pop("agent", None)
            if named:  # one agent, named by its framework: every step is its own, `agent: X` checks judge it
                s["agent"] = next(iter(named))
        return {}
    first = next(s["agent"] for s in out if s.get("agent"))
    for s in out:  # a step before any agent span (the user's first message) is the first agent's
        if s.get("agent") is None:
            s["agent"] = first
        else:
            break
    events = handoffs(out, agents)
    declared = tree(out, events, agents)
    return {"handoffs": events, **({"agents": declared} if declared else {})}


SESSION_ATTRS = ("gen_ai.conversation.id", "session.id")  # the GenAI conventions', OpenInference's


def session_of(spans: list[OtelSpan]) -> str | None:
    """The conversation (session) the spans belong to, when one of them names it."""
    for s in spans:
        for a in SESSION_ATTRS:
            if s.attrs.get(a) not in (None, ""):
                return str(s.attrs[a])
    return None


def _session(spans: list[OtelSpan]) -> dict[str, Any]:
    """The conversation a run belongs to, and the traces it was joined from when there are several."""
    found = session_of(spans)
    if found is None:
        return {}
    traces = list(dict.fromkeys(s.trace_id for s in spans))
    return {"otel_session_id": found, **({"otel_trace_ids": traces} if len(traces) > 1 else {})}


def case_of(spans: list[OtelSpan], attr: str) -> str | None:
    """The case a run names in `attr`: on any of its spans (the first that has it), else on its resource."""
    for s in spans:
        if s.attrs.get(attr) not in (None, ""):
            return str(s.attrs[attr])
    for s in spans:
        if s.resource.get(attr) not in (None, ""):
            return str(s.resource[attr])
    return None


def _turns(plan: list[tuple[str, Any]]) -> list[int]:
    """The turn of each item of the plan (and one more, the last turn, at the end): a user message starts
    a turn once the current one has more than its user's messages."""
    out: list[int] = []
    turn, answered = 0, False
    for what, item in plan:
        user = what == "message" and item.get("role") in ("user", "system", "developer")
        if what == "message" and item.get("role") == "user" and answered:
            turn, answered = turn + 1, False
        answered = answered or not user
        out.append(turn)
    out.append(turn)
    return out


def _unknown(spans: list[OtelSpan], convention: str | None) -> str:
    names = ", ".join(repr(n) for n in list(dict.fromkeys(s.name for s in spans))[:5])
    keys = sorted({k for s in spans for k in s.attrs})
    which = {GENAI: "the GenAI semantic conventions", OPENINFERENCE: "OpenInference"}.get(
        convention or "", "the GenAI semantic conventions or OpenInference"
    )
    shown = ", ".join(keys[:12]) + (f" (+{len(keys) - 12} more)" if len(keys) > 12 else "")
    return (
        f"trace {spans[0].trace_id or '(no id)'}: none of its {len(spans)} span(s) follows {which} "
        f"(span names {names}; attributes {shown or 'none'})"
    )


def _tool_span(t: _ToolSpan, call: _Call | None) -> dict[str, Any]:
    raw_args = t.raw_args
    # Arguments and a result decoded while the span was read are the same values parse_arguments and maybe_json
    # would make: not decoded twice.
    args, arg_error = (t.args_json, None) if t.args_json is not None else parse_arguments(raw_args)
    if (raw_args is None or arg_error) and call is not None:
        args, arg_error = parse_arguments(call.arguments)  # the model's own arguments
    elif arg_error and isinstance(raw_args, str):
        args, arg_error = {"input": raw_args}, None  # a tool given plain text, not a model's bad JSON
    raw_result = t.raw_result
    if raw_result is None and call is not None and call.answered:
        raw_result = call.result
    output = t.result_json if t.result_json is not None else maybe_json(raw_result)
    error = t.error or arg_error or result_error(output)
    call_id = t.call_id or (call.id if call is not None else None)
    out = {
        "kind": "tool",
        "name": t.name,
        "input": args,
        "output": output,
        "error": error,
        "latency_ms": t.span.latency_ms,
    }
    if call_id:
        out["tool_call_id"] = call_id
    return out


def _synth_tool(c: _Call) -> dict[str, Any]:
    args, arg_error = parse_arguments(c.arguments)
    output = maybe_json(c.result) if c.answered else None
    error = arg_error or c.error or result_error(output)
    span = {"kind": "tool", "name": c.name, "input": args, "output": output, "error": error, "tool_call_id": c.id}
    if not c.answered:  # no tool span, and no later model input shows its result: asked for, never seen to run
        span["executed"] = False
    return span


def _agent_output(root: OtelSpan, convention: str | None) -> str | None:
    k, conv = kind(root, convention)
    if k != "agent":
        return None
    if conv == GENAI:
        texts = [m.text for m in genai_messages(root.attrs.get("gen_ai.output.messages", "[]")) if m.text]
        if texts:
            return texts[-1]
        if logged_answer(root) is not None:
            return logged_answer(root)
        v = root.attrs.get("final_result")  # pydantic-ai's agent run
        return v if isinstance(v, str) or v is None else json.dumps(v, default=str)
    v = _json(root.attrs.get("output.value"))
    if isinstance(v, str) and v.startswith("StopEvent("):
        return None  # LlamaIndex's workflow result, as Python's repr: the model's last answer is read instead
    if isinstance(v, dict) and isinstance(v.get("tasks_output"), list) and isinstance(v.get("raw"), str):
        return v["raw"]  # CrewAI's CrewOutput: its answer, not the JSON of the whole output
    if isinstance(v, dict):  # LangChain's graph state: the last message is the answer
        msgs = v.get("messages") or (v.get("output") if isinstance(v.get("output"), list) else None)
        if isinstance(msgs, list) and msgs:
            last = _lc_message(msgs[-1])
            if isinstance(last.get("content"), str):
                return last["content"]
    return v if isinstance(v, str) else (None if v is None else json.dumps(v, default=str))


_STOP = ("stop", "end_turn", "STOP", "completed")
_CUT = ("length", "max_tokens", "MAX_TOKENS")


def _finish(root: OtelSpan | None, last: _Llm | None, final: str | None) -> str | None:
    if (root is not None and root.error) or (last is not None and last.span.error):
        return "error"
    if last is None:
        return "finish" if final is not None else None
    reasons = last.span.attrs.get("gen_ai.response.finish_reasons")
    reasons = list(reasons) if isinstance(reasons, list | tuple) else ([reasons] if reasons else [])
    reasons += [m.finish_reason for m in last.outputs if m.finish_reason]
    if any(r in _CUT for r in reasons):
        return "step_cap"
    if final is not None:
        return "finish"
    # With content capture off (OpenTelemetry's default) the answer is not recorded, but the model said
    # it stopped without asking for a tool.
    if any(r in _STOP for r in reasons) and not any(_open_calls(m) for m in last.outputs):
        return "finish"
    return None
