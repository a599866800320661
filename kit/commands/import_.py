"""`kit import FILE... [--format F] [--case-id ID] [--case-attr NAME] [--tool-error REGEX] [--end-state FILE]
[--strict] [-o OUT.json]`: recorded runs -> kit traces.

Reads OpenAI chat-completions message lists and OTLP JSON exports (GenAI semantic conventions, OpenInference,
OpenLLMetry; one document or the Collector's one batch per line; with OTLP logs files joined to their spans)
and writes the traces in the contract format: one JSON object for one trace, a JSON list for several.
Exit 0 on success, 2 on bad input (the message names the file).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from kit.errors import KitInputError
from kit.importers import FORMATS, iter_import
from kit.importers.end_state import read_end_state
from kit.pricing import priced


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help="recorded runs (JSON or JSON Lines)")
    parser.add_argument("--format", choices=FORMATS, help="force the input format (default: detected)")
    parser.add_argument("--case-id", metavar="ID", help="the golden case these runs belong to (default: file name)")
    parser.add_argument(
        "--tool-error",
        metavar="REGEX",
        help="a tool result that is text matching REGEX is that call's error (e.g. '^Error:')",
    )
    parser.add_argument(
        "--case-attr",
        metavar="NAME",
        help="the span or resource attribute naming each run's case, for many cases in one file (default: kit.case_id)",
    )
    parser.add_argument(
        "--end-state",
        metavar="FILE",
        help="the tables after the run (JSON {table: [rows]}, or a SQLite or DuckDB file): the trace's end_state, "
        "for end_state checks (one run only)",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="exit 2 when an attribute the importer knows is in a shape it cannot read (default: a warning)",
    )
    parser.add_argument("-o", "--output", metavar="OUT", help="write here (default: standard output)")


def main(args: argparse.Namespace) -> int:
    from kit.settings import load_settings

    # The settings are validated as every command validates them (a bad one is exit 2, named), and their
    # [tool.kit.prices] price the imported calls, over genai-prices'.
    prices = load_settings().prices
    notes: list[str] = []
    out_dir = Path(args.output).parent if args.output else None
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
    # Each trace is written as it is made, to a temporary file beside the output: memory does not grow
    # with the runs, and bad input anywhere leaves nothing written.
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=out_dir, suffix=".part", delete=False) as tmp:
        try:
            code, count = _write_all(args, notes, tmp, prices)
        except BaseException:
            tmp.close()
            Path(tmp.name).unlink(missing_ok=True)
            raise
    part = Path(tmp.name)
    if code != 0:
        part.unlink(missing_ok=True)
        return code
    if args.output:
        try:
            part.replace(args.output)
        except OSError as e:
            part.unlink(missing_ok=True)
            print(f"kit import: {args.output}: {e.strerror}", file=sys.stderr)
            return 2
        print(f"kit import: {count} trace(s) written to {args.output}", file=sys.stderr)
        return 0
    try:
        with part.open("rb") as f:
            sys.stdout.flush()
            out = getattr(sys.stdout, "buffer", None)
            while chunk := f.read(1 << 20):
                if out is None:  # a text-only stdout (redirected in process)
                    sys.stdout.write(chunk.decode())
                else:
                    out.write(chunk)
            (out or sys.stdout).flush()
    except BrokenPipeError:
        # `kit import FILE | head`: the reader has what it wanted. Point stdout at /dev/null so the
        # interpreter's final flush does not complain either.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    finally:
        part.unlink(missing_ok=True)
    return 0


def _write_all(
    args: argparse.Namespace, notes: list[str], out: IO[str], prices: Mapping[str, tuple[float, float]]
) -> tuple[int, int]:
    """(exit code, traces written): every trace converted and written to `out`, as one JSON object for one
    trace and a JSON list for several (the bytes of json.dumps(..., indent=2) of the whole)."""
    # Runs of one case from several files must not share an attempt number (the store keys on it).
    seen: dict[str, set[int]] = {}
    held: str | None = None  # the first trace, until a second one says the output is a list
    n = bare = unargued = 0
    try:
        state = read_end_state(args.end_state) if args.end_state else None
        traces = iter_import(
            args.files,
            args.format,
            case_id=args.case_id,
            tool_error=args.tool_error,
            notes=notes,
            case_attr=args.case_attr,
        )
        for t in traces:
            attempt = t.get("attempt")
            if attempt is None:
                attempt = 0
            if not isinstance(attempt, int) or isinstance(attempt, bool) or attempt < 0:
                print(f"kit import: trace {n} (case {t['case_id']!r}): attempt must be a whole number", file=sys.stderr)
                return 2, 0
            used = seen.setdefault(t["case_id"], set())
            while attempt in used:
                attempt += 1
            t["attempt"] = attempt
            used.add(attempt)
            if state is not None:
                if n:
                    raise KitInputError(
                        f"--end-state {args.end_state}: the tables after one run, and the import holds more than one "
                        "run: import each run with its own end state"
                    )
                if t.get("end_state"):
                    notes.append(f"the run's own end_state ({', '.join(t['end_state'])}) replaced by {args.end_state}")
                t.pop("end_state_columns", None)
                t.update(state.fields())  # the tables' rows, and their columns and types (empty tables too)
            priced(t, prices)  # model calls with tokens and no cost get their model's price, as live runs do
            bare += _no_content(t)
            unargued += _calls_without_arguments(t)
            text = json.dumps(t, indent=2, default=str)
            if n == 0:
                held = text
            else:
                if n == 1:
                    out.write("[\n" + _indented(held or ""))
                out.write(",\n" + _indented(text))
            n += 1
    except KitInputError as e:
        print(f"kit import: {e}", file=sys.stderr)
        return 2, 0
    for note in notes:
        print(f"kit import: {'error' if args.strict else 'warning'}: {note}", file=sys.stderr)
    if notes and args.strict:
        print(f"kit import: --strict: {len(notes)} problem(s) above; nothing written", file=sys.stderr)
        return 2, 0
    out.write((held if n == 1 else "[]" if n == 0 else "\n]") + "\n")
    if bare:
        calls = f", {unargued} tool call(s) no arguments" if unargued else ""
        print(
            f"kit import: note: {bare} of {n} run(s) recorded model calls but no messages{calls} (content capture "
            "off, or logged as OTLP log events: give the logs file too): no arguments or answer to check"
            + (CAPTURE_OFF if unargued else ""),
            file=sys.stderr,
        )
    return 0, n


def _indented(text: str) -> str:
    """An item of a list as json.dumps(indent=2) writes it: every line two spaces in (JSON text has no raw
    newline inside a string)."""
    return "  " + text.replace("\n", "\n  ")


def _no_content(trace: dict) -> bool:
    kinds = {s.get("kind") for s in trace.get("spans") or [] if isinstance(s, dict)}
    return "llm" in kinds and "message" not in kinds and trace.get("final_output") is None


# An exporter with content capture off (the OTel GenAI instrumentations' default, and Google ADK's) writes each
# tool call's span with its name and no arguments: said with the setting that turns it on, so an `arg` check's
# "called without <key>" on such a run is understood.
CAPTURE_OFF = (
    "; an `arg` check on those calls fails 'called without <key>'. Capture content where the agent runs: "
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only (Google ADK, the OTel GenAI instrumentations); "
    "OTEL_LOG_TOOL_DETAILS=1 and its logs file given with the traces (Claude Code, the Claude Agent SDK)"
)


def _calls_without_arguments(trace: dict) -> int:
    """Tool calls with no arguments in a run that recorded model calls but no messages (content capture off)."""
    if not _no_content(trace):
        return 0
    spans = [s for s in trace.get("spans") or [] if isinstance(s, dict)]
    return sum(1 for s in spans if s.get("kind") == "tool" and not s.get("input"))
