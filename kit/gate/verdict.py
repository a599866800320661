"""The gate's verdict: which rules of its policy (kit.gate.policy) a run breaks. Pure over the store's answers.

One module for every front end and every source (the kit's runs, DeepEval's, Promptfoo's): `kit gate`,
`make evals` and the DeepEval session's end-of-run floors. A case is held to a floor on its pass fraction,
and against a baseline its change can be told from chance (kit.aggregate.evidence).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kit.aggregate import evidence, p_text
from kit.gate.policy import GatePolicy, accepted_risk
from kit.gate.rules import RunRules
from kit.names import printable
from kit.report.data import ReportData
from kit.store.queries import Comparison


@dataclass(frozen=True)
class SoftFloor:
    """A soft gate's pass rate over a run against its floor. The rate counts the verdicts given (pass,
    fail); a judge error counts against it only under `soft: {errors: fail}`, a skipped verdict only under
    `soft: {skipped: fail}`. No verdict given: no rate, neither pass nor fail."""

    rubric: str
    passed: int
    failed: int
    errors: int
    skipped: int
    floor: float
    skipped_fails: bool = False
    errors_fail: bool = False

    @property
    def judged(self) -> int:
        counted = (self.skipped if self.skipped_fails else 0) + (self.errors if self.errors_fail else 0)
        return self.passed + self.failed + counted

    @property
    def rate(self) -> float | None:
        return self.passed / self.judged if self.judged else None

    @property
    def below_floor(self) -> bool:
        return self.rate is not None and self.rate < self.floor

    def line(self) -> str:
        return printable(self._line())

    def _line(self) -> str:
        if self.rate is None and self.errors:
            return f"{self.rubric}: the judge failed on all {self.errors} verdicts (no pass rate; not a pass)"
        if self.rate is None:
            return f"{self.rubric}: skipped on all {self.skipped} runs (not a pass)"
        state = "BELOW FLOOR" if self.below_floor else "ok"
        extra = f", {self.errors} judge errors" if self.errors else ""
        extra += f", {self.skipped} skipped" if self.skipped else ""
        return (
            f"{self.rubric}: {self.passed}/{self.judged} passed ({self.rate:.0%}) floor {self.floor:.0%} {state}{extra}"
        )


def soft_floors(rows: Iterable[Mapping[str, Any]], policy: GatePolicy) -> list[SoftFloor]:
    """The soft gates of a run (rows of `queries.soft_gates`) against the policy's floors."""
    return [
        SoftFloor(
            rubric=r["check"],
            passed=int(r["passed"]),
            failed=int(r["failed"]),
            errors=int(r["errors"]),
            skipped=int(r["skipped"]),
            floor=policy.soft.floors.get(r["check"], policy.soft.default_floor),
            skipped_fails=policy.soft.skipped == "fail",
            errors_fail=policy.soft.errors == "fail",
        )
        for r in rows
    ]


@dataclass(frozen=True)
class Baseline:
    """The run a gated run is held against: its flips with the checks behind them (`queries.compare`), its
    per-case (passed, attempts) (`queries.case_counts`), its soft gates (`queries.soft_gates`) and the rules
    it recorded (its floors: None for a run stored without them, then the gated run's floors apply)."""

    run_id: str
    comparison: Comparison
    counts: Mapping[str, tuple[int, int]]
    soft: list[dict[str, Any]]
    rules: RunRules | None = None


def _side(passed: int, attempts: int) -> str:
    return f"{passed}/{attempts} ({passed / attempts:.2f})" if attempts else "0/0"


def _meets(passed: int, attempts: int, floor: float) -> bool:
    return bool(attempts) and passed / attempts >= floor - 1e-12


def under_floor(data: ReportData, rules: RunRules) -> dict[str, float]:
    """The cases whose pass fraction is under their floor, with the floor: what `verdict` calls a failed case
    (it fails the run unless an accepted risk or `hard.fail_on_failure: false` excuses it). A report shows
    such a case as under its floor, never as noise, whatever chance says of its change."""
    return {
        c["case_id"]: rules.floor(c["case_id"])
        for c in data.cases
        if int(c["n"]) and not _meets(int(c["c"]), int(c["n"]), rules.floor(c["case_id"]))
    }


