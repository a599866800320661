"""Two runs side by side, as an HTML section of the page, as Markdown for a pull-request comment and as
the text `kit compare` prints: the same figures in all three (pass rate, pass^k with its interval, per case
the fractions with their Wilson 95% intervals, the p-value and verdict of the change, flaky cases by name,
the smallest drop the runs can detect, flips with the checks that changed, cost and latency)."""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from kit.aggregate import VERDICTS, CaseChange, Evidence, Side, p_text
from kit.report import verdict_view
from kit.report.page_data import CaseDelta, CaseSide, SideBySide

UNDER_FLOOR = "under floor"  # a case under its floor in B: what the gate fails, never called noise


def _f(v: float | None, fmt: str = "{:.2f}") -> str:
    return "-" if v is None else fmt.format(v)


def _delta(a: float | None, b: float | None, fmt: str) -> str:
    if a is None or b is None:
        return "-"
    d = b - a
    return ("+" if d > 0 else "") + fmt.format(d) if d else "0"


def _mean(sides: list[CaseSide | None], attr: str) -> float | None:
    vals = [getattr(s, attr) for s in sides if s is not None and getattr(s, attr) is not None]
    return sum(vals) / len(vals) if vals else None


def _run_line(r: dict[str, Any]) -> str:
    return (
        f"{r['run_id']} ({r['source']}, agent {r.get('agent') or '-'}, model {r.get('model') or '-'}, "
        f"git {(r.get('git_sha') or '-')[:10]}, {str(r.get('started_at'))[:16]})"
    )


def summary_rows(s: SideBySide) -> list[tuple[str, str, str, str]]:
    """(measure, A, B, change) for the headline figures."""
    ra, rb = s.a, s.b
    rows = [
        ("cases", str(ra["cases"]), str(rb["cases"]), _delta(ra["cases"], rb["cases"], "{:d}")),
        ("case runs passed", f"{ra['passed']}/{ra['runs']}", f"{rb['passed']}/{rb['runs']}", ""),
        ("pass rate", _f(ra["pass_rate"], "{:.1%}"), _f(rb["pass_rate"], "{:.1%}"),
         _delta(ra["pass_rate"], rb["pass_rate"], "{:.1%}")),
    ]  # fmt: skip
    pa, pb = s.suite_pass_hat_k
    ia = {h.k: h.interval for h in s.evidence.suite_before}
    ib = {h.k: h.interval for h in s.evidence.suite_after}
    for k in sorted(set(pa) | set(pb)):
        if k in (1, s.k) or k == max(set(pa) | set(pb)):
            a, b = pa.get(k), pb.get(k)
            rows.append((f"pass^{k}", _hat(a, ia.get(k)), _hat(b, ib.get(k)), _delta(a, b, "{:.2f}")))
    ca = _mean([d.a for d in s.cases], "cost_usd")
    cb = _mean([d.b for d in s.cases], "cost_usd")
    la = _mean([d.a for d in s.cases], "latency_ms")
    lb = _mean([d.b for d in s.cases], "latency_ms")
    rows += [
        ("cost per case run (USD)", _f(ca, "{:.4f}"), _f(cb, "{:.4f}"), _delta(ca, cb, "{:.4f}")),
        ("latency per case run (ms)", _f(la, "{:.0f}"), _f(lb, "{:.0f}"), _delta(la, lb, "{:.0f}")),
        ("pass→fail", "", str(sum(1 for d in s.cases if d.flip == "pass→fail")), ""),
        ("fail→pass", "", str(sum(1 for d in s.cases if d.flip == "fail→pass")), ""),
    ]
    labels = [label(c, s.under_floor) for c in s.evidence.changes]
    rows.append(("under its floor", "", str(len(s.under_floor)), ""))
    plural = {"regression": "regressions", "improvement": "improvements", "noise": "noise", "unchanged": "unchanged"}
    rows += [(plural[v], "", str(labels.count(v)), "") for v in VERDICTS]
    return rows


