"""`kit run`: run the golden cases on an agent N times, in parallel, and evaluate every run.

    kit run [--cases golden/] [--runs N] [--agent module:callable] [--variant NAME] [--json]
            [--shard i/n --out PATH] [--replay [DIR] | --record DIR] [--timeout S] [--workers N]

Prints per case the pass fraction, pass^k and the failing checks with their reasons; results go to the
store (`.kit/evals.duckdb`, or $KIT_STORE) as each run finishes, so a killed `kit run` keeps every finished
result; when the store cannot be written they go to `.kit/runs/<run_id>.json` and the exit is 2. With
`--shard i/n`, runs one deterministic slice of the cases and writes its results to a file the store merges.
A case file that does not load is an error result of the run (which is then `incomplete`), so a gate never
passes a suite with cases missing. Exit 0 when every run passes, 1 when any fails or errors, 2 on bad input.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields
from typing import Any

from kit.errors import KitInputError
from kit.runner.store_writer import RunRequest, run_merge, run_plan


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cases", metavar="PATH", help="a case file or folder (default: the settings' cases, golden)")
    parser.add_argument("--invariants", metavar="FILE", help="invariants file (default: nearest invariants.yaml)")
    parser.add_argument("-k", "--only", action="append", metavar="GLOB", help="run only cases whose id matches")
    parser.add_argument("--runs", type=int, metavar="N", help="runs per case (default: each case's `runs`)")
    parser.add_argument(
        "--agent", metavar="MODULE:CALLABLE", help="your agent (default: the settings' agent, else the reference agent)"
    )
    parser.add_argument("--variant", metavar="NAME", help="a fault variant of the reference agent")
    parser.add_argument(
        "--policy",
        choices=("deterministic", "model"),
        help="the reference agent's policy (default: the settings' agent_policy, deterministic)",
    )
    tapes = parser.add_mutually_exclusive_group()
    tapes.add_argument(
        "--replay",
        nargs="?",
        const="golden/cassettes",
        metavar="DIR",
        help="tools answer from recorded cassettes DIR/<case_id>.json (default DIR: golden/cassettes)",
    )
    tapes.add_argument("--record", metavar="DIR", help="record each case's first run to DIR/<case_id>.json")
    parser.add_argument(
        "--timeout", type=float, metavar="S", help="seconds per run (default: the settings' agent_timeout, 60)"
    )
    parser.add_argument("--workers", type=int, metavar="N", help="parallel runs (default: the CPUs available)")
    parser.add_argument(
        "--pool",
        default="process",
        choices=("process", "thread", "serial"),
        help="how runs are parallelised (default: process)",
    )
    parser.add_argument("--shard", metavar="I/N", help="run shard I of N (1-based) and write it to --out")
    parser.add_argument("--out", metavar="PATH", help="results file: a .json file, or a folder of Parquet files")
    parser.add_argument(
        "--save-runs",
        metavar="FILE",
        help="also write every run (trace or error) as JSON Lines, for other front ends to judge (KIT_REPLAY_RUNS)",
    )
    parser.add_argument(
        "--concurrency", type=int, metavar="N", help="a user's agent's calls in flight at once (default: settings)"
    )
    parser.add_argument(
        "--run-id",
        metavar="ID",
        help="the suite run's id (default: $KIT_RUN_ID or a new one); give every shard of one suite the same id",
    )
    parser.add_argument(
        "--merge",
        nargs="+",
        metavar="SHARD",
        help="merge shard files into the store and report the suite run they make up",
    )
    parser.add_argument("--store", metavar="FILE", help="the DuckDB store (default: $KIT_STORE or .kit/evals.duckdb)")
    parser.add_argument("--no-store", action="store_true", help="write results to a JSON file, not the store")
    parser.add_argument("--json", action="store_true", help="print one JSON object (the `kit check --json` shape)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    parser.add_argument("-v", "--verbose", action="store_true", help="list passing cases too")


def main(args: argparse.Namespace) -> int:
    request = RunRequest(**{f.name: getattr(args, f.name) for f in fields(RunRequest)})
    try:
        if args.merge:
            from dataclasses import replace

            from kit.settings import load_settings

            return run_merge(replace(request, store=args.store or str(load_settings().store)))[0]
        return run_plan(_plan(args), request)
    except KitInputError as e:
        print(f"kit run: {e}", file=sys.stderr)
        return 2


def _plan(args: argparse.Namespace) -> Any:
    """The command line over the settings ([tool.kit], KIT_* variables), resolved by the one plan every
    front end runs from. Variant, policy and cassettes drive the reference agent only."""
    from kit.plan import make_plan
    from kit.settings import load_settings

    # Each flag is a setting, validated as the setting is from KIT_* or [tool.kit] (one validation each).
    flags = {
        "agent": "--agent",
        "cases": "--cases",
        "invariants": "--invariants",
        "agent_timeout": "--timeout",
        "run_id": "--run-id",
        "store": "--store",
        "concurrency": "--concurrency",
    }
    settings = load_settings(
        {key: getattr(args, flag[2:].replace("-", "_")) for key, flag in flags.items()}, flags=flags
    )
    return make_plan(settings, variant=args.variant, policy=args.policy, replay=args.replay, record=args.record)
