"""`kit report [--run REF] [--html FILE]`: a run's results from the store, as text or one HTML file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", default="latest", help="run id (or prefix), latest, previous, git sha or model id")
    parser.add_argument("--source", choices=("kit", "deepeval", "promptfoo"), help="only runs from this source")
    parser.add_argument("--k", type=int, default=2, help="k for the per-case pass^k column (default 2)")
    parser.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report to FILE")
    parser.add_argument("--recent", type=int, default=20, help="how many recent runs the HTML trend shows")
    parser.add_argument("--store", help="store file (default $KIT_STORE or .kit/evals.duckdb)")


def main(args: argparse.Namespace) -> int:
    from kit.report import html, text
    from kit.report.data import gather
    from kit.store import open_store
    from kit.store.queries import RunNotFound

    if args.k < 1:
        print("kit report: --k must be at least 1", file=sys.stderr)
        return 2
    store = open_store(args.store)
    if not store.path.exists() and not store.spool.exists():
        print(f"kit report: no store at {store.path} (run the evals first, or set KIT_STORE)", file=sys.stderr)
        return 2
    try:
        data = gather(store, args.run, k=args.k, source=args.source, recent=args.recent)
    except RunNotFound as e:
        print(f"kit report: {store.path}: {e}", file=sys.stderr)
        return 2
    print(text.render(data))
    if args.html:
        out = Path(args.html)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(html.render(data), encoding="utf-8")
        print(f"\nHTML report written to {out}")
    return 0
