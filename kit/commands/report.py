"""`kit report [--run REF] [--html FILE] [--compare A B] [--md FILE]`: a run's results from the store as
text, and one self-contained HTML page of every source of that `make evals` (or of two runs side by side)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

SOURCES = ("kit", "deepeval", "promptfoo")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", default="latest", help="run id (or prefix), latest, previous, git sha or model id")
    parser.add_argument("--source", choices=SOURCES, help="only runs from this source")
    parser.add_argument("--k", type=int, default=2, help="k for the per-case pass^k column (default 2)")
    parser.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report to FILE")
    parser.add_argument(
        "--compare",
        nargs=2,
        metavar=("A", "B"),
        help="put two runs side by side (run ids, git shas or model ids); default: the run and its baseline",
    )
    parser.add_argument("--md", metavar="FILE", help="write the side-by-side comparison as Markdown (a PR comment)")
    parser.add_argument(
        "--runs", nargs="+", metavar="ID", help="the runs the page holds (default: the run and the latest run of "
        "every other source and agent recorded within an hour of it)"
    )  # fmt: skip
    parser.add_argument("--cases", help="case file or folder to read tags from (default: the settings' cases)")
    parser.add_argument("--recent", type=int, default=20, help="how many runs each HTML trend shows")
    parser.add_argument("--store", help="store file (default $KIT_STORE or .kit/evals.duckdb)")


def _resolve_pair(con, a: str, b: str, source: str | None) -> tuple[str, str]:
    """Both sides of a comparison from one source: B (the later) decides it when none is given, since a git
    sha or model id matches the runs of every source."""
    from kit.store import queries as q

    rb = q.resolve_run(con, b, source)
    src = source or q.run_info(con, rb)["source"]
    return q.resolve_run(con, a, src), q.resolve_run(con, b, src)


def _choose(con, args: argparse.Namespace) -> tuple[list[str], tuple[str, str] | None]:
    """The runs the page holds, and the two put side by side: --compare's, else the run and its baseline."""
    from kit.report import page_data as pd
    from kit.store import queries as q

    if args.compare:
        pair = _resolve_pair(con, *args.compare, args.source)
        return ([q.resolve_run(con, r) for r in args.runs] if args.runs else list(dict.fromkeys(pair))), pair
    run_id = q.resolve_run(con, args.run, args.source)
    base = q.baseline_run(con, run_id)
    runs = [q.resolve_run(con, r) for r in args.runs] if args.runs else pd.batch(con, run_id)
    return runs, ((base, run_id) if base else None)


def _tags(args: argparse.Namespace) -> dict[str, list[str]]:
    from kit.errors import KitInputError
    from kit.report.page_data import case_tags
    from kit.settings import load_settings

    try:
        path = Path(args.cases) if args.cases else load_settings().cases
    except KitInputError:
        return {}
    return case_tags(path) if Path(path).exists() else {}


def main(args: argparse.Namespace) -> int:
    from kit.errors import KitInputError
    from kit.gate.policy import load_policy
    from kit.report import compare_view, html, text
    from kit.report import page_data as pd
    from kit.report.data import gather
    from kit.settings import load_settings
    from kit.store import open_store
    from kit.store import queries as q

    if args.k < 1:
        print("kit report: --k must be at least 1", file=sys.stderr)
        return 2
    try:  # the side by side's verdicts are the gate's: its alpha
        alpha = load_policy(load_settings().gates).baseline.alpha if args.html or args.md or args.compare else 0.05
    except KitInputError as e:
        print(f"kit report: {e}", file=sys.stderr)
        return 2
    store = open_store(args.store)
    if not store.path.exists() and not store.spool.exists():
        print(f"kit report: no store at {store.path} (run the evals first, or set KIT_STORE)", file=sys.stderr)
        return 2
    tags = _tags(args) if args.html else {}
    page = side = None
    try:
        with store.connect() as con:
            if args.html or args.md or args.compare:
                run_ids, pair = _choose(con, args)
                side = pd.side_by_side(con, *pair, k=args.k, alpha=alpha) if pair else None
            if args.html:
                page = html.render(html.gather(con, run_ids, k=args.k, side=side, tags=tags, recent=args.recent))
            if args.compare:
                cmp = q.compare(con, *pair)
                shown = text.render_comparison(cmp, q.run_info(con, pair[0]), q.run_info(con, pair[1]))
        if not args.compare:  # a store session of its own, after the one above has let the lock go
            shown = text.render(gather(store, args.run, k=args.k, source=args.source, recent=args.recent))
    except q.RunNotFound as e:
        print(f"kit report: {store.path}: {e}", file=sys.stderr)
        return 2
    print(shown)
    if page is not None:
        _write(Path(args.html), page)
        print(f"\nHTML report written to {args.html}")
    if args.md:
        if side is None:
            print(f"kit report: no baseline to compare with; {args.md} not written", file=sys.stderr)
        else:
            _write(Path(args.md), compare_view.markdown(side))
            print(f"Markdown comparison written to {args.md}")
    return 0


def _write(path: Path, content: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content, encoding="utf-8")
