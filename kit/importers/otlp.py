"""OTLP JSON (an OpenTelemetry trace export) -> flat, decoded spans grouped by trace.

OTLP JSON nests `resourceSpans[].scopeSpans[].spans[]`; attributes are `[{key, value: {stringValue |
intValue | doubleValue | boolValue | arrayValue | kvlistValue | bytesValue}}]`, 64-bit integers and
timestamps arrive as strings, and enums (status code) as numbers or names. This module undoes all of
that; what the spans mean is for `kit.importers.semconv`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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


@dataclass
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


def attributes(kvs: list[_KeyValue]) -> dict[str, Any]:
    return {kv.key: value(kv.value) for kv in kvs}


def spans_by_trace(data: dict[str, Any], *, file: str | None = None) -> dict[str, list[OtelSpan]]:
    """Every span of the export, grouped by trace id (in order of first appearance), sorted by start."""
    out: dict[str, list[OtelSpan]] = {}
    for r, rs in enumerate(data.get("resourceSpans") or []):
        resource = attributes([_KeyValue.model_validate(a) for a in (rs.get("resource") or {}).get("attributes", [])])
        for s, ss in enumerate(rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans") or []):
            for n, raw in enumerate(ss.get("spans") or []):
                try:
                    sp = _Span.model_validate(raw)
                except ValidationError as e:
                    where = f"resourceSpans[{r}].scopeSpans[{s}].spans[{n}]"
                    raise KitInputError(f"{where}: {error_line(e)}", file=file) from None
                error = None
                if sp.status is not None and sp.status.code in STATUS_ERROR:
                    error = sp.status.message or "error"
                out.setdefault(sp.traceId, []).append(
                    OtelSpan(
                        trace_id=sp.traceId,
                        span_id=sp.spanId,
                        parent_id=sp.parentSpanId or None,
                        name=sp.name,
                        start_ns=int(sp.startTimeUnixNano or 0),
                        end_ns=int(sp.endTimeUnixNano or 0),
                        attrs=attributes(sp.attributes),
                        resource=resource,
                        error=error,
                        events=[(e.name, attributes(e.attributes)) for e in sp.events],
                    )
                )
    for spans in out.values():
        spans.sort(key=lambda x: (x.start_ns, -x.end_ns))  # a parent before its first child
    return out
