"""`kit gate`: exit 1, naming what failed, when the gated run breaks a rule of gates.yaml: a case's pass
fraction is under its floor (its own `min_pass_fraction`, else `hard.min_pass_fraction`), a check errored,
a soft gate's pass rate is under its floor, the run did not finish, or (with --baseline) a case fell since
the baseline (`baseline.new_failures`: every attempt passed there and not now, or a drop chance does not
explain) or a soft gate's pass rate dropped by more than gates.yaml allows. Every source (kit, DeepEval,
Promptfoo) is gated by the one rule set, kit.gate.verdict. Exit 2 on bad input (no such run, invalid
gates.yaml)."""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kit.gate.rules import CaseRule, RunRules

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
    from kit.names import printable
    from kit.settings import load_settings
    from kit.store import open_store
    from kit.store import queries as q

    try:
        if args.config and not Path(args.config).exists():
            raise KitInputError("no such gate policy file", file=args.config)
        settings = load_settings()
        policy = load_policy(Path(args.config) if args.config else settings.gates)
        floors, floor_notes = case_floors(Path(args.cases) if args.cases else settings.cases, settings.invariants)
    except KitInputError as e:
        print(f"kit gate: {e}", file=sys.stderr)
        return 2
    store = open_store(args.store or settings.store)
    # A disk that cannot take results may have lost the latest run: never gate the one before it instead.
    store.check_writable()
    failed = False
    try:
        refs = args.run or _default_runs(store, args.source)
        for ref in refs:
            result = gate_run(store, ref, policy, floors, baseline=args.baseline, source=args.source, named=args.config)
            if not result.own_rules:  # the files as they are now judge it: say what could not be read
                floor_notes, notes = [], [*floor_notes, *result.notes]
            elif args.cases:
                notes = [
                    f"run {result.run['run_id']} recorded its own case floors: --cases applies only to runs "
                    "stored without them",
                    *result.notes,
                ]
            else:
                notes = list(result.notes)
            for n in notes:
                print(printable(f"note: {n}"))
            if result.problems:
                failed = True
                print(result.headline, file=sys.stderr)
                for f in result.problems:
                    print(f"  - {f}", file=sys.stderr)
            else:
                print(result.headline)
    except (q.RunNotFound, KitInputError) as e:
        print(printable(f"kit gate: {store.path}: {e}"), file=sys.stderr)
        return 2
    return 1 if failed else 0


@dataclass(frozen=True)
class GateResult:
    """The gate's verdict on one run: what failed (nothing: it passed), notes, and the line that says so."""

    run: dict[str, Any]
    problems: tuple[str, ...]
    notes: tuple[str, ...]
    pass_rate: float | None
    own_rules: bool = True  # judged by the rules the run recorded (else by the files as they are now)
    # What it was judged by, first among the notes: the rules (a case file or the policy changed since the
    # run, or no rules recorded) and the baseline with why it is that run. make evals shows these too.
    context: tuple[str, ...] = ()

    under_floor: dict[str, float] = field(default_factory=dict)  # case -> its floor (kit.gate.verdict.under_floor)
    baseline: str | None = None  # the run it was held against

    @property
    def passed(self) -> bool:
        return not self.problems

    @property
    def headline(self) -> str:
        from kit.names import printable

        label = printable(f"run {self.run['run_id']} ({self.run['source']})")
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
    named: str | None = None,
) -> GateResult:
    """The gate (kit.gate.verdict.verdict) on one run, against `baseline` (a run reference) when given: what
    `kit gate` prints and `make evals` shows, from one function. The run is judged by the rules it recorded
    (kit.gate.rules); `policy` and `floors` (the files as they are now) apply only to a run stored without
    them, and the notes say so, as they say which case file changed since the run and which run the
    baseline is and why. `named`: the policy file a person named for this gate (`--config`): `policy` then
    wins over the recorded one (a case's own floor stays the run's), and the first note says which policy
    judged the run. RunNotFound, or KitInputError when the baseline is the gated run itself."""
    from kit.errors import KitInputError
    from kit.gate.verdict import Baseline, under_floor, verdict
    from kit.names import printable
    from kit.report.data import gather
    from kit.store import queries as q

    data = gather(store, ref, source=source)
    run_id = data.run["run_id"]
    with store.connect() as con:
        recorded = q.run_rules_json(con, run_id)
        rules, notes = _rules_of(recorded, run_id, policy, floors or {}, named)
        base_data = base = None
        if baseline:
            base, why = _baseline(con, baseline, data.run, rules.policy.baseline.max_error_share, source)
            if base == run_id:
                raise KitInputError(f"baseline {baseline!r} is the gated run itself")
            notes.append(why)
            flips = q.compare(con, base, run_id)
            base_rules = RunRules.from_json(q.run_rules_json(con, base))
            base_data = Baseline(base, flips, q.case_counts(con, base), q.soft_gates(con, base), base_rules)
    fails, more = verdict(data, rules, base_data)
    own = RunRules.from_json(recorded) is not None
    if own and rules.origin == "ingest":  # said by kit gate, not in make evals' context (its hook ingests at once)
        more.insert(0, f"run {run_id}'s rules were read from the settings when its results were ingested")
    shown = tuple(printable(n) for n in notes + more)  # a file or run named from data: one line, escaped
    below, context = under_floor(data, rules), shown[: len(notes)]
    return GateResult(data.run, tuple(fails), shown, data.totals["pass_rate"], own, context, below, base)


