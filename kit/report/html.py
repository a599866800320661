"""`kit report --html FILE`: one self-contained page (inline style, script and SVG; no server, no network).

It holds every source of one `make evals` (the kit's runner, DeepEval, the Promptfoo eval, the red team)
with per-source and per-gate tallies, a failures-first case table that filters, searches and sorts and
opens each run's trace, like-with-like trends, and optionally two runs side by side.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from html import escape
from typing import Any

from kit.report import compare_view, page_assets, redteam_view, trend_svg, verdict_view
from kit.report import page_data as pd
from kit.report import page_model as pm

OUTCOMES = ("pass", "fail", "error", "skipped")
# Nothing may be fetched, whatever a trace holds: only the page's own inline style and script run.
CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"


@dataclass(frozen=True)
class Page:
    title: str
    payload: dict[str, Any]
    runs: list[dict[str, Any]]  # page_data.runs_info rows, in the payload's order
    trends: list[tuple[str, list[dict[str, Any]]]]  # (title, points) per series
    compare: pd.SideBySide | None
    generated: str
    verdict: verdict_view.MergeVerdict | None = None  # the gate's, shown first


def gather(
    con: Any,
    run_ids: list[str],
    *,
    k: int = 2,
    side: pd.SideBySide | None = None,
    tags: dict[str, list[str]] | None = None,
    recent: int = 20,
    title: str | None = None,
    verdict: verdict_view.MergeVerdict | None = None,
) -> Page:
    """Everything the page shows, read in one store session; `verdict`: the gate's on the page's gated runs
    (kit.commands.report.merge_verdict), its first section."""
    payload, runs = pm.build(con, run_ids, k=k, tags=tags)
    payload["redteam"] = redteam_view.rates(con, runs)  # attack success rates per invariant, plugin, strategy
    trends = []
    seen = set()
    for r in runs:
        key = (r["source"], r.get("agent") or "", r["case_set"])
        if key in seen or not r["runs"]:
            continue
        seen.add(key)
        name = f"{r['display_source']} · {r.get('agent') or 'reference agent'} · {r['cases']} cases"
        trends.append((name, pd.trend(con, r, recent)))
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return Page(title or _title(runs, side), payload, runs, trends, side, now, verdict)


def _title(runs: list[dict[str, Any]], side: pd.SideBySide | None) -> str:
    if side:
        return f"Evals: {side.a['run_id']} vs {side.b['run_id']}"
    return "Evals: " + ", ".join(sorted({r["display_source"] for r in runs})) if runs else "Evals: no runs"


def _tally_line(tally: dict[str, int]) -> str:
    return ", ".join(f'<span class="{o}">{tally[o]} {o}</span>' for o in OUTCOMES if tally.get(o)) or "none"


def _cards(page: Page) -> str:
    cards = []
    sides = {page.compare.a["run_id"]: "A · ", page.compare.b["run_id"]: "B · "} if page.compare else {}
    for r, pr in zip(page.runs, page.payload["runs"], strict=True):
        rate = "-" if r["pass_rate"] is None else f"{r['pass_rate']:.0%}"
        badge = '<span class="badge control">control: must fail, not gated</span>' if r["control"] else ""
        status = (
            "" if (r["status"] or "complete") == "complete" else f' <span class="badge">{escape(r["status"])}</span>'
        )
        gates = "".join(
            f'<div class="t"><b>{g}</b> gates: {_tally_line(pr["tally"].get(g, {}))}</div>' for g in ("hard", "soft")
        )
        gates += "".join(  # each rubric soft gate's calibration: how far its judge agrees with people
            f'<div class="t">{escape(check)}: {escape(state)}</div>' for check, state in pr["calibration"].items()
        )
        cards.append(
            f'<div class="card{" control" if r["control"] else ""}" data-source="{escape(r["display_source"])}">'
            f'<div class="src">{sides.get(r["run_id"], "")}{escape(r["display_source"])}{badge}{status}</div>'
            f'<div class="rate">{rate}</div><div class="t">{r["passed"]}/{r["runs"]} case runs passed, '
            f"{r['cases']} cases</div>{gates}"
            f'<div class="id">{escape(r["run_id"])}<br>agent {escape(str(r.get("agent") or "-"))} · model '
            f"{escape(str(r.get('model') or '-'))} · git {escape((r.get('git_sha') or '-')[:10])}</div></div>"
        )
    return f'<div class="cards">{"".join(cards)}</div>' if cards else '<p class="none">No runs.</p>'


def _gate_table(page: Page) -> str:
    """Check results per gate and outcome over the gated runs (controls are expected to fail)."""
    totals: dict[str, dict[str, int]] = {}
    for r, pr in zip(page.runs, page.payload["runs"], strict=True):
        if r["control"]:
            continue
        for gate, counts in pr["tally"].items():
            for o, n in counts.items():
                totals.setdefault(gate, {}).setdefault(o, 0)
                totals[gate][o] += n
    if not totals:
        return ""
    head = "".join(f'<th class="n">{o}</th>' for o in OUTCOMES)
    body = "".join(
        f"<tr><th>{escape(g)}</th>"
        + "".join(f'<td class="n {o}">{totals[g].get(o, 0)}</td>' for o in OUTCOMES)
        + "</tr>"
        for g in sorted(totals)
    )
    return f'<table class="gates"><tr><th>gate</th>{head}</tr>{body}</table>'


def _trends(page: Page) -> str:
    if not page.trends:
        return '<p class="none">No runs to trend.</p>'
    return "".join(
        f'<div class="trend-box"><h3>{escape(t)}</h3>{trend_svg.render(points, title="trend: " + t)}</div>'
        for t, points in page.trends
    )


def _case_section(page: Page) -> str:
    k = page.payload["k"]
    return f"""<section id="case-section"><h2>Cases (failures first)</h2>
