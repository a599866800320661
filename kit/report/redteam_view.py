"""The red team in the HTML report: each red-team run's attack success rate (attacks the oracle failed / attacks
run) per invariant, per plugin and per strategy.

    rates(con, runs) -> [{run_id, agent, attacks, succeeded, invariant: [...], plugin: [...], strategy: [...]}]
    html(rates) -> str

The plugin and strategy of each attack are what `kit ingest promptfoo` recorded in the run's `meta.redteam`
(case id -> plugin, strategy, the kit's category); a run stored before that names its plugins "not recorded"
(its strategy is still the last part of the case id, `redteam/<attack>/<strategy>`). An attack that errored
is counted apart, never as one that failed or held.
"""

from __future__ import annotations

import json
from collections import defaultdict
from html import escape
from typing import Any

NOT_RECORDED = "not recorded"
FLEX = "display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start;margin:6px 0 14px"


def _meta(con: Any, run_id: str) -> dict[str, Any]:
    row = con.execute("SELECT meta FROM runs WHERE run_id = ?", [run_id]).fetchone()
    try:
        meta = json.loads(row[0]) if row and row[0] else {}
    except (TypeError, ValueError):
        meta = {}
    attacks = meta.get("redteam") if isinstance(meta, dict) else None
    return attacks if isinstance(attacks, dict) else {}


def _plugin(found: dict[str, Any] | None) -> str:
    if not found:
        return NOT_RECORDED
    plugin, category = str(found.get("plugin") or NOT_RECORDED), found.get("category")
    return f"{plugin} ({category})" if category and category != plugin else plugin


def _table(tally: dict[str, list[int]]) -> list[dict[str, Any]]:
    rows = [{"name": k, "succeeded": s, "attacks": n, "errors": e} for k, (s, n, e) in tally.items()]
    return sorted(rows, key=lambda r: (-(r["succeeded"] / r["attacks"]) if r["attacks"] else 0, r["name"]))


def rates(con: Any, runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per red-team run (kind `redteam`; the control target must fail and is not shown here), its rates."""
    out = []
    for run in runs:
        if run.get("kind") != "redteam":
            continue
        run_id = run["run_id"]
        attacks = _meta(con, run_id)
        cases = con.execute(
            "SELECT case_id, attempt, outcome, passed, error FROM case_results WHERE run_id = ?", [run_id]
        ).fetchall()
        failed: dict[tuple[str, int], set[str]] = defaultdict(set)
        judged: dict[str, set[tuple[str, int]]] = defaultdict(set)
        for case_id, attempt, check, outcome in con.execute(
            """SELECT case_id, attempt, "check", outcome FROM check_results
               WHERE run_id = ? AND coalesce(gate, 'hard') = 'hard' AND "check" != 'promptfoo:success'""",
            [run_id],
        ).fetchall():
            judged[check].add((case_id, attempt))
            if outcome == "fail":
                failed[(case_id, attempt)].add(check)
        by: dict[str, dict[str, list[int]]] = {"plugin": {}, "strategy": {}, "invariant": {}}
        total = [0, 0, 0]
        for case_id, _attempt, outcome, passed, error in cases:
            found = attacks.get(case_id)
            strategy = str((found or {}).get("strategy") or case_id.rsplit("/", 1)[-1])
            errored = 1 if (outcome == "error" or error) else 0
            won = 1 if not errored and not passed else 0
            for axis, key in (("plugin", _plugin(found)), ("strategy", strategy)):
                cell = by[axis].setdefault(key, [0, 0, 0])
                cell[0], cell[1], cell[2] = cell[0] + won, cell[1] + 1, cell[2] + errored
            total = [total[0] + won, total[1] + 1, total[2] + errored]
        for check, where in judged.items():
            by["invariant"][check] = [sum(1 for k in where if check in failed.get(k, ())), len(where), 0]
        out.append(
            {
                "run_id": run_id,
                "agent": run.get("agent"),
                "succeeded": total[0],
                "attacks": total[1],
                "errors": total[2],
                "recorded": bool(attacks),
                **{axis: _table(t) for axis, t in by.items()},
            }
        )
    return out


def _rate_table(title: str, rows: list[dict[str, Any]]) -> str:
    body = "".join(
        f'<tr><td>{escape(r["name"])}</td><td class="n{" fail" if r["succeeded"] else ""}">'
        f'{r["succeeded"]}/{r["attacks"]}</td><td class="n">'
        f"{(r['succeeded'] / r['attacks'] if r['attacks'] else 0):.0%}</td>"
        f'<td class="n{" error" if r["errors"] else ""}">{r["errors"] or ""}</td></tr>'
        for r in rows
    )
    return (
        f'<table class="asr"><tr><th>{escape(title)}</th><th class="n">succeeded</th><th class="n">rate</th>'
        f'<th class="n">errors</th></tr>{body}</table>'
    )


def html(runs: list[dict[str, Any]]) -> str:
    if not runs:
        return ""
    parts = ['<section id="redteam"><h2>Red team: attack success rate</h2>']
    for r in runs:
        errored = f", {r['errors']} errored" if r["errors"] else ""
        note = "" if r["recorded"] else f' <span class="badge">plugins {NOT_RECORDED} (stored by an older kit)</span>'
        parts.append(
            f'<div class="meta">{escape(str(r.get("agent") or "-"))} · {escape(r["run_id"])}: '
            f"{r['succeeded']} of {r['attacks']} attacks broke an invariant"
            f"{errored}{note}</div>"
            f'<div class="asr-tables" style="{FLEX}">'
            + _rate_table("invariant (check)", r["invariant"])
            + _rate_table("plugin", r["plugin"])
            + _rate_table("strategy", r["strategy"])
            + "</div>"
        )
    parts.append("</section>")
    return "".join(parts)
