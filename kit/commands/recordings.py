"""`kit recordings prune`: remove the model-call recordings no case uses (kit.recording.prune): a case's file
when the suite has no such case any more, and the attempts past what its case runs (`runs:`, or `--runs`).
The judge's recordings (`_judge/<case id>.json`) follow their case; the red team's (its attacks' case ids)
are kept. A suite with a case file that does not load
prunes nothing: its cases' recordings would look unused."""

from __future__ import annotations

import argparse
import sys


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True)
    prune = sub.add_parser("prune", help="remove the recordings no case uses")
    prune.add_argument("--cases", help="the suite (default: the settings' cases)")
    prune.add_argument("--runs", type=int, default=0, help="keep attempts up to N per case even past its `runs:`")
    prune.add_argument("--dry-run", action="store_true", help="say what would go, remove nothing")


def main(args: argparse.Namespace) -> int:
    from kit.case import MAX_RUNS
    from kit.commands.init import REDTEAM_CASE_ID
    from kit.errors import KitInputError
    from kit.mcp.attacked import CASE_ID as MCP_ATTACK_CASE_ID
    from kit.plan import make_plan
    from kit.recording import prune
    from kit.recording.files import JUDGE_PREFIX
    from kit.recording.format import case_ids
    from kit.settings import load_settings

    plan = make_plan(load_settings(), cases=args.cases, defer_agent=True)
    suite = plan.suite
    if suite.errors:
        raise KitInputError(f"the suite does not load, nothing pruned: {suite.errors[0]}")
    used = {c.id: max(c.runs, args.runs) for c in suite.cases}
    # The red team's attacks run under a case id of their own, every attack in one attempt: always kept.
    for kept in (REDTEAM_CASE_ID, MCP_ATTACK_CASE_ID):
        used.setdefault(kept, MAX_RUNS)
    folder = plan.settings.recordings.folder
    if args.dry_run:
        unused = [name for name, _ in case_ids(folder) if name.removeprefix(JUDGE_PREFIX) not in used]
        for name in unused:
            print(f"would remove {name}: no case uses it")
        return 0
    gone = prune(folder, used)
    for line in gone:
        print(f"removed {line}")
    print(f"{len(gone)} recording(s) pruned in {folder}", file=sys.stderr)
    return 0
