"""`kit compare A B`: cases that flipped between two runs with the checks that caused each flip, and every
case told from chance: both pass fractions with their Wilson 95% intervals, the p-value of the change
(one-sided Fisher exact, Holm over the cases compared) and its verdict (regression, improvement, noise,
unchanged), the flaky cases by name, each suite's pass^k with its interval, and the smallest drop the runs
can detect at gates.yaml's `baseline.alpha`. A and B: run ids (or prefixes), latest, previous, latest~N, a
git sha or a model id. Without arguments: previous latest, where latest is the newest run that is not a
red-team control (right after `make evals`, its kit run) and previous is latest's baseline (the run before
it of the same source, kind and agent)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "a", nargs="?", default="previous", help="the earlier run (default previous: the baseline of latest)"
    )
    parser.add_argument("b", nargs="?", default="latest", help="the later run (default latest)")
    parser.add_argument("--source", choices=("kit", "deepeval", "promptfoo"), help="only runs from this source")
    parser.add_argument("--k", type=int, default=2, help="k of the suite's pass^k shown beside pass^1 (default 2)")
    parser.add_argument("--config", help="gate policy file whose baseline.alpha applies (default: the settings')")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    parser.add_argument("--store", help="store file (default $KIT_STORE or .kit/evals.duckdb)")


def main(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from kit.aggregate import evidence
    from kit.errors import KitInputError
    from kit.gate.policy import load_policy
    from kit.gate.rules import RunRules
    from kit.names import terminal
    from kit.report.compare_view import evidence_text
    from kit.report.text import newly_successful_attacks, render_comparison
    from kit.settings import load_settings
    from kit.store import open_store
    from kit.store import queries as q

    if args.k < 1:
        print("kit compare: --k must be at least 1", file=sys.stderr)
        return 2
    try:
        if args.config and not Path(args.config).exists():
            raise KitInputError("no such gate policy file", file=args.config)
        policy = load_policy(Path(args.config) if args.config else load_settings().gates)
    except KitInputError as e:
        print(f"kit compare: {e}", file=sys.stderr)
        return 2
    store = open_store(args.store)
    try:
        with store.connect() as con:
            a = q.resolve_run(con, args.a, args.source)
            b = q.resolve_run(con, args.b, args.source)
            cmp = q.compare(con, a, b)
            run_a, run_b = q.run_info(con, a), q.run_info(con, b)
            # B's alpha is the one its gate used: the policy it recorded, unless --config names another.
            recorded = None if args.config else RunRules.from_json(q.run_rules_json(con, b))
            alpha = (recorded.policy if recorded else policy).baseline.alpha
            ev = evidence(q.case_counts(con, a), q.case_counts(con, b), alpha, ks=(1, args.k))
    except q.RunNotFound as e:
        print(terminal(f"kit compare: {store.path}: {e}"), file=sys.stderr)
        return 2
    if args.json:
        flips = {
            "pass_to_fail": [asdict(f) for f in cmp.pass_to_fail],
            "fail_to_pass": [asdict(f) for f in cmp.fail_to_pass],
            "new_attacks": [f.case_id for f in newly_successful_attacks(cmp)],
        }
        print(json.dumps({"a": a, "b": b, **ev.to_json(), **flips}, indent=2))
    else:
        print(render_comparison(cmp, run_a, run_b))
        print()
        print(terminal(evidence_text(ev, args.k)))
    return 0
