"""The summary `make evals` prints: stages, runs per source, checks per gate, the case matrix and the
failing checks. Pure over the store's answers (kit.store.queries)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kit.judge import judge_failure_lines
from kit.pipeline.executor import StageResult
from kit.report.data import soft_gate_calibrations
from kit.report.redteam_view import rates
from kit.store import queries as q


@dataclass(frozen=True)
class Collected:
    """What one invocation wrote to the store, read back in one session."""

    runs: list[dict[str, Any]]  # every new run, controls included
    gates: list[dict[str, Any]]  # check counts per source and gate; these and below: gated runs only
    matrix: dict[str, dict[str, tuple[int, int]]]
    failing: list[dict[str, Any]]
    by_check: list[dict[str, Any]] = field(default_factory=list)  # kit.store.queries.check_tally
    soft: list[dict[str, Any]] = field(default_factory=list)  # kit.report.data.soft_gate_calibrations
    judge_usage: list[dict[str, Any]] = field(default_factory=list)  # queries.judge_usage, every new run
    costs: list[dict[str, Any]] = field(default_factory=list)  # queries.run_costs, every new run
    redteam: list[dict[str, Any]] = field(default_factory=list)  # kit.report.redteam_view.rates, gated runs

    @property
    def gated(self) -> list[dict[str, Any]]:
        return [r for r in self.runs if not q.is_control(r)]


def collect(con: Any, before: set[str]) -> Collected:
    runs = q.runs_since(con, before)
    gated_runs = [r for r in runs if not q.is_control(r)]
    gated = [r["run_id"] for r in gated_runs]
    return Collected(
        runs,
        q.gate_counts(con, gated),
        q.case_matrix(con, gated),
        q.failing_checks_of_runs(con, gated),
        q.check_tally(con, gated),
        soft_gate_calibrations(con, gated),
        q.judge_usage(con, [r["run_id"] for r in runs]),
        q.run_costs(con, [r["run_id"] for r in runs]),
        rates(con, gated_runs),
    )


def missing_runs(result: StageResult, data: Collected) -> list[str]:
    """The runs a stage had to write and the store does not hold, as "source kind"."""
    wrote = {(r["source"], r["kind"]) for r in data.runs}
    return [f"{src} {kind}" for src, kind in result.stage.writes if (src, kind) not in wrote]


def stage_outcome(result: StageResult, data: Collected) -> str:
    """What a stage did, in words: "passed"; "3 judged failures" (its tool ran and judged: the failed case
    runs it stored, red-team attacks included, controls not; the gate decides the build); "broken: exit 1",
    "broken: timed out after 600 s" or "broken: no promptfoo redteam run reached the store"."""
    if result.broke:
        return result.outcome
    missing = missing_runs(result, data)
    if missing:
        return f"broken: no {', no '.join(missing)} run reached the store"
    if result.code == 0:
        return "passed"
    writes = set(result.stage.writes)
    failed = sum(
        (r["runs"] or 0) - (r["passed"] or 0)
        for r in data.runs
        if (r["source"], r["kind"]) in writes and not q.is_control(r)
    )
    return f"{failed} judged failure{'s' if failed != 1 else ''}" if failed else "judged failures"


def soft_lines(data: Collected) -> list[str]:
    """Beside each soft gate's pass rate, how far to trust it: its rubric's last calibration."""
    if not data.soft:
        return []
    lines = ["\n== soft gates (judged rubrics; calibration: kit calibrate LABELS)"]
    stage_of = {r["run_id"]: r["stage"] for r in data.runs}
    for g in data.soft:
        judged = g["passed"] + g["failed"]
        rate = f"{g['passed']}/{judged} passed ({g['passed'] / judged:.0%})" if judged else f"{g['skipped']} skipped"
        errors = f", {g['errors']} judge errors" if g["errors"] else ""
        samples = f", majority of {g['samples']}" if (g["samples"] or 1) > 1 else ""
        stage = stage_of.get(g["run_id"], "?")
        lines.append(f"  {stage:<17} {g['check']:<34} {rate + errors + samples:<26} {g['calibration']}")
    return lines


def cost_lines(data: Collected, results: list[StageResult]) -> list[str]:
    """Per run: the agent's calls (0 for a stage that judged the kit stage's runs), its retries, tokens and
    cost where the traces carry them, and the seconds spent waiting on the agent beside the kit's own; then
    the totals, with the stages' wall time."""
    if not data.costs:
        return []
    stage_of = {r["run_id"]: r["stage"] for r in data.runs}
    lines = ["\n== what it cost (agent calls; tokens and cost where the traces carry them)"]
    calls = retries = tokens = 0
    cost: float | None = None
    uncounted: list[str] = []
    waited = own = 0.0
    for c in data.costs:
        n = c["agent_calls"]
        if n is None:  # results that came through no runner of the kit's (a test that called its agent itself)
            uncounted.append(stage_of.get(c["run_id"], c["source"]))
        calls += n or 0
        retries += c["retries"] or 0
        rejudged = n == 0 and bool(c["runs"])  # the kit stage's runs judged again: their tokens were spent once
        if not rejudged:
            tokens += c["tokens"] or 0
        if c["cost_usd"] is not None and not rejudged:
            cost = (cost or 0.0) + c["cost_usd"]
        waited += c["agent_s"] or 0.0
        own += c["kit_s"] or 0.0
        tok = f"{c['tokens']:,} tokens" if c["tokens"] is not None else "tokens not recorded"
        usd = f"${c['cost_usd']:.4f}" if c["cost_usd"] is not None else "cost not recorded"
        secs = (
            f"; {c['agent_s']:.1f} s waiting on the agent, {c['kit_s']:.2f} s the kit's own"
            if c["agent_s"] is not None and c["kit_s"] is not None
            else ""
        )
        judged = " (judged the kit stage's runs)" if n == 0 and c["runs"] else ""
        if c.get("replayed"):  # kit.recording: the model's calls answered from recordings
            judged += f" ({c['replayed']} replayed from recordings: $0 spent, tokens as recorded)"
        counted = f"{n:>5} calls" if n is not None else "calls not counted (the agent was called outside the kit)"
        lines.append(
            f"  {stage_of.get(c['run_id'], c['source']):<17} {counted} for {c['runs']} runs{judged}, "
            f"{c['retries'] or 0} retries, {tok}, {usd}{secs}"
        )
    wall = sum(r.seconds for r in results if r.stage.name in ("kit", "redteam"))
    total_cost = f"${cost:.4f}" if cost is not None else "cost not recorded"
    besides = f" (besides {', '.join(uncounted)}: not counted)" if uncounted else ""
    lines.append(
        f"  {'total':<17} {calls:>5} calls{besides}, {retries} retries, {tokens:,} tokens, {total_cost}; "
        f"{waited:.1f} s waiting on the agent, summed over calls made at once (the stages that call it took "
        f"{wall:.1f} s of wall time), {own:.2f} s the kit's own"
    )
    return lines


