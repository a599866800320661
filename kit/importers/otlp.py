"""OTLP JSON (an OpenTelemetry trace export) -> flat, decoded spans grouped by trace.

OTLP JSON nests `resourceSpans[].scopeSpans[].spans[]`; attributes are `[{key, value: {stringValue |
intValue | doubleValue | boolValue | arrayValue | kvlistValue | bytesValue}}]`, 64-bit integers and
timestamps arrive as strings, and enums (status code) as numbers or names. This module undoes all of
that; what the spans mean is for `kit.importers.semconv`.

The OpenTelemetry SDK's `ConsoleSpanExporter` prints each span as its own JSON object (`ReadableSpan.to_json`:
`context.trace_id` / `span_id` and `parent_id` as `0x` hex, ISO times, `status.status_code` by name,
attributes as a plain object): a JSON list of those, or the objects one after another as printed, is read
too (`console_spans`).
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kit.errors import KitInputError, error_line

STATUS_ERROR = (2, "2", "STATUS_CODE_ERROR", "ERROR")


class _Status(BaseModel):
    model_config = ConfigDict(extra="allow")
    code: int | str | None = None
    message: str | None = None


class _KeyValue(BaseModel):
    model_config = ConfigDict(extra="allow")
    key: str
    value: dict[str, Any] = Field(default_factory=dict)


class _Event(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str = ""
    timeUnixNano: int | str | None = None
    attributes: list[_KeyValue] = Field(default_factory=list)


class _Span(BaseModel):
    model_config = ConfigDict(extra="allow")
    traceId: str = ""
    spanId: str = ""
    parentSpanId: str | None = None
    name: str = ""
    startTimeUnixNano: int | str = 0
    endTimeUnixNano: int | str = 0
    attributes: list[_KeyValue] = Field(default_factory=list)
    events: list[_Event] = Field(default_factory=list)
    status: _Status | None = None


@dataclass(slots=True)
class OtelSpan:
    """One span, decoded: attributes as a plain dict, times in nanoseconds."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int
    end_ns: int
    attrs: dict[str, Any]
    resource: dict[str, Any]
    error: str | None  # the status message (or "error") when the status is ERROR
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    @property
    def latency_ms(self) -> float | None:
        if not self.start_ns or not self.end_ns:
            return None
        return round((self.end_ns - self.start_ns) / 1e6, 3)


def is_otlp(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("resourceSpans"), list)


def is_otlp_logs(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("resourceLogs"), list)


def _ns(raw: Any, where: str, name: str, file: str | None) -> int:
    """A timestamp in nanoseconds (OTLP JSON writes 64-bit integers as strings), or exit 2 naming the field."""
    if raw is None or raw == "":
        return 0
    try:
        return int(raw)
    except (TypeError, ValueError):
        raise KitInputError(f"{where}.{name}: not a number of nanoseconds: {str(raw)[:40]!r}", file=file) from None