def _rules_of(
    recorded_json: str | None, run_id: str, policy: Any, floors: dict[str, float], named: str | None = None
) -> tuple[RunRules, list[str]]:
    """The rules a run is judged by, with notes: those it recorded (and which of its case files changed
    since, or whether gates.yaml did), else the files as they are now; under the policy `named` on the
    command line when one was."""
    recorded = RunRules.from_json(recorded_json)
    if recorded is None:
        cases = {c: CaseRule(floor=f, own=True) for c, f in floors.items()}
        why = (
            "stored without them (an older kit, or a tool's results ingested)"
            if recorded_json is None
            else ("recorded in a form this kit cannot read")
        )
        policy_name = f"the policy named on the command line ({named})" if named else "gates.yaml"
        note = f"run {run_id} has no rules of its own ({why}): judged by the case files and {policy_name}"
        note += " as they are now"
        return RunRules(cases=cases, policy=policy), [note]
    notes = recorded.changed_files()
    if named is not None:
        was = _shown(recorded.policy_file) if recorded.policy_file else "a policy of its own"
        notes.insert(0, f"policy: {named} (named on the command line; the run recorded {was})")
        return recorded.under(policy, str(Path(named).absolute())), notes
    if policy is not None and policy != recorded.policy:
        notes.append(f"the gate policy changed since run {run_id}: judged by the policy recorded with the run")
    return recorded, notes


def _shown(path: str) -> str:
    """A recorded file as a person would name it: relative to the working directory when under it."""
    p = Path(path)
    try:
        return str(p.relative_to(Path.cwd()))
    except ValueError:
        return str(p)


def _baseline(con: Any, ref: str, run: dict[str, Any], max_error_share: float, source: str | None) -> tuple[str, str]:
    """The baseline run for `ref`, and a note saying which run it is and why. An outage (every attempt
    errored, or more than `max_error_share`) is never picked for `previous` or `latest`: the run before it is."""
    from kit.store import queries as q

    src = source or run["source"]
    base = q.resolve_run(con, ref, src, max_error_share=max_error_share)
    errored, attempts = q.error_share(con, base)
    outage = bool(attempts) and (errored == attempts or errored > max_error_share * attempts)
    if outage and re.fullmatch(r"latest(~\d+)?|previous", ref):
        choice = q.baseline_choice(con, base, max_error_share)
        if choice.run_id is None:
            raise q.RunNotFound(
                f"no baseline for {ref!r}: run {base} is an outage ({errored}/{attempts} attempts errored) and every "
                "earlier complete run of the same source, kind and agent is one too, or there is none"
            )
        skipped = ((base, errored, attempts), *choice.outages)
        return choice.run_id, _why(choice.run_id, ref, skipped, max_error_share, bool(run.get("evals_id")))
    if outage:
        return base, (
            f"baseline run {base} (named by {ref!r}) is an outage: {errored}/{attempts} attempts errored, so the "
            "comparison says little"
        )
    mine = q.baseline_choice(con, run["run_id"], max_error_share)
    if base == mine.run_id:
        return base, _why(base, ref, mine.outages, max_error_share, bool(run.get("evals_id")))
    return base, f"compared against baseline run {base} (named by {ref!r})"


def _why(
    base: str, ref: str, outages: tuple[tuple[str, int, int], ...], max_error_share: float, gated: bool = False
) -> str:
    # A run of a `make evals` is held against an earlier `make evals` only (queries.baseline_run): said.
    of = "run of an earlier make evals" if gated else "run"
    line = (
        f"compared against baseline run {base} ({ref!r}: the last complete {of} of the same source, kind and agent "
        f"that is not an outage"
    )
    if outages:
        shown = ", ".join(f"{r} ({e}/{n} attempts errored)" for r, e, n in outages[:3])
        more = f" and {len(outages) - 3} more" if len(outages) > 3 else ""
        line += (
            f"; passed over {shown}{more}: over the {max_error_share:.0%} errored that baseline.max_error_share allows"
        )
    return line + ")"


def case_floors(path: Path, invariants: Path | None = None) -> tuple[dict[str, float], list[str]]:
    """The cases' own floors (`min_pass_fraction`) by case id, and notes on what could not be read: a case
    whose file did not load is held to `hard.min_pass_fraction`, and the gate says so. `invariants`: the
    settings' invariants file (kit.case.invariants_of, as the front ends expand them)."""
    from kit.case import invariants_of, load_suite

    if not path.exists():
        return {}, [f"no case files at {path}: every case is held to hard.min_pass_fraction"]
    suite = load_suite(path, invariants_of(path, configured=invariants))
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