def verdict(data: ReportData, rules: RunRules, baseline: Baseline | None = None) -> tuple[list[str], list[str]]:
    """(failures, notes): each failure names the run, the rule and what broke it. `rules`: what the run is
    held to (the policy, each case's floor: its own `min_pass_fraction`, else `hard.min_pass_fraction`),
    as the run recorded them. A case fails when its pass fraction is under its floor."""
    policy = rules.policy
    fails: list[str] = []
    notes: list[str] = []
    run_id = data.run["run_id"]
    if policy.runs.require_complete and data.run.get("status") != "complete":
        fails.append(
            f"run {run_id} is {data.run.get('status')}: it did not finish or lacks results (killed, still "
            "running, cases that did not load, or records the store quarantined)"
        )
    if policy.runs.require_complete and rules.not_loaded:
        # Whatever the source: a suite with cases missing is not a suite that passed.
        shown = "; ".join(rules.not_loaded[:3]) + (
            f"; {len(rules.not_loaded) - 3} more" if len(rules.not_loaded) > 3 else ""
        )
        fails.append(f"run {run_id} is incomplete: {len(rules.not_loaded)} case(s) or file(s) did not load: {shown}")
    if not data.cases and not data.soft:
        fails.append(f"run {run_id} has no results")
    failing: dict[str, list[dict[str, Any]]] = {}
    for f in data.failing:
        failing.setdefault(f["case_id"], []).append(f)
    for c in data.cases:
        case_id, passed, attempts = c["case_id"], int(c["c"]), int(c["n"])
        floor = rules.floor(case_id)
        under = f"passed {_side(passed, attempts)}, under its floor {floor:.2f}"
        below = bool(attempts) and not _meets(passed, attempts, floor)
        accepted = accepted_risk(policy, case_id) if below else None
        if accepted is not None:
            checks = sorted({f["check"] for f in failing.get(case_id, [])})
            notes.append(
                f"accepted risk {accepted} (gates.yaml redteam.accepted): attack {case_id} succeeded"
                + (f" (checks: {', '.join(checks)})" if checks else "")
            )
        elif below and not policy.hard.fail_on_failure:
            notes.append(f"case {case_id} {under} (hard.fail_on_failure is off)")
        elif below:
            checks = [f for f in failing.get(case_id, []) if f["outcome"] == "fail"]
            errored = any(f["outcome"] == "error" for f in failing.get(case_id, []))
            fails += [
                f"hard fail: case {case_id} check {f['check']} ({f['times']}x): {f['reason']} (case {under})"
                for f in checks
            ]
            if not checks and not (errored and policy.hard.fail_on_error):  # else the error lines name it
                fails.append(f"hard fail: case {case_id} {under}")
        elif 0 < passed < attempts:
            notes.append(f"flaky: case {case_id} passed {_side(passed, attempts)}, at or above its floor {floor:.2f}")
    attacked = any(str(c["case_id"]).startswith("redteam/") for c in data.cases)
    for name in policy.redteam.accepted if attacked else ():
        if not any(accepted_risk(policy, c["case_id"]) == name for c in data.cases):
            notes.append(f"accepted risk {name} (gates.yaml redteam.accepted) matched no attack of run {run_id}")
    if policy.hard.fail_on_error:
        # An error (a check that crashed, an agent that raised or hung) is no verdict on the agent, so no
        # floor excuses it.
        for f in data.failing:
            if f["outcome"] == "error":
                fails.append(f"hard error: case {f['case_id']} check {f['check']} ({f['times']}x): {f['reason']}")
    for f in soft_floors(data.soft, policy):
        if f.errors and not f.errors_fail:
            notes.append(f"soft gate {f.rubric}: the judge failed on {f.errors} verdicts, left out of its pass rate")
        if f.rate is None and not f.errors:
            notes.append(f"soft gate {f.rubric}: every verdict skipped ({f.skipped}), no pass rate")
        elif f.below_floor:
            fails.append(
                f"soft gate {f.rubric}: pass rate {f.rate:.2f} under its floor {f.floor:.2f} "
                f"({f.passed} pass, {f.failed} fail, {f.errors} error, {f.skipped} skipped)"
            )
    if baseline is None:
        return _lines(fails), _lines(notes)
    if policy.baseline.soft_max_drop is not None:
        # The same rate as the floor's, on both sides: a judge's errors are not the agent's drop.
        before = {b.rubric: b.rate for b in soft_floors(baseline.soft, policy) if b.rate is not None}
        for f in soft_floors(data.soft, policy):
            was, now = before.get(f.rubric), f.rate
            if was is not None and now is not None and was - now > policy.baseline.soft_max_drop + 1e-9:
                fails.append(
                    f"soft gate {f.rubric}: pass rate dropped from {was:.2f} to {now:.2f} since the baseline "
                    f"(at most {policy.baseline.soft_max_drop:.2f} allowed)"
                )
    # One meaning of a failed case: under its floor. A new failure met its floor in the baseline (the
    # baseline's recorded floor) and misses it now; `significant` adds drops chance does not explain, even
    # above the floor.
    # With hard.fail_on_failure on, the floor has failed such a case already: that it is new is a note.
    failing_new = policy.baseline.new_failures != "ignore" and not policy.hard.fail_on_failure
    for line in _new_failures(data, rules, baseline, failing):
        (fails if failing_new else notes).append(line)
    if policy.baseline.new_failures == "significant":
        more_fails, more_notes = _significant(data, policy, baseline, under_floor(data, rules))
        fails += more_fails
        notes += more_notes
    return _lines(fails), _lines(notes)


