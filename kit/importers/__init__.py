"""Trace importers: recorded agent runs in other formats -> traces in the contract format (docs/CONTRACT.md).

    from kit.importers import import_file, convert
    traces = import_file("run.json", fmt=None, case_id="refund-happy-path")   # list[dict]

Formats: `openai` (chat-completions message lists), `anthropic` (Anthropic Messages: a message list with
`tool_use` / `tool_result` blocks, a Message, or its stream events), `converse` (Bedrock Converse messages, as
Strands Agents keeps them), `claude_agent` (the Claude Agent SDK's messages as the Claude Code CLI writes
them), `agent_framework` (the Microsoft Agent Framework's AgentResponse `to_dict()`ed, or its messages),
`otel` (OTLP JSON, or the spans the
OpenTelemetry SDK's ConsoleSpanExporter prints, as a JSON list or one object after another; each span read by the GenAI
semantic conventions or OpenInference, whichever it follows), `genai` / `openinference` (OTLP JSON read by
that convention only), `tau2` (tau-bench 2 simulation results: one multi-turn trace per simulation and
trial) and `trace` (already the contract format). `fmt=None` detects the format.
Every trace returned has passed the contract's validation (`kit.trace.parse_trace`). OTLP logs (content
recorded as log events) are read only together with the traces they belong to: `import_files`.
`tool_error` (a regular expression) marks tool results that are text matching it as the call's error.
`case_attr` names the span or resource attribute that says which case an OTel run belongs to (default
`kit.case_id`; without it, the run is `case_id`'s, or the file's). `notes` (a list) gets a line for each
attribute an importer knows by name but not in the shape it found (that content is not in the trace) and
for each run that lacks `case_attr`: the caller must say so (`kit import` warns; `--strict` refuses).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kit.errors import KitInputError

FORMATS = (
    "openai",
    "anthropic",
    "converse",
    "claude_agent",
    "agent_framework",
    "otel",
    "genai",
    "openinference",
    "trace",
    "tau2",
)
LOGS_ALONE = "OTLP logs hold no spans: give the traces file with it (kit import TRACES LOGS)"


def detect(data: Any) -> str | None:
    """The format of decoded JSON, or None when it is none of the known ones."""
    from kit.importers.agent_framework import is_agent_framework
    from kit.importers.anthropic import is_anthropic
    from kit.importers.claude_agent import is_claude_agent
    from kit.importers.converse import is_converse
    from kit.importers.openai_chat import is_openai
    from kit.importers.otlp import is_console, is_otlp
    from kit.importers.tau2 import is_tau2

    if is_otlp(data) or is_console(data):
        return "otel"
    if isinstance(data, list) and data and all(isinstance(d, dict) for d in data) and any(is_otlp(d) for d in data):
        return "otel"  # a Collector file: one batch per line, spans and perhaps logs
    if isinstance(data, dict) and "case_id" in data and isinstance(data.get("spans"), list):
        return "trace"
    if is_tau2(data):
        return "tau2"
    if is_claude_agent(data):
        return "claude_agent"
    if is_agent_framework(data):
        return "agent_framework"
    if is_anthropic(data):  # before OpenAI's: its messages have roles too, and blocks OpenAI's reader refuses
        return "anthropic"
    if is_converse(data):
        return "converse"
    if is_openai(data):
        return "openai"
    if isinstance(data, list) and data and all(isinstance(d, dict) and "case_id" in d for d in data):
        return "trace"
    return None


def convert(
    data: Any,
    fmt: str | None = None,
    *,
    case_id: str | None = None,
    file: str | None = None,
    logs: list[Any] | None = None,
    tool_error: str | None = None,
    notes: list[str] | None = None,
    case_attr: str | None = None,
) -> list[dict[str, Any]]:
    """Traces (contract dicts, validated) from decoded JSON in `fmt` (detected when None). `logs`: OTLP
    log records (`kit.importers.otlp.log_records`) to join to OTLP spans by span id."""
    from kit.importers.otlp import is_otlp_logs
    from kit.trace import parse_trace

    fmt = fmt or detect(data)
    if fmt is None:
        if is_otlp_logs(data) or (isinstance(data, list) and data and all(is_otlp_logs(d) for d in data)):
            raise KitInputError(LOGS_ALONE, file=file)
        raise KitInputError(_unknown_format(data), file=file)
    if fmt not in FORMATS:
        raise KitInputError(f"unknown format {fmt!r} (expected one of {', '.join(FORMATS)})", file=file)
    if logs and fmt not in ("otel", "genai", "openinference"):
        raise KitInputError("OTLP logs are read only together with OTLP traces", file=file)
    cid = case_id or (Path(file).stem if file else "imported")
    if fmt == "openai":
        from kit.importers.openai_chat import from_openai

        traces = from_openai(data, case_id=cid, file=file)
    elif fmt == "anthropic":
        from kit.importers.anthropic import from_anthropic

        traces = from_anthropic(data, case_id=cid, file=file)
    elif fmt == "converse":
        from kit.importers.converse import from_converse

        traces = from_converse(data, case_id=cid, file=file)
    elif fmt == "claude_agent":
        from kit.importers.claude_agent import from_claude_agent

        traces = from_claude_agent(data, case_id=cid, file=file)
    elif fmt == "agent_framework":
        from kit.importers.agent_framework import from_agent_framework

        traces = from_agent_framework(data, case_id=cid, file=file)
    elif fmt == "tau2":
        from kit.importers.tau2 import from_tau2, is_tau2

        if not is_tau2(data):
            raise KitInputError("not tau2 results (expected simulations with task_id and messages)", file=file)
        traces = from_tau2(data, file=file)
        if case_id:
            for t in traces:
                t["case_id"] = case_id
    elif fmt == "trace":
        items = data if isinstance(data, list) else [data]
        bad = next((n for n, d in enumerate(items) if not isinstance(d, dict)), None)
        if bad is not None:
            raise KitInputError(f"trace {bad}: expected an object, got {type(items[bad]).__name__}", file=file)
        traces = [dict(d) for d in items]
        for t in traces:
            if "attempt" in t and t["attempt"] is None:
                del t["attempt"]  # unnumbered: numbered on import, as a missing attempt is
        if case_id:
            for t in traces:
                t["case_id"] = case_id
    else:
        traces = _from_otel(data, fmt, cid, file, logs or [], notes if notes is not None else [], case_attr)
    if tool_error:
        mark_tool_errors(traces, tool_error)
    for n, t in enumerate(traces):
        where = f"{file}[{n}]" if file and len(traces) > 1 else file
        parse_trace(t, file=where)  # the contract's validation: a bad import fails here, naming the file
    return traces


def _unknown_format(data: Any) -> str:
    if isinstance(data, dict):
        found = "an object with keys " + ", ".join(repr(k) for k in list(data)[:8])
    elif isinstance(data, list):
        first = data[0] if data else None
        keys = ", ".join(repr(k) for k in list(first)[:8]) if isinstance(first, dict) else ""
        inner = f" of objects with keys {keys}" if keys else ""
        found = f"a list of {len(data)}{inner}"
    else:
        found = type(data).__name__
    return (
        f"unknown trace format: found {found} (expected an OpenAI message list, OTLP JSON with "
        "resourceSpans, or a kit trace); pass --format"
    )


def _from_otel(
    data: Any, fmt: str, case_id: str, file: str | None, logs: list[Any], notes: list[str], case_attr: str | None
) -> list[dict[str, Any]]:
    from kit.importers.mcp import protocol_only
    from kit.importers.otlp import console_spans, is_console, is_otlp, is_otlp_logs, log_records, spans_by_trace
    from kit.importers.semconv import GENAI, OPENINFERENCE, build_trace

    exports = data if isinstance(data, list) else [data]
    own_logs: list[Any] = []
    if is_console(exports):
        grouped = console_spans(exports, file=file, logs=logs)
    else:
        for n, d in enumerate(exports):
            if not (is_otlp(d) or is_otlp_logs(d)):
                where = f"line {n + 1}: " if len(exports) > 1 else ""
                raise KitInputError(f"{where}not OTLP JSON (expected an object with resourceSpans)", file=file)
        own_logs = [rec for d in exports if is_otlp_logs(d) for rec in log_records(d, file=file)]
        # One trace id is one run wherever its spans are: a Collector file splits a run over many lines.
        grouped = spans_by_trace([d for d in exports if is_otlp(d)], file=file, logs=list(logs) + own_logs)
        _no_stray_logs(own_logs, file)
    convention = {"genai": GENAI, "openinference": OPENINFERENCE}.get(fmt)
    traces: list[dict[str, Any]] = []
    attempts: dict[str, int] = {}
    for spans in by_session(grouped, case_attr=case_attr, notes=notes).values():
        if protocol_only(spans):  # an MCP session's handshake: no run of an agent
            continue
        try:
            mine: list[str] = []
            t = build_trace(spans, case_id=case_id, convention=convention, notes=mine, case_attr=case_attr)
            notes += [f"{file}: {n}" if file else n for n in mine]
        except KitInputError as e:
            raise KitInputError(e.message, file=file) from None
        t["attempt"] = attempts.get(t["case_id"], 0)
        attempts[t["case_id"]] = t["attempt"] + 1
        traces.append(t)
    if not traces:
        raise KitInputError("the OTLP export holds no spans", file=file)
    return traces


# Two traces of one conversation further apart than this are two runs: an id reused days later (a client
# that keeps its conversation id, a replayed recording) is not the same conversation.
SESSION_GAP_NS = 24 * 3600 * 10**9


def by_session(
    grouped: dict[str, list[Any]], *, case_attr: str | None = None, notes: list[str] | None = None
) -> dict[str, list[Any]]:
    """Traces of one conversation joined into one run: an app that traces each request, not each session,
    writes a trace per turn (or per model call), and tags them with `gen_ai.conversation.id` or OpenInference's
    `session.id`. Traces without one stay as they are. A conversation id is the run's only with its case
    (`case_attr`, `kit.case_id` by default) and its time: traces of one id naming other cases, or more than a
    day apart, are kept apart, each a run of its own, with a note."""
    from kit.importers.semconv import CASE_ID_ATTR, case_of, session_of

    sessions: dict[tuple[str, str | None], list[list[Any]]] = {}
    out: dict[str, list[Any]] = {}
    for trace_id, spans in grouped.items():
        session = session_of(spans)
        if session is None:
            out[trace_id] = spans
            continue
        key = (session, case_of(spans, case_attr or CASE_ID_ATTR))
        if key not in sessions:
            sessions[key] = []
            out[f"session:{len(sessions) - 1}"] = []  # its place among the runs, filled below
        sessions[key].append(spans)
    cases: dict[str, list[str | None]] = {}
    for n, ((session, case), traces) in enumerate(sessions.items()):
        cases.setdefault(session, []).append(case)
        traces.sort(key=lambda spans: min((x.start_ns for x in spans), default=0))
        runs: list[list[Any]] = [[]]
        last_end: int | None = None
        for spans in traces:
            start = min((x.start_ns for x in spans), default=0)
            if last_end is not None and start - last_end > SESSION_GAP_NS:
                if notes is not None:
                    days = (start - last_end) / (86400 * 10**9)
                    notes.append(
                        f"conversation {session!r}: trace {spans[0].trace_id} starts {days:.1f} days after the one "
                        "before it: imported as a run of its own, not a turn of the same conversation"
                    )
                runs.append([])
            runs[-1].extend(spans)
            last_end = max([last_end or 0, *(x.end_ns for x in spans)])
        out[f"session:{n}"] = runs[0]
        for k, extra in enumerate(runs[1:], 1):
            out[f"session:{n}:{k}"] = extra
    for session, named in cases.items():
        if len(named) > 1 and notes is not None:
            shown = ", ".join(repr(c) if c is not None else "(none)" for c in named)
            notes.append(
                f"conversation {session!r} is reused by the runs of several cases ({shown}): each case's "
                "traces imported as a run of its own"
            )
    for key, spans in out.items():
        if key.startswith("session:"):
            spans.sort(key=lambda x: (x.start_ns, -x.end_ns))  # a parent before its first child
    return out


def _no_stray_logs(logs: list[Any], file: str | None) -> None:
    stray = [rec for rec in logs if not rec.joined]
    if stray:
        raise KitInputError(
            f"{len(stray)} log record(s) name a span that is not in the traces (first: span {stray[0].span_id}, "
            f"event {stray[0].name!r}); give the traces file they belong to",
            file=file,
        )


def mark_tool_errors(traces: list[dict[str, Any]], pattern: str) -> None:
    """A tool result that is text in which `pattern` is found becomes that call's error; the output is kept.
    Many frameworks return "Error: ..." instead of raising."""
    try:
        rx = re.compile(pattern)
    except re.error as e:
        raise KitInputError(f"--tool-error: not a valid regular expression: {e}") from None
    for t in traces:
        for s in t.get("spans") or []:
            out = s.get("output") if isinstance(s, dict) else None
            if s.get("kind") == "tool" and not s.get("error") and isinstance(out, str) and rx.search(out):
                s["error"] = out


def _whole_run(item: Any) -> bool:
    """Whether one item of a list (or line of JSON Lines) is a whole run on its own: a conversation object,
    a tau-bench record or a kit trace (OTLP batches and single messages are parts of runs)."""
    if not isinstance(item, dict) or is_otlp_any(item):
        return False
    return (
        isinstance(item.get("messages"), list)  # an OpenAI conversation object, or a tau2 simulation
        or isinstance(item.get("traj"), list)
        or ("case_id" in item and isinstance(item.get("spans"), list))
    )


def is_otlp_any(data: Any) -> bool:
    from kit.importers.otlp import is_otlp, is_otlp_logs

    return is_otlp(data) or is_otlp_logs(data)


def iter_import(
    paths: list[str | Path],
    fmt: str | None = None,
    *,
    case_id: str | None = None,
    tool_error: str | None = None,
    notes: list[str] | None = None,
    case_attr: str | None = None,
) -> Iterator[dict[str, Any]]:
    """The traces of `import_files`, each as soon as it is made: a large file that is a list (or JSON Lines)
    of whole runs is converted a run at a time, so memory does not grow with it. Other files (OTLP, whose
    runs may be spread over the whole file, and small files) are read whole, together, where the first of
    them stands. Raises KitInputError at the first bad input."""
    from itertools import chain

    from kit.trace import json_items

    whole = []
    streams: dict[str, Iterator[Any]] = {}
    for path in paths:
        items = json_items(Path(path))
        first = next(items, None) if items is not None else None
        if items is not None and first is not None and not isinstance(first, KitInputError) and _whole_run(first[1]):
            streams[str(path)] = chain([first], items)
        else:
            whole.append(path)
    done_whole = False
    for path in paths:
        stream = streams.get(str(path))
        if stream is None:
            if not done_whole:
                done_whole = True
                yield from import_files(
                    whole, fmt, case_id=case_id, tool_error=tool_error, notes=notes, case_attr=case_attr
                )
            continue
        for item in stream:
            if isinstance(item, KitInputError):
                raise item
            where, data = item
            # A kit trace keeps its own case id unless one is given; a conversation without one takes the file's.
            cid = case_id if (fmt or detect(data)) == "trace" else case_id or Path(path).stem
            yield from convert(
                data, fmt, case_id=cid, file=where, tool_error=tool_error, notes=notes, case_attr=case_attr
            )


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
        objects = _one_after_another(text, str(p))
        if objects is not None:
            return objects
        # Lines end at "\n" only: str.splitlines would also cut at U+2028, U+0085 and others, which JSON
        # strings may hold unescaped. Blank lines are skipped but counted: an error names the file's line.
        lines = [(n, ln) for n, ln in enumerate(text.split("\n"), 1) if ln.strip()]
        if len(lines) > 1 and lines[0][1].lstrip().startswith(("{", "[")):
            out = []
            for n, line in lines:
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError as e2:
                    raise KitInputError(f"malformed JSON on line {n}: {e2.msg}", file=str(p)) from None
            return out
        raise KitInputError(f"malformed JSON at line {e.lineno}, column {e.colno}: {e.msg}", file=str(p)) from None


def _one_after_another(text: str, file: str) -> list[Any] | None:
    """JSON objects printed one after another, each over many lines (what the OpenTelemetry SDK's
    ConsoleSpanExporter writes), as a list; None when the text is not that. Text after a first object spread
    over several lines (a log line printed amid the spans) is an error naming its own line."""
    decoder = json.JSONDecoder()
    out: list[Any] = []
    pos, end = 0, len(text)
    first_spread = False
    while True:
        while pos < end and text[pos].isspace():
            pos += 1
        if pos == end:
            return out if len(out) > 1 else None
        spread = bool(out) and first_spread  # objects over several lines: not JSON Lines
        if text[pos] != "{":
            if spread:
                line = text.count("\n", 0, pos) + 1
                shown = text[pos : text.find("\n", pos) if "\n" in text[pos:] else end][:60]
                raise KitInputError(f"malformed JSON on line {line}: not a JSON object: {shown!r}", file=file)
            return None
        try:
            start = pos
            value, pos = decoder.raw_decode(text, pos)
            if not out:
                first_spread = "\n" in text[start:pos]
        except json.JSONDecodeError as e:
            if spread:
                raise KitInputError(f"malformed JSON on line {e.lineno}: {e.msg}", file=file) from None
            return None
        out.append(value)


def import_file(
    path: str | Path,
    fmt: str | None = None,
    *,
    case_id: str | None = None,
    tool_error: str | None = None,
    notes: list[str] | None = None,
    case_attr: str | None = None,
) -> list[dict[str, Any]]:
    """Traces from a file in any supported format (see the module's docstring)."""
    data = read_json(path)
    # JSON Lines of messages is one conversation, not one trace per message.
    return convert(data, fmt, case_id=case_id, file=str(path), tool_error=tool_error, notes=notes, case_attr=case_attr)


def import_files(
    paths: list[str | Path],
    fmt: str | None = None,
    *,
    case_id: str | None = None,
    tool_error: str | None = None,
    notes: list[str] | None = None,
    case_attr: str | None = None,
) -> list[dict[str, Any]]:
    """Traces from several files; files of OTLP logs only are joined to the OTLP traces given with them."""
    from kit.importers.otlp import is_otlp_logs, log_records

    decoded = [(str(p), read_json(p)) for p in paths]
    logs: list[Any] = []
    rest = []
    for name, data in decoded:
        items = data if isinstance(data, list) else [data]
        if items and all(is_otlp_logs(d) for d in items):
            logs += [rec for d in items for rec in log_records(d, file=name)]
        else:
            rest.append((name, data))
    if logs and not any(detect(d) == "otel" or fmt in ("otel", "genai", "openinference") for _, d in rest):
        where = next(str(p) for p in paths if str(p) not in {n for n, _ in rest})
        raise KitInputError(LOGS_ALONE, file=where)
    traces: list[dict[str, Any]] = []
    for name, data in rest:
        otel = (fmt or detect(data)) in ("otel", "genai", "openinference")
        traces += convert(
            data,
            fmt,
            case_id=case_id,
            file=name,
            logs=logs if otel else None,
            tool_error=tool_error,
            notes=notes,
            case_attr=case_attr,
        )
    _no_stray_logs(logs, next((str(p) for p in paths if str(p) not in {n for n, _ in rest}), None))
    return traces
