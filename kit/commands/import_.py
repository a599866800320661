"""`kit import FILE... [--format F] [--case-id ID] [--tool-error REGEX] [-o OUT.json]`: recorded runs -> kit traces.

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
from pathlib import Path

from kit.errors import KitInputError
from kit.importers import FORMATS, import_files


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
        "--strict",
        action="store_true",
        help="exit 2 when an attribute the importer knows is in a shape it cannot read (default: a warning)",
    )
    parser.add_argument("-o", "--output", metavar="OUT", help="write here (default: standard output)")


def main(args: argparse.Namespace) -> int:
    notes: list[str] = []
    try:
        traces = import_files(args.files, args.format, case_id=args.case_id, tool_error=args.tool_error, notes=notes)
    except KitInputError as e:
        print(f"kit import: {e}", file=sys.stderr)
        return 2
    for note in notes:
        print(f"kit import: {'error' if args.strict else 'warning'}: {note}", file=sys.stderr)
    if notes and args.strict:
        print(f"kit import: --strict: {len(notes)} attribute(s) not read; nothing written", file=sys.stderr)
        return 2
    # Runs of one case from several files must not share an attempt number (the store keys on it).
    seen: dict[str, set[int]] = {}
    for n, t in enumerate(traces):
        attempt = t.get("attempt")
        if attempt is None:
            attempt = 0
        if not isinstance(attempt, int) or isinstance(attempt, bool) or attempt < 0:
            print(f"kit import: trace {n} (case {t['case_id']!r}): attempt must be a whole number", file=sys.stderr)
            return 2
        used = seen.setdefault(t["case_id"], set())
        while attempt in used:
            attempt += 1
        t["attempt"] = attempt
        used.add(attempt)
    bare = sum(1 for t in traces if _no_content(t))
    if bare:
        print(
            f"kit import: note: {bare} of {len(traces)} run(s) recorded model calls but no messages (content capture "
            "off, or logged as OTLP log events: give the logs file too): no arguments or answer to check",
            file=sys.stderr,
        )
    text = json.dumps(traces[0] if len(traces) == 1 else traces, indent=2, default=str)
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(text + "\n", encoding="utf-8")
        print(f"kit import: {len(traces)} trace(s) written to {args.output}", file=sys.stderr)
        return 0
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        # `kit import FILE | head`: the reader has what it wanted. Point stdout at /dev/null so the
        # interpreter's final flush does not complain either.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def _no_content(trace: dict) -> bool:
    kinds = {s.get("kind") for s in trace.get("spans") or [] if isinstance(s, dict)}
    return "llm" in kinds and "message" not in kinds and trace.get("final_output") is None