def value(v: Any) -> Any:
    """An OTLP AnyValue as a Python value."""
    if not isinstance(v, dict) or not v:
        return None
    if "stringValue" in v:
        return v["stringValue"]
    if "intValue" in v:
        return int(v["intValue"])
    if "doubleValue" in v:
        return float(v["doubleValue"])
    if "boolValue" in v:
        return bool(v["boolValue"])
    if "arrayValue" in v:
        return [value(x) for x in (v["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in v:
        return {kv["key"]: value(kv.get("value")) for kv in (v["kvlistValue"] or {}).get("values", [])}
    if "bytesValue" in v:
        return v["bytesValue"]
    return None


def attributes(kvs: list[_KeyValue] | list[_PlainKeyValue]) -> dict[str, Any]:
    return {kv.key: value(kv.value) for kv in kvs}


def spans_by_trace(
    exports: list[dict[str, Any]], *, file: str | None = None, logs: list[LogRecord] | None = None
) -> dict[str, list[OtelSpan]]:
    """Every span of every export (the lines of a Collector file, where one trace is often split over
    several batches), grouped by trace id in order of first appearance, sorted by start. Log records that
    name a span become that span's events."""
    out: dict[str, list[OtelSpan]] = {}
    for line, data in enumerate(exports):
        _add_spans(data, out, file=f"{file}:{line + 1}" if file and len(exports) > 1 else file)
    return _grouped(out, logs)


def _grouped(out: dict[str, list[OtelSpan]], logs: list[LogRecord] | None) -> dict[str, list[OtelSpan]]:
    if logs:
        by_id = {s.span_id: s for spans in out.values() for s in spans}
        for rec in logs:
            if rec.span_id in by_id:
                by_id[rec.span_id].events.append((rec.name, rec.payload))
                rec.joined = True
    for spans in out.values():
        spans.sort(key=lambda x: (x.start_ns, -x.end_ns))  # a parent before its first child
    return out


def _add_spans(data: dict[str, Any], out: dict[str, list[OtelSpan]], *, file: str | None) -> None:
    for r, rs in enumerate(data.get("resourceSpans") or []):
        resource = attributes([_KeyValue.model_validate(a) for a in (rs.get("resource") or {}).get("attributes", [])])
        for s, ss in enumerate(rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans") or []):
            for n, raw in enumerate(ss.get("spans") or []):
                sp = _plain_span(raw)
                if sp is None:  # anything but the plain shape: validated, so a wrong part is named
                    try:
                        sp = _Span.model_validate(raw)
                    except ValidationError as e:
                        where = f"resourceSpans[{r}].scopeSpans[{s}].spans[{n}]"
                        raise KitInputError(f"{where}: {error_line(e)}", file=file) from None
                where = f"resourceSpans[{r}].scopeSpans[{s}].spans[{n}]"
                error = None
                if sp.status is not None and sp.status.code in STATUS_ERROR:
                    error = sp.status.message or "error"
                out.setdefault(sp.traceId, []).append(
                    OtelSpan(
                        trace_id=sp.traceId,
                        span_id=sp.spanId,
                        parent_id=sp.parentSpanId or None,
                        name=sp.name,
                        start_ns=_ns(sp.startTimeUnixNano, where, "startTimeUnixNano", file),
                        end_ns=_ns(sp.endTimeUnixNano, where, "endTimeUnixNano", file),
                        attrs=attributes(sp.attributes),
                        resource=resource,
                        error=error,
                        events=[(e.name, attributes(e.attributes)) for e in sp.events],
                    )
                )


class _PlainStatus:
    __slots__ = ("code", "message")

    def __init__(self, code: Any, message: Any) -> None:
        self.code, self.message = code, message


class _PlainKeyValue:
    __slots__ = ("key", "value")

    def __init__(self, key: str, value: dict[str, Any]) -> None:
        self.key, self.value = key, value


class _PlainEvent:
    __slots__ = ("attributes", "name")

    def __init__(self, name: str, attributes: list[_PlainKeyValue]) -> None:
        self.name, self.attributes = name, attributes


class _PlainSpan:
    """A span read from a plain dict, with the fields `_Span` has: what validation would give, unchanged."""

    __slots__ = (
        "attributes",
        "endTimeUnixNano",
        "events",
        "name",
        "parentSpanId",
        "spanId",
        "startTimeUnixNano",
        "status",
        "traceId",
    )


_INT_OR_STR = (int, str)


def _plain_kvs(raw: Any) -> list[_PlainKeyValue] | None:
    """Attributes that are a list of `{key: str, value: object}`, else None."""
    if type(raw) is not list:
        return None
    out = []
    for kv in raw:
        if type(kv) is not dict or type(kv.get("key")) is not str:
            return None
        v = kv.get("value", _EMPTY)
        if type(v) is not dict:
            return None
        out.append(_PlainKeyValue(kv["key"], v))
    return out


_EMPTY: dict[str, Any] = {}


def _plain_span(raw: Any) -> _PlainSpan | None:
    """The span when every field it has is of exactly the type `_Span` declares (pydantic would pass it through
    as it is), else None: per-span validation costs more than reading most exports, so it is kept for the rest."""
    if type(raw) is not dict:
        return None
    g = raw.get
    sp = _PlainSpan()
    for name, default in (("traceId", ""), ("spanId", ""), ("name", "")):
        v = g(name, default)
        if type(v) is not str:
            return None
        setattr(sp, name, v)
    parent = g("parentSpanId")
    if parent is not None and type(parent) is not str:
        return None
    sp.parentSpanId = parent
    for name in ("startTimeUnixNano", "endTimeUnixNano"):
        v = g(name, 0)
        if type(v) not in _INT_OR_STR:
            return None
        setattr(sp, name, v)
    attrs = _plain_kvs(g("attributes", []))
    if attrs is None:
        return None
    sp.attributes = attrs
    events = []
    raw_events = g("events", [])
    if type(raw_events) is not list:
        return None
    for e in raw_events:
        if type(e) is not dict:
            return None
        ename, when, ev_attrs = e.get("name", ""), e.get("timeUnixNano"), _plain_kvs(e.get("attributes", []))
        if type(ename) is not str or (when is not None and type(when) not in _INT_OR_STR) or ev_attrs is None:
            return None
        events.append(_PlainEvent(ename, ev_attrs))
    sp.events = events
    status = g("status")
    if status is not None:
        if type(status) is not dict:
            return None
        code, message = status.get("code"), status.get("message")
        if (code is not None and type(code) not in _INT_OR_STR) or (message is not None and type(message) is not str):
            return None
        status = _PlainStatus(code, message)
    sp.status = status
    return sp


def is_console_span(d: Any) -> bool:
    """One span as the SDK's ConsoleSpanExporter prints it (`ReadableSpan.to_json`)."""
    return (
        isinstance(d, dict)
        and isinstance(d.get("context"), dict)
        and "span_id" in d["context"]
        and "trace_id" in d["context"]
        and "start_time" in d
    )


def is_console(data: Any) -> bool:
    return isinstance(data, list) and bool(data) and all(is_console_span(d) for d in data)


def _hex(v: Any) -> str:
    return str(v or "").removeprefix("0x")


def _iso_ns(raw: Any, where: str, name: str, file: str | None) -> int:
    """An ISO time as the SDK prints it (`2026-11-30T22:18:15.123456Z`) in nanoseconds since the epoch."""
    if raw is None or raw == "":
        return 0
    try:
        t = datetime.fromisoformat(str(raw).replace("Z", "+00:00"))
    except ValueError:
        raise KitInputError(f"{where}.{name}: not an ISO time: {str(raw)[:40]!r}", file=file) from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    return calendar.timegm(t.utctimetuple()) * 1_000_000_000 + t.microsecond * 1000


def console_spans(
    data: list[dict[str, Any]], *, file: str | None = None, logs: list[LogRecord] | None = None
) -> dict[str, list[OtelSpan]]:
    """ConsoleSpanExporter's spans grouped by trace id, as `spans_by_trace` groups OTLP's."""
    out: dict[str, list[OtelSpan]] = {}
    for n, d in enumerate(data):
        where = f"span {n}"
        attrs = d.get("attributes") or {}
        resource = (d.get("resource") or {}).get("attributes") or {}
        status = d.get("status") or {}
        if not isinstance(attrs, dict) or not isinstance(resource, dict) or not isinstance(status, dict):
            raise KitInputError(f"{where}: attributes, resource and status must be objects", file=file)
        error = None
        if status.get("status_code") in STATUS_ERROR:
            error = status.get("description") or "error"
        events = []
        for e in d.get("events") or []:
            if isinstance(e, dict):
                ev_attrs = e.get("attributes")
                events.append((str(e.get("name") or ""), dict(ev_attrs) if isinstance(ev_attrs, dict) else {}))
        trace_id = _hex(d["context"].get("trace_id"))
        out.setdefault(trace_id, []).append(
            OtelSpan(
                trace_id=trace_id,
                span_id=_hex(d["context"].get("span_id")),
                parent_id=_hex(d.get("parent_id")) or None,
                name=str(d.get("name") or ""),
                start_ns=_iso_ns(d.get("start_time"), where, "start_time", file),
                end_ns=_iso_ns(d.get("end_time"), where, "end_time", file),
                attrs=dict(attrs),
                resource=dict(resource),
                error=error,
                events=events,
            )
        )
    return _grouped(out, logs)


@dataclass
class LogRecord:
    """One OTLP log record that belongs to a span: GenAI content logged as events."""

    span_id: str
    name: str
    payload: dict[str, Any]  # the record's attributes, and its body under "body"
    joined: bool = False  # set once a span of the traces took it


def log_records(data: dict[str, Any], *, file: str | None = None) -> list[LogRecord]:
    """The log records of an OTLP logs export (`resourceLogs[].scopeLogs[].logRecords[]`) that name a span."""
    out = []
    for r, rl in enumerate(data.get("resourceLogs") or []):
        for s, sl in enumerate((rl or {}).get("scopeLogs") or []):
            for n, rec in enumerate((sl or {}).get("logRecords") or []):
                if not isinstance(rec, dict):
                    raise KitInputError(f"resourceLogs[{r}].scopeLogs[{s}].logRecords[{n}]: not an object", file=file)
                try:
                    attrs = attributes([_KeyValue.model_validate(a) for a in rec.get("attributes") or []])
                except ValidationError as e:
                    where = f"resourceLogs[{r}].scopeLogs[{s}].logRecords[{n}]"
                    raise KitInputError(f"{where}: {error_line(e)}", file=file) from None
                name = rec.get("eventName") or attrs.get("event.name") or ""
                if rec.get("spanId"):
                    out.append(LogRecord(str(rec["spanId"]), str(name), {**attrs, "body": value(rec.get("body"))}))
    return out