def label(change: CaseChange, under_floor: Mapping[str, float]) -> str:
    """A case's verdict as the report names it: a case under its floor in B is `under floor` (its floor
    fails it whatever chance says of the change), never noise or unchanged; a regression stays one."""
    if change.case_id in under_floor and change.verdict != "regression":
        return UNDER_FLOOR
    return change.verdict


def _hat(value: float | None, interval: tuple[float, float] | None) -> str:
    """A suite's pass^k with its 95% interval, where the attempts allow one."""
    if value is None:
        return "-"
    return f"{value:.2f}" + (f" ({interval[0]:.2f}-{interval[1]:.2f})" if interval else "")


def interval(side: Side | None) -> str:
    if side is None:
        return "-"
    lo, hi = side.interval
    return f"{lo:.2f}-{hi:.2f}"


def changes(s: SideBySide) -> dict[str, CaseChange]:
    return {c.case_id: c for c in s.evidence.changes}


def _side_cells(side: CaseSide | None) -> tuple[str, str]:
    if side is None:
        return "absent", "-"
    return f"{side.c}/{side.n}", f"{side.fraction:.2f}"


def case_cells(
    d: CaseDelta, k: int, change: CaseChange | None = None, under_floor: Mapping[str, float] | None = None
) -> list[str]:
    """A case's row under `headers(k)`; `change`: its verdict from the evidence (none: not in both runs);
    `under_floor`: B's cases under their floor (the gate's), named so."""
    from kit.aggregate import pass_hat_k

    def phk(side: CaseSide | None) -> str:
        return "-" if side is None or k > side.n else f"{pass_hat_k(side.c, side.n, k):.2f}"

    (ca, fa), (cb, fb) = _side_cells(d.a), _side_cells(d.b)
    checks = "; ".join(
        part
        for part in (
            ("now failing: " + ", ".join(d.new_failing)) if d.new_failing else "",
            ("fixed: " + ", ".join(d.fixed)) if d.fixed else "",
        )
        if part
    )
    cost = _delta(d.a.cost_usd if d.a else None, d.b.cost_usd if d.b else None, "{:.4f}")
    lat = _delta(d.a.latency_ms if d.a else None, d.b.latency_ms if d.b else None, "{:.0f}")
    ia = interval(Side(d.a.c, d.a.n)) if d.a else "-"
    ib = interval(Side(d.b.c, d.b.n)) if d.b else "-"
    p = p_text(change.p_value) if change else "-"
    under = under_floor or {}
    verdict = label(change, under) if change else ("new" if d.a is None else "gone")
    if not change and d.case_id in under:
        verdict += f", {UNDER_FLOOR}"
    return [d.case_id, ca, fa, ia, phk(d.a), cb, fb, ib, phk(d.b), p, verdict, d.flip or "", checks, cost, lat]


def headers(k: int) -> list[str]:
    return ["case", "A passed", "A frac", "A 95%", f"A pass^{k}", "B passed", "B frac", "B 95%", f"B pass^{k}",
            "p", "verdict", "flip", "checks that changed", "Δ cost", "Δ latency ms"]  # fmt: skip


_TEXT_COLUMNS = {"case", "verdict", "flip", "checks that changed"}


def changed(s: SideBySide) -> list[CaseDelta]:
    return [d for d in s.cases if d.flip or d.new_failing or d.fixed or _moved(d)]


def flaky_line(cases: tuple[tuple[str, Side], ...]) -> str:
    """Flaky cases (0 < fraction < 1) by name with their fraction, the least reliable first."""
    ranked = sorted(cases, key=lambda c: (c[1].fraction, c[0]))
    return ", ".join(f"{cid} {side.passed}/{side.attempts} ({side.fraction:.2f})" for cid, side in ranked) or "none"


def verdict_title(ev: Evidence) -> str:
    m = len(ev.changes)
    if not m:
        return "Changes told from chance: no case is in both runs"
    return (
        f"Changes told from chance: one-sided Fisher exact on passes/attempts, Holm over the {m} case"
        f"{'s' if m != 1 else ''} in both runs, alpha {ev.alpha:g}"
    )


