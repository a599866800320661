"""`kit gate`: exit 1, naming what failed, when the gated run breaks a rule of gates.yaml: a case's pass
fraction is under its floor (its own `min_pass_fraction`, else `hard.min_pass_fraction`), a check errored,
a soft gate's pass rate is under its floor, the run did not finish, or (with --baseline) a case fell since
the baseline (`baseline.new_failures`: every attempt passed there and not now, or a drop chance does not
explain) or a soft gate's pass rate dropped by more than gates.yaml allows. Every source (kit, DeepEval,
Promptfoo) is gated by the one rule set, kit.report.gate. Exit 2 on bad input (no such run, invalid
gates.yaml)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kit.store import Store


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--run",
        action="append",
        help="run(s) to gate (repeatable; default: the gated runs of the last make evals, else latest)",
    )
    parser.add_argument("--source", choices=("kit", "deepeval", "promptfoo"), help="only runs from this source")
    parser.add_argument("--baseline", help="a run to compare against: previous, run id, git sha or model id")
    parser.add_argument("--config", help="gate policy file (default: the settings' gates, gates.yaml)")
    parser.add_argument(
        "--cases", help="case file or folder whose min_pass_fraction floors apply (default: the settings' cases)"
    )
    parser.add_argument("--store", help="store file (default $KIT_STORE or .kit/evals.duckdb)")


def main(args: argparse.Namespace) -> int:
    from kit.errors import KitInputError
    from kit.report.data import gather
    from kit.report.gate import Baseline, load_policy, verdict
    from kit.settings import load_settings
    from kit.store import open_store
    from kit.store import queries as q

    try:
        if args.config and not Path(args.config).exists():
            raise KitInputError("no such gate policy file", file=args.config)
        policy = load_policy(Path(args.config) if args.config else load_settings().gates)
        floors, floor_notes = case_floors(Path(args.cases) if args.cases else load_settings().cases)
    except KitInputError as e:
        print(f"kit gate: {e}", file=sys.stderr)
        return 2
    store = open_store(args.store)
    # A disk that cannot take results may have lost the latest run: never gate the one before it instead.
    store.check_writable()
    failed = False
    for n in floor_notes:
        print(f"note: {n}")
    try:
        refs = args.run or _default_runs(store, args.source)
        for ref in refs:
            data = gather(store, ref, source=args.source)
            baseline = None
            if args.baseline:
                with store.connect() as con:
                    base = q.resolve_run(con, args.baseline, args.source or data.run["source"])
                    if base == data.run["run_id"]:
                        print(f"kit gate: baseline {args.baseline!r} is the gated run itself", file=sys.stderr)
                        return 2
                    flips = q.compare(con, base, data.run["run_id"])
                    baseline = Baseline(base, flips, q.case_counts(con, base), q.soft_gates(con, base))
            fails, notes = verdict(data, policy, baseline, floors)
            label = f"run {data.run['run_id']} ({data.run['source']})"
            for n in notes:
                print(f"note: {n}")
            if fails:
                failed = True
                print(f"gate FAILED for {label}: {len(fails)} problem(s)", file=sys.stderr)
                for f in fails:
                    print(f"  - {f}", file=sys.stderr)
            else:
                rate = data.totals["pass_rate"]
                print(f"gate passed for {label}" + (f": pass rate {rate:.1%}" if rate is not None else ""))
    except q.RunNotFound as e:
        print(f"kit gate: {store.path}: {e}", file=sys.stderr)
        return 2
    return 1 if failed else 0


def case_floors(path: Path) -> tuple[dict[str, float], list[str]]:
    """The cases' own floors (`min_pass_fraction`) by case id, and notes on what could not be read: a case
    whose file did not load is held to `hard.min_pass_fraction`, and the gate says so."""
    from kit.case import load_suite

    if not path.exists():
        return {}, [f"no case files at {path}: every case is held to hard.min_pass_fraction"]
    suite = load_suite(path)
    notes = [f"case floors: {e}; its cases are held to hard.min_pass_fraction" for e in suite.errors]
    return {c.id: c.min_pass_fraction for c in suite.cases if c.min_pass_fraction is not None}, notes


def _default_runs(store: Store, source: str | None) -> list[str]:
    """No --run: every gated run of the last `make evals` (never its red-team control), while no newer run
    was written; else `latest`."""
    from kit.store import queries as q

    if not store.path.exists():
        return ["latest"]
    with store.connect() as con:
        runs = q.last_evals(con)
        if source:
            runs = [r for r in runs if q.run_info(con, r)["source"] == source]
    return runs or ["latest"]