<div class="filters">
<label>source <select id="f-source"><option value="">all</option></select></label>
<label>outcome <select id="f-outcome"><option value="">all</option>
<option value="failing">failing (any attempt)</option><option value="fail">failed every attempt</option>
<option value="flaky">flaky</option><option value="error">with errors</option><option value="pass">passed</option>
</select></label>
<label>failing check <select id="f-check"><option value="">any</option></select></label>
<label>tag <select id="f-tag"><option value="">any</option></select></label>
<label><input type="checkbox" id="f-flaky"> flaky only</label>
<input type="search" id="f-search" placeholder="search case, check, reason, model" aria-label="search">
<span id="count"></span></div>
<p class="meta">Click a row to open its runs: messages by turn, tool calls, end state, every check.</p>
<div class="scroll"><table id="cases"><colgroup><col style="width:150px"><col style="width:30%">
<col style="width:72px"><col style="width:72px"><col style="width:96px"><col></colgroup>
<thead><tr><th class="sort" data-key="source">source</th>
<th class="sort" data-key="case">case</th><th class="sort n" data-key="passed">passed</th>
<th class="sort n" data-key="phk">pass^{k}</th><th>flags</th><th>failing checks</th></tr></thead>
<tbody id="case-body"></tbody></table></div><button type="button" id="more" hidden></button>
<noscript><p class="note">The case table needs JavaScript (it runs locally; nothing is fetched).</p></noscript>
</section>"""


def render(page: Page) -> str:
    data = pm.to_script_json(page.payload)
    compare = compare_view.html(page.compare) if page.compare else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<title>{escape(page.title)}</title><style>{page_assets.CSS}</style></head><body>
<h1>{escape(page.title)}</h1><div class="meta">generated {escape(page.generated)} · {len(page.runs)} runs ·
pass^k: the chance that k runs of a case drawn from its attempts all pass</div>
{verdict_view.html(page.verdict) if page.verdict else ""}
<h2>Sources</h2>{_cards(page)}{_gate_table(page)}
{redteam_view.html(page.payload.get("redteam") or [])}
{compare}
{_case_section(page)}
<h2>Trends (same source, agent and case set)</h2>{_trends(page)}
<script type="application/json" id="kit-data">{data}</script>
<script>{page_assets.JS}</script>
</body></html>
"""
