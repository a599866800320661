"""`kit compare A B`: cases that flipped between two runs, the pass-rate change per case, and the checks
that caused each flip. A and B: run ids (or prefixes), latest, previous, latest~N, a git sha or a model
id. Without arguments: previous latest, where latest is the newest run that is not a red-team control
(right after `make evals`, its kit run) and previous is latest's baseline (the run before it of the same
source and agent)."""

from __future__ import annotations

import argparse
import json
import sys


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "a", nargs="?", default="previous", help="the earlier run (default previous: the baseline of latest)"
    )
    parser.add_argument("b", nargs="?", default="latest", help="the later run (default latest)")
    parser.add_argument("--source", choices=("kit", "deepeval", "promptfoo"), help="only runs from this source")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    parser.add_argument("--store", help="store file (default $KIT_STORE or .kit/evals.duckdb)")


def main(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from kit.report.text import render_comparison
    from kit.store import open_store
    from kit.store import queries as q

    store = open_store(args.store)
    try:
        with store.connect() as con:
            a = q.resolve_run(con, args.a, args.source)
            b = q.resolve_run(con, args.b, args.source)
            cmp = q.compare(con, a, b)
            run_a, run_b = q.run_info(con, a), q.run_info(con, b)
    except q.RunNotFound as e:
        print(f"kit compare: {store.path}: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(asdict(cmp), indent=2))
    else:
        print(render_comparison(cmp, run_a, run_b))
    return 0