def judge_usage_lines(data: Collected) -> list[str]:
    """Judge calls, tokens and cost per stage, as the endpoints reported them."""
    if not data.judge_usage:
        return []
    stage_of = {r["run_id"]: r["stage"] for r in data.runs}
    per: dict[str, dict[str, Any]] = {}
    for u in data.judge_usage:
        acc = per.setdefault(stage_of.get(u["run_id"], "?"), {"calls": 0, "reported": 0, "p": 0, "c": 0, "cost": None})
        acc["calls"] += u["calls"]
        acc["reported"] += u["reported"]
        acc["p"] += u["prompt_tokens"] or 0
        acc["c"] += u["completion_tokens"] or 0
        if u["cost_usd"] is not None:
            acc["cost"] = (acc["cost"] or 0.0) + u["cost_usd"]
    lines = ["\n== judge calls (per stage; tokens and cost as the endpoint reported them)"]
    for stage, a in sorted(per.items()):
        cost = f"${a['cost']:.4f}" if a["cost"] is not None else "cost not reported"
        usage = (
            f"{a['p']:,} prompt + {a['c']:,} completion tokens"
            + (f" (usage reported on {a['reported']} of them)" if a["reported"] < a["calls"] else "")
            if a["reported"]
            else "usage not reported"
        )
        lines.append(f"  {stage:<17} {a['calls']} calls, {usage}, {cost}")
    return lines


