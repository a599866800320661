"""Two runs side by side, as an HTML section of the page and as Markdown for a pull-request comment:
the same figures in both (pass rate, pass^k, flips with the checks that changed, cost and latency)."""

from __future__ import annotations

from html import escape
from typing import Any

from kit.report.page_data import CaseDelta, CaseSide, SideBySide


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
    for k in sorted(set(pa) | set(pb)):
        if k in (1, s.k) or k == max(set(pa) | set(pb)):
            rows.append((f"pass^{k}", _f(pa.get(k)), _f(pb.get(k)), _delta(pa.get(k), pb.get(k), "{:.2f}")))
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
    return rows


def _side_cells(side: CaseSide | None) -> tuple[str, str]:
    if side is None:
        return "absent", "-"
    return f"{side.c}/{side.n}", f"{side.fraction:.2f}"


def case_cells(d: CaseDelta, k: int) -> list[str]:
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
    return [d.case_id, ca, fa, phk(d.a), cb, fb, phk(d.b), d.flip or "", checks, cost, lat]


def headers(k: int) -> list[str]:
    return ["case", "A passed", "A frac", f"A pass^{k}", "B passed", "B frac", f"B pass^{k}", "flip",
            "checks that changed", "Δ cost", "Δ latency ms"]  # fmt: skip


def changed(s: SideBySide) -> list[CaseDelta]:
    return [d for d in s.cases if d.flip or d.new_failing or d.fixed or _moved(d)]


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
    for d in s.cases:
        cells = case_cells(d, s.k)
        cls = {"pass→fail": "flip down", "fail→pass": "flip up"}.get(d.flip or "", "same" if not _moved(d) else "")
        body.append(
            f'<tr class="{cls}" data-case="{escape(d.case_id, quote=True)}">'
            + "".join(f'<td class="{"n" if 0 < i < 7 or i > 8 else ""}">{escape(c)}</td>' for i, c in enumerate(cells))
            + "</tr>"
        )
    head = "".join(f"<th>{escape(h)}</th>" for h in headers(s.k))
    same = len(s.cases) - len(changed(s))
    return f"""<section id="compare"><h2>Side by side</h2>
<p class="meta"><b>A</b> {escape(_run_line(s.a))}<br><b>B</b> {escape(_run_line(s.b))}</p>{notes}
<table class="summary"><tr><th></th><th>A</th><th>B</th><th>change</th></tr>{summary}</table>
<h3>Flips ({len(s.flips)})</h3>
{_flip_list(s)}
<h3>Every case ({len(s.cases)}; {same} unchanged)</h3>
<label class="inline"><input type="checkbox" id="cmp-changed"> changed cases only</label>
<div class="scroll"><table class="cmp" id="cmp-table"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody>
</table></div></section>"""


def _flip_list(s: SideBySide) -> str:
    if not s.flips:
        return '<p class="none">No case flipped between A and B.</p>'
    items = []
    for d in s.flips:
        cells = case_cells(d, s.k)
        items.append(
            f'<li class="{"down" if d.flip == "pass→fail" else "up"}"><b>{escape(d.case_id)}</b> '
            f"{escape(d.flip or '')} ({escape(cells[2])} → {escape(cells[5])})"
            f"{': ' + escape(cells[8]) if cells[8] else ''}</li>"
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


def markdown(s: SideBySide, *, title: str = "Evals: side by side", max_rows: int = 60) -> str:
    out = [f"### {_md(title)}", "", f"**A** {_md(_run_line(s.a))}  ", f"**B** {_md(_run_line(s.b))}", ""]
    out += [f"> {_md(n)}" for n in s.notes]
    out += ["", "| | A | B | change |", "|---|---:|---:|---:|"]
    out += [f"| {_md(m)} | {_md(a)} | {_md(b)} | {_md(c)} |" for m, a, b, c in summary_rows(s)]
    rows = changed(s)
    out += ["", f"**{len(s.flips)} flips**, {len(rows)} cases changed of {len(s.cases)}.", ""]
    if rows:
        out += ["| " + " | ".join(_md(h) for h in headers(s.k)) + " |", "|" + "---|" * len(headers(s.k))]
        for d in rows[:max_rows]:
            out.append("| " + " | ".join(_md(c) for c in case_cells(d, s.k)) + " |")
        if len(rows) > max_rows:
            out.append(f"\n… and {len(rows) - max_rows} more changed cases (see the HTML report).")
    return "\n".join(out) + "\n"
