"""`kit report --html FILE`: one self-contained page (inline CSS and SVG, no script, no network)."""

from __future__ import annotations

from html import escape
from typing import Any

from kit.report.data import ReportData
from kit.report.text import _num

GREEN, AMBER, RED, GREY = "#2e7d32", "#ef8f00", "#c62828", "#9e9e9e"

CSS = """
body{font:14px/1.4 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#222;max-width:1100px}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:28px 0 8px;border-bottom:1px solid #ddd}
.meta{color:#555;font-size:13px} .meta b{color:#222}
.tiles{display:flex;gap:12px;flex-wrap:wrap;margin:16px 0}
.tile{border:1px solid #ddd;border-radius:6px;padding:8px 14px;min-width:110px}
.tile .v{font-size:22px;font-weight:600} .tile .l{font-size:12px;color:#666}
table{border-collapse:collapse;width:100%;font-size:13px} th,td{padding:4px 8px;border-bottom:1px solid #eee;
text-align:left;vertical-align:top} th{background:#fafafa} td.n{text-align:right;font-variant-numeric:tabular-nums}
.pass{color:#2e7d32} .fail{color:#c62828} .error{color:#6a1b9a} .skipped{color:#777} .flaky{color:#ef8f00}
.reason{color:#555;font-size:12px} svg text{font:12px system-ui,sans-serif;fill:#333} .none{color:#777}
"""