def summary_text(
    data: Collected, results: list[StageResult], report: str | None = None, *, wall: float | None = None
) -> str:
    """`wall`: the seconds all stages took; when some ran at the same time it is less than their sum."""
    lines = ["", "== stages"]
    for r in results:
        cpu = f"CPU {r.cpu:5.1f} s" if r.cpu is not None else ""
        lines.append(
            f"  {r.stage.name:<15} {stage_outcome(r, data):<20} {r.seconds:>7.1f} s   {cpu:<11}  {r.stage.note}"
        )
    added = sum(r.seconds for r in results)
    spent = sum(r.cpu or 0.0 for r in results)
    together = [r.stage.name for r in results if r.stage.together]
    if wall is None or len(together) < 2:
        lines.append(f"  {'total':<15} {'':<20} {wall if wall is not None else added:>7.1f} s   CPU {spent:5.1f} s")
    else:
        lines.append(
            f"  {'total':<15} {'':<20} {wall:>7.1f} s   CPU {spent:5.1f} s  wall time: {', '.join(together)} ran"
            f" at the same time (the stages' own times add up to {added:.1f} s)"
        )
    lines.append("\n== runs (per source)")
    for r in data.runs:
        rate = f"{r['passed'] / r['runs']:.0%}" if r["runs"] else "-"
        role = "  CONTROL: must fail, not gated" if q.is_control(r) else ""
        lines.append(
            f"  {r['stage']:<17} {r['run_id']:<34} {r['status'] or '':<10} "
            f"{r['passed']}/{r['runs']} case runs passed ({rate}), {r['cases']} cases  "
            f"[{r['model'] or r['agent'] or ''}]{role}"
        )
    lines.append("\n== checks (per source and gate)")
    table: dict[tuple[str, str], dict[str, int]] = {}
    for g in data.gates:
        table.setdefault((g["source"], g["gate"]), {})[g["outcome"]] = g["n"]
    for (src, gate), counts in sorted(table.items()):
        shown = ", ".join(f"{counts.get(o, 0)} {o}" for o in ("pass", "fail", "error", "skipped") if counts.get(o))
        lines.append(f"  {src:<17} {gate:<5} {shown}")
    matrix = data.matrix
    sources = sorted({s for per in matrix.values() for s in per})
    lines.append("\n== cases (passed/runs per source)")
    lines.append("  " + f"{'case':<40}" + "".join(f"{s:>20}" for s in sources))
    for case_id in sorted(matrix):
        cells = []
        for s in sources:
            c_n = matrix[case_id].get(s)
            cells.append(f"{'-' if c_n is None else f'{c_n[0]}/{c_n[1]}' + ('' if c_n[0] == c_n[1] else ' !'):>20}")
        lines.append("  " + f"{case_id[:40]:<40}" + "".join(cells))
    lines += redteam_lines(data)
    lines += soft_lines(data)
    lines += cost_lines(data, results)
    lines += judge_usage_lines(data)
    lines += judge_failure_lines(data.by_check)
    if data.failing:
        lines += failing_lines(data, report)
    return "\n".join(lines) + "\n"


def redteam_lines(data: Collected) -> list[str]:
    """The red team's attack success rate per strategy, counted as the HTML report counts it
    (kit.report.redteam_view.rates): attacks the oracle failed / attacks, an errored attack apart (it neither
    succeeded nor was held); per invariant, the failures by check say it."""
    per: dict[str, list[int]] = {}
    for run in data.redteam:
        for row in run["strategy"]:
            cell = per.setdefault(row["name"], [0, 0, 0])
            cell[0], cell[1], cell[2] = cell[0] + row["succeeded"], cell[1] + row["attacks"], cell[2] + row["errors"]
    if not per:
        return []
    shown = ", ".join(f"{k} {w}/{n}" + (f" ({e} errored)" if e else "") for k, (w, n, e) in sorted(per.items()))
    return ["\n== red team: attacks that succeeded, per strategy (per invariant: failures by check)", f"  {shown}"]


DETAIL = 20  # failing (source, case, check) lines shown under the grouped view


def check_lines(by_check: list[dict[str, Any]]) -> list[str]:
    """One line per failing check, the most failed cases first:
    `no_pii failed in 47/47 cases [kit, deepeval]: output leaks email 'bob@...'`."""
    lines = []
    for c in by_check:
        what = "red-team attacks" if c["redteam"] else "cases"
        errors = f", {c['errored']} errored" if c["errored"] else ""
        soft = " (soft)" if c["gate"] == "soft" else ""
        reason = " ".join(str(c["reason"] or "").split())
        lines.append(
            f"  {c['check']}{soft} failed in {c['failed']}/{c['cases']} {what}{errors} "
            f"[{', '.join(c['sources'] or [])}]" + (f": {reason[:140]}" if reason else "")
        )
    return lines


def failing_lines(data: Collected, report: str | None) -> list[str]:
    lines = ["\n== failures by check (worst first)", *check_lines(data.by_check)]
    if report:
        lines.append(f"  every failure, per case and attempt: {report}")
    lines.append("\n== failing checks (first few)")
    for f in data.failing[:DETAIL]:
        lines.append(
            f"  {f['source']:<17} {f['case_id']:<34} {f['gate']} {f['outcome']}: {f['check']}: "
            f"{' '.join(str(f['reason']).split())[:140]} (x{f['n']})"
        )
    if len(data.failing) > DETAIL:
        lines.append(f"  ... and {len(data.failing) - DETAIL} more" + (f": see {report}" if report else ""))
    return lines
