"""An OTLP/HTTP trace export's body -> decoded spans (`kit.importers.otlp.OtelSpan`), or a `BadBatch` naming
what is wrong.

OTLP/HTTP sends an `ExportTraceServiceRequest` as protobuf (`application/x-protobuf`) or as OTLP JSON
(`application/json`), optionally gzip- or deflate-compressed (`Content-Encoding`). JSON is read by the
importer's own reader (`kit.importers.otlp.spans_by_trace`); protobuf by `opentelemetry-proto`'s generated
classes, each span turned into the same `OtelSpan` the JSON reader makes (ids as lower-case hex, bytes
values as base64 text as OTLP JSON writes them), so what the spans mean is read by one importer.
"""

from __future__ import annotations

import base64
import gzip
import zlib
from typing import Any

import orjson

from kit.errors import KitInputError
from kit.importers.otlp import STATUS_ERROR, OtelSpan

PROTOBUF, JSON = "application/x-protobuf", "application/json"
MAX_BODY = 64 * 1024 * 1024  # the OTel exporters' own default max_request_size
_ZERO_TRACE, _ZERO_SPAN = "0" * 32, "0" * 16


class BadBatch(ValueError):
    """A batch that cannot be read: the HTTP status and the message the sender is told."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def media_type(content_type: str | None) -> str:
    """The body's kind from its Content-Type (`application/json; charset=utf-8` is JSON)."""
    kind = (content_type or "").split(";", 1)[0].strip().lower()
    if kind in (PROTOBUF, "application/protobuf"):
        return PROTOBUF
    if kind == JSON:
        return JSON
    raise BadBatch(
        f"unsupported Content-Type {content_type or '(none)'!r}: OTLP/HTTP sends {PROTOBUF} or {JSON}", status=415
    )


def decompressed(body: bytes, encoding: str | None) -> bytes:
    """The body without its Content-Encoding (gzip, deflate or none), at most MAX_BODY bytes."""
    enc = (encoding or "identity").strip().lower()
    if enc in ("", "identity"):
        return body
    try:
        if enc == "gzip":
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif enc == "deflate":
            d = zlib.decompressobj()
        else:
            raise BadBatch(f"unsupported Content-Encoding {encoding!r} (gzip, deflate or none)", status=415)
        out = d.decompress(body, MAX_BODY + 1)
    except (zlib.error, gzip.BadGzipFile) as e:
        raise BadBatch(f"body is not valid {enc}: {e}") from None
    if len(out) > MAX_BODY:
        raise BadBatch(f"body is over {MAX_BODY} bytes once decompressed", status=413)
    return out


def spans_of(body: bytes, kind: str) -> list[OtelSpan]:
    """Every span of one export request, in the order sent. A body that is not an export request, or a span
    without a trace or span id, is a BadBatch naming it."""
    spans = _protobuf(body) if kind == PROTOBUF else _json(body)
    for n, s in enumerate(spans):
        if not s.trace_id or s.trace_id == _ZERO_TRACE:
            raise BadBatch(f"span {n} ({s.name!r}): traceId is empty or all zeros")
        if not s.span_id or s.span_id == _ZERO_SPAN:
            raise BadBatch(f"span {n} ({s.name!r}) of trace {s.trace_id}: spanId is empty or all zeros")
    return spans


def _json(body: bytes) -> list[OtelSpan]:
    from kit.importers.otlp import is_otlp, spans_by_trace

    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as e:
        raise BadBatch(f"malformed JSON: {e}") from None
    if isinstance(data, dict) and not data:
        return []  # an empty export request
    if not is_otlp(data):
        raise BadBatch("not an OTLP trace export: expected a JSON object with resourceSpans (a list)")
    try:
        grouped = spans_by_trace([data])
    except KitInputError as e:
        raise BadBatch(e.message) from None
    except (TypeError, AttributeError, KeyError, ValueError) as e:  # a nested part of the wrong type
        raise BadBatch(f"not an OTLP trace export: {type(e).__name__}: {e}") from None
    except RecursionError:
        raise BadBatch("an attribute value is nested too deeply to read") from None
    return [s for spans in grouped.values() for s in spans]


def _protobuf(body: bytes) -> list[OtelSpan]:
    try:
        from google.protobuf.message import DecodeError
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    except ImportError:
        raise BadBatch(
            f"this receiver reads {JSON} only: protobuf needs opentelemetry-proto (pip install "
            "'agent-eval-kit[serve]'), or set the exporter's protocol to http/json",
            status=415,
        ) from None

    try:
        request = ExportTraceServiceRequest.FromString(body)
    except (DecodeError, RuntimeError, ValueError) as e:
        raise BadBatch(f"not an OTLP ExportTraceServiceRequest in protobuf: {e}") from None
    out: list[OtelSpan] = []
    append = out.append
    span = OtelSpan
    hexed: dict[bytes, str] = {}  # a trace's id comes on each of its spans: made text once per batch
    for rs in request.resource_spans:
        resource = _attrs(rs.resource.attributes)
        for ss in rs.scope_spans:
            for sp in ss.spans:
                raw = sp.trace_id
                tid = hexed.get(raw)
                if tid is None:
                    tid = hexed[raw] = raw.hex()
                status = sp.status
                events = sp.events
                append(
                    span(
                        tid,
                        sp.span_id.hex(),
                        sp.parent_span_id.hex() or None,
                        sp.name,
                        sp.start_time_unix_nano,
                        sp.end_time_unix_nano,
                        _attrs(sp.attributes),
                        resource,
                        (status.message or "error") if status.code in STATUS_ERROR else None,
                        [(e.name, _attrs(e.attributes)) for e in events] if events else [],
                    )
                )
    return out


def _attrs(kvs: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in kvs:
        v = kv.value
        text = v.string_value  # most attributes are text: read with no call to ask which value is set
        out[kv.key] = text if text else _value(v)  # "" is an unset string too, or another kind: asked
    return out


def _value(v: Any) -> Any:
    """An AnyValue as the JSON reader (`kit.importers.otlp.value`) gives it."""
    which = v.WhichOneof("value")
    if which is None:
        return None
    if which == "string_value":
        return v.string_value
    if which == "int_value":
        return v.int_value
    if which == "bool_value":
        return v.bool_value
    if which == "double_value":
        return v.double_value
    if which == "array_value":
        return [_value(x) for x in v.array_value.values]
    if which == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in v.kvlist_value.values}
    if which == "bytes_value":
        return base64.b64encode(v.bytes_value).decode()
    return None