def _lines(lines: list[str]) -> list[str]:
    """Each failure or note is one line: a line break, an escape sequence or a CR that a reason, a tool name
    or a model id brought from a trace is shown as its escape, never sent to a terminal raw."""
    return [printable(line) for line in lines]


def _new_failures(
    data: ReportData, rules: RunRules, baseline: Baseline, failing: Mapping[str, list[dict[str, Any]]]
) -> list[str]:
    before_rules = baseline.rules or rules
    out = []
    for c in data.cases:
        case_id, passed, attempts = c["case_id"], int(c["c"]), int(c["n"])
        was = baseline.counts.get(case_id)
        if was is None or not attempts:
            continue
        floor, was_floor = rules.floor(case_id), before_rules.floor(case_id)
        if _meets(*was, was_floor) and not _meets(passed, attempts, floor):
            checks = sorted({f["check"] for f in failing.get(case_id, [])})
            out.append(
                f"new failure vs baseline {baseline.run_id}: case {case_id} {_side(*was)} → "
                f"{_side(passed, attempts)}, under its floor {floor:.2f}"
                + (f" (checks: {', '.join(checks)})" if checks else "")
            )
    return out


def _significant(
    data: ReportData, policy: GatePolicy, baseline: Baseline, under: Mapping[str, float]
) -> tuple[list[str], list[str]]:
    """`new_failures: significant`, as (failures, notes): a drop that chance does not explain fails, naming
    both fractions and p; any other change is listed, never failed. A case `under` its floor is never called
    noise: its floor has judged it."""
    fails: list[str] = []
    notes: list[str] = []
    alpha = policy.baseline.alpha
    now = {c["case_id"]: (int(c["c"]), int(c["n"])) for c in data.cases}
    ev = evidence(baseline.counts, now, alpha)
    m = len(ev.changes)
    test = f"one-sided Fisher exact, Holm over {m} case{'s' if m != 1 else ''}"
    for ch in ev.changes:
        was, is_ = _side(ch.before.passed, ch.before.attempts), _side(ch.after.passed, ch.after.attempts)
        line = f"case {ch.case_id} {was} → {is_}, p = {p_text(ch.p_value)}"
        if ch.verdict == "regression":
            fails.append(f"significant drop vs baseline {baseline.run_id}: {line} < alpha {alpha:g} ({test})")
        elif ch.verdict == "noise" and ch.case_id in under:
            notes.append(
                f"under its floor {under[ch.case_id]:.2f}, not noise, vs baseline {baseline.run_id}: {line} "
                f"(not under alpha {alpha:g}; the floor decides)"
            )
        elif ch.verdict == "noise":
            notes.append(f"noise vs baseline {baseline.run_id}: {line}, not under alpha {alpha:g}: not a regression")
        elif ch.verdict == "improvement":
            notes.append(f"improvement vs baseline {baseline.run_id}: {line} < alpha {alpha:g}")
    return fails, notes + list(ev.detectable)
