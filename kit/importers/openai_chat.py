"""OpenAI chat-completions message lists -> traces in the contract format.

Accepted shapes (one conversation each):
- a list of messages (`{role, content, tool_calls, tool_call_id}`);
- an object `{"messages": [...], "model", "usage", "case_id", "finish_reason", "latency_ms", "response"}`,
  where `response` is the chat-completion object that answered the last request;
- raw chat-completion objects (`{"object": "chat.completion", "choices": [...], "usage": ...}`) anywhere in a
  message list: they stand for the assistant message they carry, with its token usage.
A list of conversation objects gives one trace each. tau-bench's result records (`{task_id, trial, reward,
traj}`) are conversations too: `traj` is the message list, the case id `task-<task_id>`, the attempt `trial`.

Each assistant message is one model call: an `llm` span (with the usage logged beside it, if any), then a
`tool` span per tool call (arguments parsed from their JSON string, the result matched by `tool_call_id`),
then a `message` span for its text. The last assistant text is the final output. A call that no tool
message answers never ran as far as the conversation shows: its span is `"executed": false` (requested).
A user message starts a turn: a conversation of several turns carries `turn` (0-based) on every span.
Content is text parts (images, audio, files and refusals are no step of the agent); a block of any other
type (an Anthropic `tool_use`, a Converse `toolUse`) is refused by name and place, never dropped.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from kit.errors import KitInputError, error_line
from kit.importers.common import UnknownBlock, content_text, maybe_json, parse_arguments, result_error, strict_text

FINISH_TOOL = "finish"  # agents that end through a finish action (as the kit's reference agent does)
ROLES = ("system", "developer", "user", "assistant", "tool", "function")


class _Function(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str
    arguments: Any = None


class _ToolCall(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str | None = None
    type: str = "function"
    function: _Function


class _Usage(BaseModel):
    model_config = ConfigDict(extra="allow")
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    input_tokens: int | None = None  # the Responses API and some proxies spell it this way
    output_tokens: int | None = None
    # Prompt-cache tokens as Anthropic counts them (kit.importers.anthropic puts them here), kept on the step.
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None

    @property
    def tokens_in(self) -> int:
        return self.prompt_tokens if self.prompt_tokens is not None else (self.input_tokens or 0)

    @property
    def tokens_out(self) -> int:
        return self.completion_tokens if self.completion_tokens is not None else (self.output_tokens or 0)


class _Message(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: str
    content: Any = None
    name: str | None = None
    tool_calls: list[_ToolCall] | None = None
    tool_call_id: str | None = None
    function_call: _Function | None = None  # the legacy single-function form
    usage: _Usage | None = None
    model: str | None = None
    finish_reason: str | None = None
    latency_ms: float | None = None

    @field_validator("role")
    @classmethod
    def _known_role(cls, v: str) -> str:
        if v not in ROLES:
            raise ValueError(f"unknown role {v!r} (expected one of {', '.join(ROLES)})")
        return v


def is_openai(data: Any) -> bool:
    """Whether decoded JSON looks like an OpenAI conversation (or a list of them)."""
    if isinstance(data, dict):
        return isinstance(data.get("messages"), list) or _is_tau(data) or _is_completion(data)
    if isinstance(data, list) and data and isinstance(data[0], dict):
        return is_openai(data[0]) or isinstance(data[0].get("role"), str)
    return False


def _is_tau(d: Any) -> bool:
    return isinstance(d, dict) and isinstance(d.get("traj"), list) and "messages" not in d


def _from_tau(d: dict[str, Any]) -> dict[str, Any]:
    conv: dict[str, Any] = {"messages": d["traj"]}
    if d.get("task_id") is not None:
        conv["case_id"] = f"task-{d['task_id']}"
    if isinstance(d.get("trial"), int):
        conv["attempt"] = d["trial"]
    return conv


def _is_completion(d: Any) -> bool:
    return isinstance(d, dict) and isinstance(d.get("choices"), list) and "role" not in d


def from_openai(data: Any, *, case_id: str, file: str | None = None) -> list[dict[str, Any]]:
    """Traces from decoded JSON in any accepted shape; attempts count up per case id."""
    if _is_tau(data):
        data = _from_tau(data)
    elif isinstance(data, list) and data and all(_is_tau(d) for d in data):
        data = [_from_tau(d) for d in data]
    if (
        isinstance(data, list)
        and data
        and all(isinstance(d, dict) and isinstance(d.get("messages"), list) for d in data)
    ):
        convs = data
    elif isinstance(data, list):
        convs = [{"messages": data}]
    elif isinstance(data, dict) and isinstance(data.get("messages"), list):
        convs = [data]
    elif _is_completion(data):
        convs = [{"messages": [data]}]
    else:
        raise KitInputError("not an OpenAI message list (expected a list of {role, content} messages)", file=file)
    traces: list[dict[str, Any]] = []
    attempts: dict[str, int] = {}
    for n, conv in enumerate(convs):
        where = f"{file}[{n}]" if file and len(convs) > 1 else file
        cid = str(conv.get("case_id") or case_id)
        trace = conversation(conv, case_id=cid, file=where)
        trace.setdefault("attempt", attempts.get(cid, 0))
        attempts[cid] = trace["attempt"] + 1
        traces.append(trace)
    return traces


def from_converted(
    extra: dict[str, Any],
    messages: list[dict[str, Any]],
    errors: dict[str, str],
    *,
    case_id: str,
    file: str | None,
    source_format: str,
) -> list[dict[str, Any]]:
    """One trace from messages another reader converted to OpenAI's: a tool result that reader saw fail marks
    its span's error (unless the span already has one); the trace names the format it came in."""
    [trace] = from_openai({**extra, "messages": messages}, case_id=str(extra.get("case_id") or case_id), file=file)
    for span in trace["spans"]:
        cid = span.get("tool_call_id")
        if span["kind"] == "tool" and cid in errors and not span.get("error"):
            span["error"] = errors[cid]
    trace["source_format"] = source_format
    return [trace]


