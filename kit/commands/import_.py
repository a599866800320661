"""`kit import FILE [--format F] [--case-id ID] [-o OUT.json]`: recorded runs -> kit traces.

Reads an OpenAI chat-completions message list or an OTLP JSON export (GenAI semantic conventions or
OpenInference) and writes the traces in the contract format: one JSON object for one trace, a JSON list
for several. Exit 0 on success, 2 on bad input (the message names the file).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from kit.errors import KitInputError
from kit.importers import FORMATS, import_file


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help="recorded runs (JSON or JSON Lines)")
    parser.add_argument("--format", choices=FORMATS, help="force the input format (default: detected)")
    parser.add_argument("--case-id", metavar="ID", help="the golden case these runs belong to (default: file name)")
    parser.add_argument("-o", "--output", metavar="OUT", help="write here (default: standard output)")


def main(args: argparse.Namespace) -> int:
    traces = []
    status = 0
    for path in args.files:
        try:
            traces += import_file(path, args.format, case_id=args.case_id)
        except KitInputError as e:
            print(f"kit import: {e}", file=sys.stderr)
            status = 2
    if status:
        return status
    # Runs of one case from several files must not share an attempt number (the store keys on it).
    seen: dict[str, set[int]] = {}
    for t in traces:
        used = seen.setdefault(t["case_id"], set())
        while t.get("attempt", 0) in used:
            t["attempt"] = t.get("attempt", 0) + 1
        used.add(t["attempt"])
    text = json.dumps(traces[0] if len(traces) == 1 else traces, indent=2, default=str)
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(text + "\n", encoding="utf-8")
        print(f"kit import: {len(traces)} trace(s) written to {args.output}", file=sys.stderr)
    else:
        print(text)
    return 0
