"""The model's answers in a trace as model-call recordings (`kit.recording`): attempt 0 of the new case, one
exchange per model call, in the order they were made, written through `kit.recording`'s own format.

Only an OpenTelemetry export holds what the model was sent and what it answered; a kit trace, a message list
or a framework's return holds the answers but not the requests, and then the case runs the model live. From an
OpenInference LLM span:
- `input.value` that is the request body (`{"model", "messages", "tools", ...}`, as OpenInference's OpenAI
  instrumentation records it) is the request as the SDK sent it: the recording replays exactly;
- `input.value` that is the message list alone (OpenInference's Agents SDK instrumentation) is not the request:
  the SDK sends more (its tools), so no recording made from it could match; the case runs the model live
  (recordings mode `record-missing` records it on its first run);
- `output.value`: the chat completion (`{"choices": ...}`) as it came, else its message made one.
The request's path is `<base_url's path>/chat/completions` (OpenInference notes the client's base URL), else
`/v1/chat/completions`. Spans of other conventions are not read: the case says the model runs live.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from kit.casegen.redact import Masker
from kit.casegen.source import Source
from kit.errors import KitInputError
from kit.recording import Exchange, Recording, Request, Response

OTEL_FORMATS = ("otel", "openinference", "genai")
JSON_TYPE = {"content-type": "application/json"}
LIVE = "the model runs live"


def _json(v: Any) -> Any:
    if isinstance(v, str):
        try:
            return json.loads(v)
        except ValueError:
            return None
    return v


def _spans(source: Source) -> list[Any]:
    """The export's spans of the trace's run (its OTel trace id), in start order."""
    from kit.importers import read_json
    from kit.importers.otlp import console_spans, is_console, is_otlp, spans_by_trace

    if source.file is None or source.fmt not in OTEL_FORMATS:
        return []
    data = read_json(source.file)
    exports = data if isinstance(data, list) else [data]
    if is_console(exports):
        grouped = console_spans(exports, file=str(source.file))
    else:
        grouped = spans_by_trace([d for d in exports if is_otlp(d)], file=str(source.file))
    wanted = source.trace.get("otel_trace_id")
    if wanted is not None and wanted in grouped:
        spans = grouped[wanted]
    elif len(grouped) == 1:
        spans = next(iter(grouped.values()))
    else:
        return []
    return sorted(spans, key=lambda s: s.start_ns)


def _path(attrs: dict[str, Any]) -> str:
    params = _json(attrs.get("llm.invocation_parameters"))
    base = params.get("base_url") if isinstance(params, dict) else None
    path = urlsplit(base).path if isinstance(base, str) else "/v1"
    return path.rstrip("/") + "/chat/completions"


def _request(attrs: dict[str, Any]) -> tuple[dict[str, Any] | None, bool]:
    """The request body, and whether it is the body as sent (else the messages alone)."""
    sent = _json(attrs.get("input.value"))
    model = attrs.get("llm.model_name")
    if isinstance(sent, dict) and isinstance(sent.get("messages"), list):
        return sent, True
    if isinstance(sent, list) and model:
        return {"model": model, "messages": sent}, False
    return None, False


def _response(attrs: dict[str, Any], n: int) -> dict[str, Any] | None:
    got = _json(attrs.get("output.value"))
    if isinstance(got, dict) and isinstance(got.get("choices"), list):
        return got
    message = got[0] if isinstance(got, list) and got and isinstance(got[0], dict) else None
    if message is None:
        return None
    message = {k: v for k, v in message.items() if v is not None}
    prompt, completion = attrs.get("llm.token_count.prompt"), attrs.get("llm.token_count.completion")
    body: dict[str, Any] = {
        "id": f"chatcmpl-from-trace-{n}",
        "object": "chat.completion",
        "created": 0,
        "model": attrs.get("llm.model_name"),
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}
        ],
    }
    if isinstance(prompt, int) and isinstance(completion, int):
        body["usage"] = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    return body


def recording(source: Source, case_id: str, masker: Masker) -> tuple[Recording | None, str]:
    """The case's recording of the model's answers (None when the trace cannot give one that replays) and a
    line saying what it holds or why the model runs live."""
    llm = [s for s in _spans(source) if s.attrs.get("openinference.span.kind") == "LLM"]
    if not llm:
        return None, f"{LIVE}: the trace holds no model inputs and outputs to record"
    exchanges: list[Exchange] = []
    for n, span in enumerate(llm):
        (sent, whole), got = _request(span.attrs), _response(span.attrs, n)
        if sent is None or got is None:
            return None, f"{LIVE}: model call {n + 1} of the trace lacks its request or its answer"
        if not whole:
            # A recording is keyed on the whole request: one without the tools the SDK sends never matches,
            # and a recording that cannot match would make a replay fail where a live run could record it.
            return None, (
                f"{LIVE}: the trace holds the messages the model was sent but not the whole request (its tools), "
                "so no recording of it could match; recordings mode record-missing records it on the first run"
            )
        exchanges.append(
            Exchange(
                request=Request(method="POST", path=_path(span.attrs), body=masker.value(sent)),
                response=Response(status=200, headers=JSON_TYPE, body=masker.value(got)),
            )
        )
    models = {e.request.body.get("model") for e in exchanges if isinstance(e.request.body, dict)}
    model = models.pop() if len(models) == 1 else None
    try:
        made = Recording(case=case_id, model=model, attempts={"0": exchanges})
    except ValueError as e:
        raise KitInputError(f"the model calls of the trace make no recording: {e}", file=str(source.file)) from None
    return made, f"{len(exchanges)} model call(s) recorded (attempt 0) as the requests were sent"


def path(folder: Path, case_id: str) -> Path:
    """Where the case's recording goes: the recordings folder's file for it (`kit.recording.path_for`)."""
    from kit.recording import path_for

    return path_for(folder, case_id)


def text(made: Recording) -> str:
    from kit.recording.format import to_text

    return to_text(made)
