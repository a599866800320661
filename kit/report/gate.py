"""The gate verdict: which rules of gates.yaml the gated run breaks. Pure over the store's answers."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kit.errors import KitInputError, first_error
from kit.report.data import ReportData
from kit.store.queries import Comparison


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HardPolicy(_Strict):
    fail_on_failure: bool = True
    fail_on_error: bool = True


class SoftPolicy(_Strict):
    default_floor: float = Field(0.8, ge=0, le=1)
    floors: dict[str, float] = Field(default_factory=dict)
    skipped: Literal["ignore", "fail"] = "ignore"


class BaselinePolicy(_Strict):
    new_failures: Literal["fail", "warn"] = "fail"
    # A soft gate whose pass rate fell by more than this since the baseline fails, even above its floor.
    soft_max_drop: float | None = Field(0.1, ge=0, le=1)


class RunsPolicy(_Strict):
    require_complete: bool = True


class GatePolicy(_Strict):
    hard: HardPolicy = Field(default_factory=HardPolicy)
    soft: SoftPolicy = Field(default_factory=SoftPolicy)
    baseline: BaselinePolicy = Field(default_factory=BaselinePolicy)
    runs: RunsPolicy = Field(default_factory=RunsPolicy)


def load_policy(path: Path) -> GatePolicy:
    if not path.exists():
        return GatePolicy()
    try:
        raw = yaml.safe_load(path.read_text()) or {}
        return GatePolicy.model_validate(raw)
    except yaml.YAMLError as e:
        raise KitInputError(f"not valid YAML: {e}", file=str(path)) from None
    except ValidationError as e:
        where, msg, _ = first_error(e)
        raise KitInputError(f"{where}: {msg}", file=str(path)) from None


def verdict(
    data: ReportData,
    policy: GatePolicy,
    baseline: Comparison | None = None,
    baseline_soft: list[dict] | None = None,
) -> tuple[list[str], list[str]]:
    """(failures, notes): each failure names the run, the rule and what broke it. `baseline_soft` is the
    baseline run's soft gates (`queries.soft_gates`), for the soft-drop rule."""
    fails: list[str] = []
    notes: list[str] = []
    run_id = data.run["run_id"]
    if policy.runs.require_complete and data.run.get("status") != "complete":
        fails.append(f"run {run_id} is {data.run.get('status')}: it did not finish (killed or still running)")
    if not data.cases and not data.soft:
        fails.append(f"run {run_id} has no results")
    for f in data.failing:
        if (f["outcome"] == "fail" and policy.hard.fail_on_failure) or (
            f["outcome"] == "error" and policy.hard.fail_on_error
        ):
            fails.append(f"hard {f['outcome']}: case {f['case_id']} check {f['check']} ({f['times']}x): {f['reason']}")
    for s in data.soft:
        floor = policy.soft.floors.get(s["check"], policy.soft.default_floor)
        rate = s["pass_rate"]
        if policy.soft.skipped == "fail" and s["skipped"]:
            rate = s["passed"] / s["n"]
        if rate is None:
            notes.append(f"soft gate {s['check']}: every verdict skipped ({s['skipped']}), no pass rate")
        elif rate < floor:
            fails.append(
                f"soft gate {s['check']}: pass rate {rate:.2f} under its floor {floor:.2f} "
                f"({s['passed']} pass, {s['failed']} fail, {s['errors']} error, {s['skipped']} skipped)"
            )
    if baseline_soft is not None and policy.baseline.soft_max_drop is not None:
        before = {b["check"]: b["pass_rate"] for b in baseline_soft if b["pass_rate"] is not None}
        for s in data.soft:
            was, now = before.get(s["check"]), s["pass_rate"]
            if was is not None and now is not None and was - now > policy.baseline.soft_max_drop + 1e-9:
                fails.append(
                    f"soft gate {s['check']}: pass rate dropped from {was:.2f} to {now:.2f} since the baseline "
                    f"(at most {policy.baseline.soft_max_drop:.2f} allowed)"
                )
    if baseline is not None:
        for f in baseline.pass_to_fail:
            msg = f"new failure vs baseline {baseline.a}: case {f.case_id} {f.before:.2f} → {f.after:.2f}" + (
                f" (checks: {', '.join(f.checks)})" if f.checks else ""
            )
            (fails if policy.baseline.new_failures == "fail" else notes).append(msg)
    return fails, notes
