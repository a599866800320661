"""`kit gate`: exit 1, naming what failed, when the gated run breaks a rule of gates.yaml: a case's pass
fraction is under its floor (its own `min_pass_fraction`, else `hard.min_pass_fraction`), a check errored,
a soft gate's pass rate is under its floor, the run did not finish, or (with --baseline) a case fell since
the baseline (`baseline.new_failures`: every attempt passed there and not now, or a drop chance does not
explain) or a soft gate's pass rate dropped by more than gates.yaml allows. Every source (kit, DeepEval,
Promptfoo) is gated by the one rule set, kit.gate.verdict. Exit 2 on bad input (no such run, invalid
gates.yaml)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
    from kit.gate.policy import load_policy
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
            result = gate_run(store, ref, policy, floors, baseline=args.baseline, source=args.source)
            for n in result.notes:
                print(f"note: {n}")
            if result.problems:
                failed = True
                print(result.headline, file=sys.stderr)
                for f in result.problems:
                    print(f"  - {f}", file=sys.stderr)
            else:
                print(result.headline)
    except (q.RunNotFound, KitInputError) as e:
        print(f"kit gate: {store.path}: {e}", file=sys.stderr)
        return 2
    return 1 if failed else 0


@dataclass(frozen=True)
class GateResult:
    """The gate's verdict on one run: what failed (nothing: it passed), notes, and the line that says so."""

    run: dict[str, Any]
    problems: tuple[str, ...]
    notes: tuple[str, ...]
    pass_rate: float | None

    @property
    def passed(self) -> bool:
        return not self.problems

    @property
    def headline(self) -> str:
        label = f"run {self.run['run_id']} ({self.run['source']})"
        if self.problems:
            return f"gate FAILED for {label}: {len(self.problems)} problem(s)"
        rate = self.pass_rate
        return f"gate passed for {label}" + (f": pass rate {rate:.1%}" if rate is not None else "")


def gate_run(
    store: Store,
    ref: str,
    policy: Any,
    floors: dict[str, float] | None = None,
    *,
    baseline: str | None = None,
    source: str | None = None,
) -> GateResult:
    """The gate (kit.gate.verdict.verdict) on one run, against `baseline` (a run reference) when given: what
    `kit gate` prints and `make evals` shows, from one function. RunNotFound, or KitInputError when the
    baseline is the gated run itself."""
    from kit.errors import KitInputError
    from kit.gate.verdict import Baseline, verdict
    from kit.report.data import gather
    from kit.store import queries as q

    data = gather(store, ref, source=source)
    base_data = None
    if baseline:
        with store.connect() as con:
            base = q.resolve_run(con, baseline, source or data.run["source"])
            if base == data.run["run_id"]:
                raise KitInputError(f"baseline {baseline!r} is the gated run itself")
            flips = q.compare(con, base, data.run["run_id"])
            base_data = Baseline(base, flips, q.case_counts(con, base), q.soft_gates(con, base))
    fails, notes = verdict(data, policy, base_data, floors or {})
    return GateResult(data.run, tuple(fails), tuple(notes), data.totals["pass_rate"])


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