def _bar_chart(cases: list[dict[str, Any]]) -> str:
    """Pass fraction per case: one horizontal bar each, coloured pass / flaky / fail."""
    if not cases:
        return '<p class="none">No case results.</p>'
    label_w, bar_w, row_h = 220, 520, 22
    h = row_h * len(cases) + 30
    parts = [f'<svg role="img" aria-label="pass fraction per case" width="{label_w + bar_w + 70}" height="{h}">']
    for x in (0, 0.5, 1):
        gx = label_w + x * bar_w
        parts.append(
            f'<line x1="{gx}" y1="0" x2="{gx}" y2="{h - 20}" stroke="#ddd"/>'
            f'<text x="{gx}" y="{h - 5}" text-anchor="middle">{x:g}</text>'
        )
    for i, c in enumerate(cases):
        y = i * row_h + 3
        frac = c["pass_fraction"] or 0.0
        color = GREEN if frac == 1 else (AMBER if frac > 0 else RED)
        name = c["case_id"] if len(c["case_id"]) <= 30 else c["case_id"][:29] + "…"
        parts.append(
            f'<text x="{label_w - 6}" y="{y + 13}" text-anchor="end">{escape(name)}</text>'
            f'<rect x="{label_w}" y="{y}" width="{max(frac * bar_w, 2):.1f}" height="{row_h - 6}" fill="{color}">'
            f"<title>{escape(c['case_id'])}: {c['c']}/{c['n']}</title></rect>"
            f'<text x="{label_w + frac * bar_w + 6:.1f}" y="{y + 13}">{c["c"]}/{c["n"]}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _line_chart(recent: list[dict[str, Any]]) -> str:
    """Pass rate of the recent runs (same source), oldest to newest."""
    points = [r for r in recent if r["pass_rate"] is not None]
    if not points:
        return '<p class="none">No runs with results.</p>'
    w, h, left, top, bottom = 760, 240, 44, 12, 48
    pw, ph = w - left - 60, h - top - bottom
    step = pw / max(len(points) - 1, 1)
    xy = [
        (left + i * step if len(points) > 1 else left + pw / 2, top + (1 - r["pass_rate"]) * ph)
        for i, r in enumerate(points)
    ]
    parts = [f'<svg role="img" aria-label="pass rate across recent runs" width="{w}" height="{h}">']
    for v in (0, 0.25, 0.5, 0.75, 1):
        y = top + (1 - v) * ph
        parts.append(
            f'<line x1="{left}" y1="{y}" x2="{left + pw}" y2="{y}" stroke="#eee"/>'
            f'<text x="{left - 6}" y="{y + 4}" text-anchor="end">{v:.0%}</text>'
        )
    parts.append(
        '<polyline fill="none" stroke="#1565c0" stroke-width="2" points="'
        + " ".join(f"{x:.1f},{y:.1f}" for x, y in xy)
        + '"/>'
    )
    # Labels must fit between points (~6.5 px a character); the model is shown only where it changes,
    # since a model change is what a reader looks for along the line.
    fit = max(int(step / 6.5), 5) if len(points) > 1 else 18
    previous_model = None
    for (x, y), r in zip(xy, points, strict=True):
        color = GREEN if r["pass_rate"] == 1 else (RED if r["status"] != "complete" else "#1565c0")
        label = str(r["started_at"])[5:16][-fit:]
        model = str(r["model"] or "")
        shown_model = model[:fit] if model != previous_model else ""
        previous_model = model
        parts.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{color}"><title>{escape(r["run_id"])} '
            f"({escape(str(r['model'] or '-'))}, {r['status']}): {r['pass_rate']:.1%}</title></circle>"
            f'<text x="{x:.1f}" y="{h - bottom + 18}" text-anchor="middle">{escape(label)}</text>'
            f'<text x="{x:.1f}" y="{h - bottom + 34}" text-anchor="middle">{escape(shown_model)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _flip_chart(data: ReportData) -> str:
    """Change in pass fraction per case since the previous run: flips marked, red down, green up."""
    cmp = data.comparison
    if cmp is None:
        return '<p class="none">No previous run of this source to compare with.</p>'
    moved = sorted((c for c in cmp.changes if c.before != c.after), key=lambda c: c.after - c.before)
    flipped = {f.case_id: ("pass→fail", f.checks) for f in cmp.pass_to_fail}
    flipped |= {f.case_id: ("fail→pass", f.checks) for f in cmp.fail_to_pass}
    head = (
        f'<p class="meta">previous run <b>{escape(cmp.a)}</b>: {len(cmp.pass_to_fail)} pass→fail, '
        f"{len(cmp.fail_to_pass)} fail→pass, {len(moved)} cases changed pass fraction</p>"
    )
    if not moved:
        return head + '<p class="none">No case changed.</p>'
    label_w, half, row_h = 220, 240, 22
    h = row_h * len(moved) + 30
    mid = label_w + half
    parts = [
        head,
        f'<svg role="img" aria-label="flips since the previous run" width="{label_w + 2 * half + 420}" '
        f'height="{h}"><line x1="{mid}" y1="0" x2="{mid}" y2="{h - 20}" stroke="#999"/>',
    ]
    for x, lab in ((label_w, "-1"), (mid, "0"), (mid + half, "+1")):
        parts.append(f'<text x="{x}" y="{h - 5}" text-anchor="middle">{lab}</text>')
    for i, c in enumerate(moved):
        y = i * row_h + 3
        d = c.after - c.before
        x0, width = (mid + d * half, -d * half) if d < 0 else (mid, d * half)
        kind, checks = flipped.get(c.case_id, ("", []))
        note = f"{kind} {', '.join(checks)}".strip()
        parts.append(
            f'<text x="{label_w - 6}" y="{y + 13}" text-anchor="end">{escape(c.case_id[:30])}</text>'
            f'<rect x="{x0:.1f}" y="{y}" width="{max(width, 2):.1f}" height="{row_h - 6}" '
            f'fill="{RED if d < 0 else GREEN}"><title>{escape(c.case_id)}: {c.before:.2f} → {c.after:.2f}</title>'
            f'</rect><text x="{mid + half + 8}" y="{y + 13}">{c.before:.2f}→{c.after:.2f} {escape(note)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _case_table(data: ReportData) -> str:
    failing: dict[str, list[dict[str, Any]]] = {}
    for f in data.failing:
        failing.setdefault(f["case_id"], []).append(f)
    rows = []
    for c in data.cases:
        cls = "pass" if c["pass_fraction"] == 1 else ("flaky" if c["flaky"] else "fail")
        checks = "".join(
            f'<div><span class="{escape(f["outcome"])}">{escape(f["outcome"])}</span> {escape(f["check"])} '
            f'({f["times"]}/{c["n"]}) <span class="reason">{escape((f["reason"] or "")[:300])}</span></div>'
            for f in failing.get(c["case_id"], [])
        )
        rows.append(
            f'<tr><td class="{cls}">{escape(c["case_id"])}</td><td class="n">{c["c"]}/{c["n"]}</td>'
            f'<td class="n">{_num(c["pass_fraction"])}</td><td class="n">{_num(c["pass_hat_k"])}</td>'
            f'<td>{"flaky" if c["flaky"] else ""}</td><td class="n">{c["errors"] or ""}</td><td>{checks}</td></tr>'
        )
    return (
        f"<table><tr><th>case</th><th>passed</th><th>fraction</th><th>pass^{data.k}</th><th>flaky</th>"
        f"<th>errors</th><th>failing checks</th></tr>{''.join(rows)}</table>"
    )


def _soft_table(data: ReportData) -> str:
    if not data.soft:
        return '<p class="none">No soft gates recorded in this run.</p>'
    rows = "".join(
        f'<tr><td>{escape(s["check"])}</td><td class="n">{s["n"]}</td><td class="n pass">{s["passed"]}</td>'
        f'<td class="n fail">{s["failed"]}</td><td class="n skipped">{s["skipped"]}</td>'
        f'<td class="n error">{s["errors"]}</td><td class="n">{_num(s["mean_score"])}</td>'
        f'<td class="n">{_num(s["pass_rate"])}</td></tr>'
        for s in data.soft
    )
    return (
        "<table><tr><th>soft gate</th><th>n</th><th>pass</th><th>fail</th><th>skipped</th><th>error</th>"
        f"<th>mean score</th><th>pass rate</th></tr>{rows}</table>"
    )


def render(data: ReportData) -> str:
    run, t = data.run, data.totals
    rate = "-" if t["pass_rate"] is None else f"{t['pass_rate']:.1%}"
    tiles = [
        ("pass rate", rate),
        ("cases", t["cases"]),
        ("runs", t["runs"]),
        ("flaky", sum(1 for c in data.cases if c["flaky"])),
        ("errors", t["errors"]),
    ]
    tiles += [(f"pass^{k}", f"{v:.2f}") for k, v in data.suite_pass_hat_k.items()]
    meta = " · ".join(
        f"{k} <b>{escape(str(v))}</b>"
        for k, v in (
            ("source", run["source"]),
            ("status", run.get("status")),
            ("model", run.get("model")),
            ("agent", run.get("agent")),
            ("git", (run.get("git_sha") or "-")[:10]),
            ("config", run.get("config_hash")),
            ("kit", run.get("kit_version")),
            ("started", f"{str(run['started_at'])[:19]} UTC"),
        )
        if v is not None
    )
    tile_html = "".join(
        f'<div class="tile"><div class="v">{escape(str(v))}</div><div class="l">{escape(lab)}</div></div>'
        for lab, v in tiles
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>kit report {escape(run["run_id"])}</title>
<style>{CSS}</style></head><body>
<h1>Eval report: {escape(run["run_id"])}</h1><div class="meta">{meta}</div>
<div class="tiles">{tile_html}</div>
<h2>Pass fraction per case</h2>{_bar_chart(data.cases)}
<h2>Pass rate across recent runs ({escape(run["source"])})</h2>{_line_chart(data.recent)}
<h2>Flips since the previous run</h2>{_flip_chart(data)}
<h2>Cases</h2>{_case_table(data)}
<h2>Soft gates</h2>{_soft_table(data)}
</body></html>
"""