def verdict_lines(ev: Evidence, under_floor: Mapping[str, float] | None = None) -> list[str]:
    """Each regression, each case under its floor in B (`under_floor`, the gate's: never called noise), each
    improvement, then the noise, each with both fractions, intervals and p."""
    under = under_floor or {}
    out = []
    for v in ("regression", UNDER_FLOOR, "improvement", "noise"):
        for c in ev.changes:
            if label(c, under) != v:
                continue
            line = f"{v}: {c.case_id} {c.before.text()} → {c.after.text()}, p = {p_text(c.p_value)}"
            if c.case_id in under:
                line += f"; under its floor {under[c.case_id]:.2f}"
            out.append(line)
    unchanged = sum(1 for c in ev.changes if label(c, under) == "unchanged")
    if unchanged:
        out.append(f"unchanged: {unchanged} case{'s' if unchanged != 1 else ''}")
    return out


def evidence_text(ev: Evidence, k: int, under_floor: Mapping[str, float] | None = None) -> str:
    """`kit compare`'s evidence block: the same things the page and the PR comment show."""
    out = [verdict_title(ev) + (":" if ev.changes else "")]
    out += [f"  {line}" for line in verdict_lines(ev, under_floor)]
    out.append(f"flaky in A: {flaky_line(ev.flaky_before)}")
    out.append(f"flaky in B: {flaky_line(ev.flaky_after)}")
    for label, suite in (("A", ev.suite_before), ("B", ev.suite_after)):
        shown = [h for h in suite if h.k in (1, k)]
        if shown:
            out.append(f"suite {label}: " + ", ".join(h.text() for h in shown))
    out += list(ev.detectable)
    return "\n".join(out)


def _moved(d: CaseDelta) -> bool:
    return d.a is None or d.b is None or d.a.fraction != d.b.fraction


def html(s: SideBySide) -> str:
    notes = "".join(f'<p class="note">{escape(n)}</p>' for n in s.notes)
    summary = "".join(
        f"<tr><th>{escape(m)}</th><td class=n>{escape(a)}</td><td class=n>{escape(b)}</td>"
        f'<td class="n {_sign(c, lower_is_better=m.startswith(("cost", "latency")))}">{escape(c)}</td></tr>'
        for m, a, b, c in summary_rows(s)
    )
    body = []
    by_case = changes(s)
    numeric = [h not in _TEXT_COLUMNS for h in headers(s.k)]
    for d in s.cases:
        change = by_case.get(d.case_id)
        cells = case_cells(d, s.k, change, s.under_floor)
        cls = {"pass→fail": "flip down", "fail→pass": "flip up"}.get(d.flip or "", "same" if not _moved(d) else "")
        verdict = f" v-{_css(label(change, s.under_floor))}" if change else ""
        body.append(
            f'<tr class="{cls}{verdict}" data-case="{escape(d.case_id, quote=True)}">'
            + "".join(f'<td class="{"n" if n else ""}">{escape(c)}</td>' for n, c in zip(numeric, cells, strict=True))
            + "</tr>"
        )
    head = "".join(f"<th>{escape(h)}</th>" for h in headers(s.k))
    same = len(s.cases) - len(changed(s))
    ev = s.evidence
    verdicts = "".join(
        f'<li class="v-{_css(line.split(":", 1)[0])}">{escape(line)}</li>' for line in verdict_lines(ev, s.under_floor)
    )
    detect = "".join(f'<p class="note detect">{escape(line)}</p>' for line in ev.detectable)
    return f"""<section id="compare"><h2>Side by side</h2>
<p class="meta"><b>A</b> {escape(_run_line(s.a))}<br><b>B</b> {escape(_run_line(s.b))}</p>{notes}
<table class="summary"><tr><th></th><th>A</th><th>B</th><th>change</th></tr>{summary}</table>
<h3>Verdicts</h3>
<p class="meta">{escape(verdict_title(ev))}. A change that is not significant is noise, unless the case is under
its floor: the floor fails it whatever p says (the verdict at the top). Fractions carry their Wilson 95% interval;
pass^k its 95% interval.</p>
<ul class="verdicts" id="verdicts">{verdicts or '<li class="none">No case in both runs.</li>'}</ul>{detect}
<h3>Flaky cases</h3>
<p class="flaky" id="flaky-a"><b>A</b> {escape(flaky_line(ev.flaky_before))}</p>
<p class="flaky" id="flaky-b"><b>B</b> {escape(flaky_line(ev.flaky_after))}</p>
<h3>Flips ({len(s.flips)})</h3>
{_flip_list(s)}
<h3>Every case ({len(s.cases)}; {same} unchanged)</h3>
<label class="inline"><input type="checkbox" id="cmp-changed"> changed cases only</label>
<div class="scroll"><table class="cmp" id="cmp-table"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody>
</table></div></section>"""