def _expand(raw: list[Any], file: str | None) -> list[_Message]:
    """Messages, with raw chat-completion objects replaced by the assistant message they carry."""
    out: list[_Message] = []
    for i, item in enumerate(raw):
        if _is_completion(item):
            choices = item.get("choices") or []
            if not choices or not isinstance(choices[0], dict):
                raise KitInputError(f"message {i}: chat completion without choices", file=file)
            msg = dict(choices[0].get("message") or {})
            msg.setdefault("role", "assistant")
            for key in ("usage", "model"):
                if item.get(key) is not None:
                    msg.setdefault(key, item[key])
            if choices[0].get("finish_reason"):
                msg.setdefault("finish_reason", choices[0]["finish_reason"])
            item = msg
        if not isinstance(item, dict):
            raise KitInputError(f"message {i}: expected an object, got {type(item).__name__}", file=file)
        if "parts" in item and "content" not in item:  # the GenAI conventions' or Gemini's parts: not read here
            raise KitInputError(
                f"message {i}: content in `parts`, which an OpenAI chat message does not carry", file=file
            )
        if "contents" in item and "content" not in item:  # the Agent Framework's messages: its own reader's
            raise KitInputError(
                f"message {i}: content in `contents`, which an OpenAI chat message does not carry", file=file
            )
        try:
            msg = _Message.model_validate(item)
            strict_text(msg.content, f"message {i}", "an OpenAI chat message")
        except ValidationError as e:
            raise KitInputError(f"message {i}: {error_line(e)}", file=file) from None
        except UnknownBlock as e:  # a block this reader would drop (an Anthropic tool_use, a Converse toolUse)
            raise KitInputError(str(e), file=file) from None
        out.append(msg)
    return out


def conversation(conv: dict[str, Any], *, case_id: str, file: str | None = None) -> dict[str, Any]:
    """One conversation object -> one trace dict."""
    raw = list(conv["messages"])
    if conv.get("response") is not None:
        raw.append(conv["response"])
    messages = _expand(raw, file)
    try:
        results = _pair_results(messages)
    except KitInputError as e:
        raise KitInputError(e.message, file=file) from None
    by_name = [m for m in messages if m.role == "function"]  # legacy results, matched by order

    spans: list[dict[str, Any]] = []
    turn_of = _turns(messages)
    at = {id(m): n for n, m in enumerate(messages)}
    model = conv.get("model")
    final_output: str | None = None
    last_finish: str | None = None
    last_had_calls = False
    for i, m in enumerate(messages):
        if m.role in ("tool", "function"):
            continue  # emitted with the call they answer
        text = content_text(m.content)
        first = len(spans)
        if m.role != "assistant":
            spans.append({"kind": "message", "role": m.role, "content": text, "turn": turn_of[i]})
            continue
        model = m.model or model
        llm: dict[str, Any] = {"kind": "llm", "name": m.model or model}
        if m.usage is not None:
            llm["tokens_in"], llm["tokens_out"] = m.usage.tokens_in, m.usage.tokens_out
            if m.usage.cache_read_input_tokens is not None:
                llm["tokens_cache_read"] = m.usage.cache_read_input_tokens
            if m.usage.cache_creation_input_tokens is not None:
                llm["tokens_cache_write"] = m.usage.cache_creation_input_tokens
        if m.latency_ms is not None:
            llm["latency_ms"] = m.latency_ms
        spans.append(llm)
        calls = list(m.tool_calls or [])
        if m.function_call is not None:
            calls.append(_ToolCall(id=None, function=m.function_call))
        if text:  # the model wrote this before its tool calls ran
            spans.append({"kind": "message", "role": "assistant", "content": text})
        for span in spans[first:]:
            span["turn"] = turn_of[i]
        for j, call in enumerate(calls):
            result = results.get((i, j))
            spans.append(_tool_span(call, result, by_name))
            # A call run in a later turn (held until the user confirmed) belongs to the turn it ran in.
            spans[-1]["turn"] = turn_of[at[id(result)]] if result is not None and id(result) in at else turn_of[i]
        final_output = text or _finish_answer(calls)
        last_finish = m.finish_reason
        last_had_calls = bool(calls) and calls[-1].function.name != FINISH_TOOL

    if not turn_of or turn_of[-1] == 0:  # one turn is the whole trace: spans without turns
        for span in spans:
            del span["turn"]
    _spread_total_usage(spans, conv.get("usage"))
    finish = conv.get("finish_reason")
    if finish is None:
        finish = _finish_reason(final_output, last_finish, last_had_calls)
    trace: dict[str, Any] = {
        "case_id": case_id,
        "model": model,
        "final_output": conv.get("final_output", final_output),
        "finish_reason": finish,
        "spans": spans,
        "source_format": "openai",
    }
    for key in ("attempt", "run_id", "latency_ms", "end_state"):
        if conv.get(key) is not None:
            trace[key] = conv[key]
    return trace


