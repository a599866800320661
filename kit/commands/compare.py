"""`kit compare A B`: cases that flipped between two runs with the checks that caused each flip, and every
case told from chance: both pass fractions with their Wilson 95% intervals, the p-value of the change
(one-sided Fisher exact, Holm over the cases compared) and its verdict (regression, improvement, noise,
unchanged), the flaky cases by name, each suite's pass^k with its interval, and the smallest drop the runs
can detect at gates.yaml's `baseline.alpha`. A and B: run ids (or prefixes), latest, previous, latest~N, a
git sha or a model id. Without arguments: the latest gated `make evals` (its kit run; an ad-hoc
`npx promptfoo eval` or `kit run` since does not move it) against its baseline (the run of an earlier
`make evals` of the same source, kind and agent), and the first line says which runs were chosen; with no
`make evals` in the store, previous latest."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("a", nargs="?", help="the earlier run (default: the baseline of B; with B named, previous)")
    parser.add_argument("b", nargs="?", help="the later run (default: the latest gated make evals, else latest)")
    parser.add_argument("--source", choices=("kit", "deepeval", "promptfoo"), help="only runs from this source")
    parser.add_argument("--k", type=int, default=2, help="k of the suite's pass^k shown beside pass^1 (default 2)")
    parser.add_argument("--config", help="gate policy file whose baseline.alpha applies (default: the settings')")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    parser.add_argument("--store", help="store file (default $KIT_STORE or .kit/evals.duckdb)")


def main(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from kit.aggregate import evidence
    from kit.commands.report import merge_verdict
    from kit.errors import KitInputError
    from kit.gate.policy import load_policy
    from kit.gate.rules import RunRules
    from kit.names import terminal
    from kit.report import verdict_view
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
        settings = load_settings()
        policy = load_policy(Path(args.config) if args.config else settings.gates)
    except KitInputError as e:
        print(f"kit compare: {e}", file=sys.stderr)
        return 2
    store = open_store(args.store or settings.store)
    try:
        with store.connect() as con:
            a, b, chosen = _pair(con, args.a, args.b, args.source, policy.baseline.max_error_share)
            cmp = q.compare(con, a, b)
            run_a, run_b = q.run_info(con, a), q.run_info(con, b)
            # B's alpha is the one its gate used: the policy it recorded, unless --config names another.
            recorded = None if args.config else RunRules.from_json(q.run_rules_json(con, b))
            alpha = (recorded.policy if recorded else policy).baseline.alpha
            ev = evidence(q.case_counts(con, a), q.case_counts(con, b), alpha, ks=(1, args.k))
    except q.RunNotFound as e:
        print(terminal(f"kit compare: {store.path}: {e}"), file=sys.stderr)
        return 2
    # First what decides a merge: the gate on B with A as its baseline (kit.commands.report.merge_verdict).
    gate = merge_verdict(store, [(b, a)], Path(args.config) if args.config else settings.gates, settings.cases)
    if args.json:
        flips = {
            "pass_to_fail": [asdict(f) for f in cmp.pass_to_fail],
            "fail_to_pass": [asdict(f) for f in cmp.fail_to_pass],
            "new_attacks": [f.case_id for f in newly_successful_attacks(cmp)],
        }
        said = {"passed": gate.passed, "title": gate.title(), "problems": [p for r in gate.runs for p in r.problems]}
        print(json.dumps({"a": a, "b": b, "chosen": chosen, "gate": said, **ev.to_json(), **flips}, indent=2))
    else:
        print(verdict_view.text(gate) + "\n")
        if chosen:
            print(terminal(chosen) + "\n")
        print(render_comparison(cmp, run_a, run_b))
        print()
        print(terminal(evidence_text(ev, args.k, gate.under_floor(b))))
    return 0


def _pair(con, a: str | None, b: str | None, source: str | None, max_error_share: float) -> tuple[str, str, str]:
    """(A, B, what was chosen and why: "" when both were named). No run named: the latest gated `make evals`
    against its baseline (queries.baseline_run: an earlier `make evals`), else previous latest."""
    from kit.store import queries as q

    if a is not None and b is not None:
        return q.resolve_run(con, a, source), q.resolve_run(con, b, source), ""
    if a is None and b is None and (gated := q.latest_gated(con, source)) is not None:
        base = q.baseline_run(con, gated, max_error_share)
        info = q.run_info(con, gated)
        if base is None:
            raise q.RunNotFound(
                f"no baseline for run {gated} ({info['source']}) of the latest make evals ({info['evals_id']}): no "
                "earlier make evals wrote a complete run of the same source, kind and agent that is not an outage"
            )
        return (
            base,
            gated,
            (
                f"compared: B = run {gated} ({info['source']}), of the latest gated make evals ({info['evals_id']}); "
                f"A = run {base}, its baseline (the last complete run of an earlier make evals of the same source, "
                "kind and agent that is not an outage)"
            ),
        )
    rb = q.resolve_run(con, b or "latest", source)
    ra = q.resolve_run(con, a or "previous", source)
    if a is None and b is None:
        return ra, rb, f"compared: no make evals run in the store: B = run {rb} (latest), A = run {ra} (previous)"
    return ra, rb, ""