def _css(verdict: str) -> str:
    return escape(verdict.replace(" ", "-"), quote=True)


def _flip_list(s: SideBySide) -> str:
    if not s.flips:
        return '<p class="none">No case flipped between A and B.</p>'
    items = []
    for d in s.flips:
        cells = dict(zip(headers(s.k), case_cells(d, s.k), strict=True))
        why = cells["checks that changed"]
        items.append(
            f'<li class="{"down" if d.flip == "pass→fail" else "up"}"><b>{escape(d.case_id)}</b> '
            f"{escape(d.flip or '')} ({escape(cells['A frac'])} → {escape(cells['B frac'])})"
            f"{': ' + escape(why) if why else ''}</li>"
        )
    return f'<ul class="flips" id="flips">{"".join(items)}</ul>'


def _sign(c: str, *, lower_is_better: bool = False) -> str:
    """The colour of a change: green when it is better, red when worse."""
    up, down = ("down", "up") if lower_is_better else ("up", "down")
    return up if c.startswith("+") else (down if c.startswith("-") and c != "-" else "")


def _md(text: str) -> str:
    """A table cell in GitHub Markdown: no markup, no pipes, no line breaks."""
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")
        .replace("`", "\\`").replace("*", "\\*").replace("_", "\\_").replace("[", "\\[").replace("]", "\\]")
        .replace("\r", " ").replace("\n", " ")
    )  # fmt: skip


def markdown(
    s: SideBySide,
    *,
    title: str = "Evals: side by side",
    max_rows: int = 60,
    verdict: verdict_view.MergeVerdict | None = None,
) -> str:
    """The comparison as a pull-request comment; `verdict` (the gate's) first, when given."""
    out = [f"### {_md(title)}", ""]
    if verdict is not None:
        out += verdict_view.markdown(verdict, _md)
    out += [f"**A** {_md(_run_line(s.a))}  ", f"**B** {_md(_run_line(s.b))}", ""]
    out += [f"> {_md(n)}" for n in s.notes]
    out += ["", "| | A | B | change |", "|---|---:|---:|---:|"]
    out += [f"| {_md(m)} | {_md(a)} | {_md(b)} | {_md(c)} |" for m, a, b, c in summary_rows(s)]
    rows = changed(s)
    ev = s.evidence
    out += ["", f"**{_md(verdict_title(ev))}**", ""]
    out += [f"- {_md(line)}" for line in verdict_lines(ev, s.under_floor)] or ["- no case in both runs"]
    out += ["", f"Flaky in A: {_md(flaky_line(ev.flaky_before))}  ", f"Flaky in B: {_md(flaky_line(ev.flaky_after))}"]
    out += ["", *(f"_{_md(line)}_" for line in ev.detectable)]
    out += ["", f"**{len(s.flips)} flips**, {len(rows)} cases changed of {len(s.cases)}.", ""]
    if rows:
        by_case = changes(s)
        out += ["| " + " | ".join(_md(h) for h in headers(s.k)) + " |", "|" + "---|" * len(headers(s.k))]
        for d in rows[:max_rows]:
            cells = case_cells(d, s.k, by_case.get(d.case_id), s.under_floor)
            out.append("| " + " | ".join(_md(c) for c in cells) + " |")
        if len(rows) > max_rows:
            out.append(f"\n… and {len(rows) - max_rows} more changed cases (see the HTML report).")
    return "\n".join(out) + "\n"