def _turns(messages: list[_Message]) -> list[int]:
    """The turn of each message: a user message starts a turn (consecutive user messages share one, and
    what comes before the first, a system prompt, is turn 0)."""
    out: list[int] = []
    turn, answered = 0, False
    for m in messages:
        if m.role == "user" and answered:
            turn, answered = turn + 1, False
        answered = answered or m.role not in ("user", "system", "developer")
        out.append(turn)
    return out


def _pair_results(messages: list[_Message]) -> dict[tuple[int, int], _Message]:
    """Each tool message answers the earliest call of its id that is still unanswered when it arrives.
    Agents reuse ids (tau-bench's GPT-4o runs do in a quarter of their runs): keyed by id alone, the last
    result would silently become every same-id call's result."""
    open_calls: list[tuple[str, tuple[int, int]]] = []
    out: dict[tuple[int, int], _Message] = {}
    for i, m in enumerate(messages):
        if m.role == "assistant":
            open_calls += [(c.id, (i, j)) for j, c in enumerate(m.tool_calls or []) if c.id]
        elif m.role == "tool" and m.tool_call_id:
            n = next((n for n, (cid, _) in enumerate(open_calls) if cid == m.tool_call_id), None)
            if n is None:
                # A result no call asked for: dropping it would lose data without a word.
                raise KitInputError(f"message {i}: tool result for call id {m.tool_call_id!r} answers no open call")
            out[open_calls.pop(n)[1]] = m
    return out


def _tool_span(call: _ToolCall, result: _Message | None, legacy: list[_Message]) -> dict[str, Any]:
    args, arg_error = parse_arguments(call.function.arguments)
    span: dict[str, Any] = {"kind": "tool", "name": call.function.name, "input": args, "tool_call_id": call.id}
    if result is None and call.id is None:
        result = next((r for r in legacy if r.name == call.function.name), None)
        if result is not None:
            legacy.remove(result)
    if result is None:
        # No tool message answers it: the model asked, and nothing shows that it ran (an agent that
        # confirms before acting holds such calls back). Kept, as requested; the tool-call checks skip it.
        span["output"] = None
        span["error"] = arg_error
        span["executed"] = False
        return span
    output = maybe_json(content_text(result.content))
    span["output"] = output
    span["error"] = arg_error or result_error(output)
    if arg_error:
        span["raw_arguments"] = call.function.arguments
    return span


def _finish_answer(calls: list[_ToolCall]) -> str | None:
    """The answer an agent gave through its finish action, when it ended that way."""
    if not calls or calls[-1].function.name != FINISH_TOOL:
        return None
    args, _ = parse_arguments(calls[-1].function.arguments)
    for key in ("answer", "output", "message", "response", "text"):
        if isinstance(args.get(key), str):
            return args[key]
    return ""


def _spread_total_usage(spans: list[dict[str, Any]], usage: Any) -> None:
    """A conversation-level usage total goes on the first model call, so budget sums stay right."""
    if not isinstance(usage, dict):
        return
    llm = [s for s in spans if s["kind"] == "llm"]
    if not llm or any("tokens_in" in s for s in llm):
        return  # per-call usage wins; adding the total too would count tokens twice
    u = _Usage.model_validate(usage)
    llm[0]["tokens_in"], llm[0]["tokens_out"] = u.tokens_in, u.tokens_out


def _finish_reason(final_output: str | None, last_finish: str | None, last_had_calls: bool) -> str | None:
    # A conversation that ends on an assistant answer finished; one cut off by the token limit or ending
    # on a pending tool call did not (the `finished` check must then fail).
    if last_finish == "length":
        return "step_cap"
    if final_output is not None and not last_had_calls:
        return "finish"
    return None
