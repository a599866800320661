"""`kit case from-trace`: a production conversation becomes a regression case in your repository.

    kit case from-trace TRACE_FILE [--format F] [--case ID] [--attempt N] [--out DIR] [--id ID] [--mask]
                                   [--mask-pattern REGEX]...
    kit case from-trace --run RUN [--case ID] [--attempt N] ...      (a stored run; default: latest)
    kit case from-trace --production TRACE_ID ...                    (a trace `kit serve` judged)

Without a file, the trace comes from the store: the named case's attempt, else the run's first failing one;
with --production, the production trace of that OpenTelemetry trace id (`kit serve` keeps a failing one's).
Writes the case (its turns, context and the checks to review), the trace, the tools' and the model's recordings
(kit.casegen.build). Exit 0 when written, 2 on bad input (a missing or unreadable trace, an id that is taken,
an --out outside the repository or through a symbolic link), naming it.
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from kit.errors import KitInputError

if TYPE_CHECKING:
    from kit.casegen.redact import Masker


def configure(parser: argparse.ArgumentParser) -> None:
    from kit.importers import FORMATS

    sub = parser.add_subparsers(dest="action", required=True)
    p = sub.add_parser("from-trace", help="write a case (checks to review, recordings) from a production trace")
    p.add_argument("file", nargs="?", type=Path, help="a trace file in any format `kit import` reads")
    p.add_argument("--format", choices=FORMATS, help="the file's format (default: detected), as `kit import --format`")
    p.add_argument("--run", help="a run in the store (latest, previous, a run id): its attempt's trace")
    p.add_argument("--production", metavar="TRACE_ID", help="a production trace in the store, by its trace id")
    p.add_argument("--case", help="the case whose trace to take (a run's, or one of several in the file)")
    p.add_argument("--attempt", type=int, help="the attempt of that case (default: its first failing one)")
    p.add_argument("--store", type=Path, help="the store (default: the settings')")
    p.add_argument("--cases", type=Path, help="the suite's cases (default: the settings')")
    p.add_argument("--out", type=Path, help="the folder to write the case into (default: the suite's cases folder)")
    p.add_argument("--id", help="the case's id (default: derived from the trace, never one the suite has)")
    p.add_argument("--tools", type=Path, help="the tools' schemas and effects (default: the nearest tools.json)")
    p.add_argument("--mask", action="store_true", help="mask e-mail addresses, phone numbers and card numbers")
    p.add_argument(
        "--mask-pattern",
        action="append",
        default=[],
        metavar="REGEX",
        help="also mask what this regular expression matches (repeatable)",
    )


def _masker(args: argparse.Namespace) -> Masker:
    from kit.casegen.redact import KINDS, Masker

    patterns = []
    for raw in args.mask_pattern:
        try:
            patterns.append(re.compile(raw))
        except re.error as e:
            raise KitInputError(f"--mask-pattern {raw!r}: not a regular expression ({e})") from None
    return Masker(KINDS if args.mask else (), patterns)


def main(args: argparse.Namespace) -> int:
    from kit.case import Suite, find_upwards, load_suite
    from kit.casegen import place, source
    from kit.casegen.build import CaseRequest, write_case
    from kit.names import terminal
    from kit.plan import current_plan
    from kit.settings import project_root

    if args.file is not None and args.run is not None:
        raise KitInputError("give a trace file or --run, not both")
    if args.production is not None and (args.file is not None or args.run is not None):
        raise KitInputError("give a trace file, --run or --production, one of them")
    if args.production is not None and (args.case is not None or args.attempt is not None or args.format):
        raise KitInputError("--case, --attempt and --format choose within a file or a run: not with --production")
    if args.attempt is not None and args.attempt < 0:
        raise KitInputError(f"--attempt {args.attempt}: an attempt is a whole number >= 0")
    masker = _masker(args)
    plan = current_plan(cases=args.cases)
    root = project_root(plan.settings)
    cases = Path(plan.cases)
    out = place.out_folder(args.out if args.out is not None else cases, root)
    if args.file is not None:
        src = source.from_file(args.file, args.format, case=args.case, attempt=args.attempt)
    elif args.production is not None:
        store = args.store if args.store is not None else Path(plan.store)
        src = source.from_production(store, args.production)
    else:
        store = args.store if args.store is not None else Path(plan.store)
        src = source.from_store(store, args.run or "latest", case=args.case, attempt=args.attempt)
    suite = load_suite(cases, plan.invariants) if cases.exists() else Suite([], [])
    tools = args.tools if args.tools is not None else find_upwards(out if out.exists() else cases, "tools.json")
    if tools is not None and not tools.is_file():
        raise KitInputError("no such tools file", file=str(tools))
    recordings = Path(plan.settings.recordings.folder)
    recordings = Path(os.path.abspath(recordings if recordings.is_absolute() else root / recordings))
    req = CaseRequest(
        source=src,
        suite=suite,
        out=out,
        invariants=plan.invariants,
        case_invariants=plan.invariants_for(out / "case.yaml"),
        tools=tools,
        recordings=recordings,
        root=root,
        wanted_id=args.id,
        masker=masker,
    )
    written = write_case(req)
    broken = written.verdicts.broken
    state = "broke " + ", ".join(j.result.name for j in broken) if broken else "passed the suite's checks"
    print(terminal(f"kit case: {written.case_id}: from {src.origin}, which {state}"))
    for path in written.files:
        print(f"  wrote {os.path.relpath(path)}")
    for line in written.lines:
        print(f"  {terminal(line)}")
    print("  review every check marked PROPOSED, then `kit lint` and commit")
    return 0
