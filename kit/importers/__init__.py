"""Trace importers: recorded agent runs in other formats -> traces in the contract format (docs/CONTRACT.md).

    from kit.importers import import_file, convert
    traces = import_file("run.json", fmt=None, case_id="refund-happy-path")   # list[dict]

Formats: `openai` (chat-completions message lists), `otel` (OTLP JSON; each span read by the GenAI
semantic conventions or OpenInference, whichever it follows), `genai` / `openinference` (OTLP JSON read by
that convention only), and `trace` (already the contract format). `fmt=None` detects the format.
Every trace returned has passed the contract's validation (`kit.trace.parse_trace`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kit.errors import KitInputError

FORMATS = ("openai", "otel", "genai", "openinference", "trace")


def detect(data: Any) -> str | None:
    """The format of decoded JSON, or None when it is none of the known ones."""
    from kit.importers.openai_chat import is_openai
    from kit.importers.otlp import is_otlp

    if is_otlp(data):
        return "otel"
    if isinstance(data, dict) and "case_id" in data and isinstance(data.get("spans"), list):
        return "trace"
    if isinstance(data, list) and data and all(isinstance(d, dict) and "resourceSpans" in d for d in data):
        return "otel"
    if is_openai(data):
        return "openai"
    if isinstance(data, list) and data and all(isinstance(d, dict) and "case_id" in d for d in data):
        return "trace"
    return None


def convert(
    data: Any, fmt: str | None = None, *, case_id: str | None = None, file: str | None = None
) -> list[dict[str, Any]]:
    """Traces (contract dicts, validated) from decoded JSON in `fmt` (detected when None)."""
    from kit.trace import parse_trace

    fmt = fmt or detect(data)
    if fmt is None:
        raise KitInputError(
            "unknown trace format (expected an OpenAI message list, OTLP JSON with resourceSpans, "
            "or a kit trace); pass --format",
            file=file,
        )
    if fmt not in FORMATS:
        raise KitInputError(f"unknown format {fmt!r} (expected one of {', '.join(FORMATS)})", file=file)
    cid = case_id or (Path(file).stem if file else "imported")
    if fmt == "openai":
        from kit.importers.openai_chat import from_openai

        traces = from_openai(data, case_id=cid, file=file)
    elif fmt == "trace":
        traces = [dict(d) for d in (data if isinstance(data, list) else [data])]
        if case_id:
            for t in traces:
                t["case_id"] = case_id
    else:
        traces = _from_otel(data, fmt, cid, file)
    for n, t in enumerate(traces):
        where = f"{file}[{n}]" if file and len(traces) > 1 else file
        parse_trace(t, file=where)  # the contract's validation: a bad import fails here, naming the file
    return traces


def _from_otel(data: Any, fmt: str, case_id: str, file: str | None) -> list[dict[str, Any]]:
    from kit.importers.otlp import is_otlp, spans_by_trace
    from kit.importers.semconv import GENAI, OPENINFERENCE, build_trace

    exports = data if isinstance(data, list) else [data]
    if not all(is_otlp(d) for d in exports):
        raise KitInputError("not OTLP JSON (expected an object with resourceSpans)", file=file)
    convention = {"genai": GENAI, "openinference": OPENINFERENCE}.get(fmt)
    traces: list[dict[str, Any]] = []
    attempts: dict[str, int] = {}
    for export in exports:
        for spans in spans_by_trace(export, file=file).values():
            t = build_trace(spans, case_id=case_id, convention=convention)
            t["attempt"] = attempts.get(t["case_id"], 0)
            attempts[t["case_id"]] = t["attempt"] + 1
            traces.append(t)
    if not traces:
        raise KitInputError("the OTLP export holds no spans", file=file)
    return traces


def read_json(path: str | Path) -> Any:
    """Decoded JSON from a file: one document, or JSON Lines (a list of the lines' values)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise KitInputError(f"cannot read: {e.strerror}", file=str(p)) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        lines = [ln for ln in text.splitlines() if ln.strip()]
        if len(lines) > 1 and lines[0].lstrip().startswith(("{", "[")):
            out = []
            for n, line in enumerate(lines, 1):
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError as e2:
                    raise KitInputError(f"malformed JSON on line {n}: {e2.msg}", file=str(p)) from None
            return out
        raise KitInputError(f"malformed JSON at line {e.lineno}, column {e.colno}: {e.msg}", file=str(p)) from None


def import_file(path: str | Path, fmt: str | None = None, *, case_id: str | None = None) -> list[dict[str, Any]]:
    """Traces from a file in any supported format (see the module's docstring)."""
    data = read_json(path)
    # JSON Lines of messages is one conversation, not one trace per message.
    return convert(data, fmt, case_id=case_id, file=str(path))
