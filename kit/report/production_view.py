"""`kit report`'s production section: traces judged by `kit serve` (source `production`), as text.

Per invariant (a case-free check outside any invariant stands for itself), its pass rate in each time bucket
of the traces' start; the soft rubrics judged on a sample, apart, their outcomes counted (a rubric `skipped`
without a judge is never a pass); then the newest failing traces, each down to the checks that failed and
why. What comes from a trace (a service, agent or model name, a reason) is shown through `kit.names.printable`.
"""

from __future__ import annotations

from typing import Any

from kit.names import printable


def _t(v: Any) -> str:
    return printable(str(v))


def render(con: Any, *, bucket: str = "hour", buckets: int = 6, failing: int = 10, reason_width: int = 100) -> str:
    """The section, or "" when the store holds no production trace."""
    from kit.store import production as prod

    if not prod.has_production(con):
        return ""
    s = prod.summary(con)
    rate = f"{s['passed'] / s['traces']:.1%}" if s["traces"] else "-"
    out = [
        f"production (kit serve): {s['traces']} traces judged, {s['passed']} passed ({rate}), {s['errors']} "
        f"unreadable or errored; {str(s['first'])[:19]} .. {str(s['last'])[:19]} UTC; {s['receivers']} receiver(s)",
    ]
    rows = prod.pass_rates(con, bucket)
    times = sorted({r["at"] for r in rows}, key=lambda t: (t is None, t))[-buckets:]
    if times:
        names = sorted({r["invariant"] for r in rows})
        width = max(len("invariant"), *(len(_t(n)) for n in names))
        head = "".join(f"  {str(t)[5:16] if t is not None else '(no time)':>11}" for t in times)
        out += [
            "",
            f"pass rate per invariant, by {bucket} (traces judged in brackets)",
            f"{'invariant':<{width}}{head}",
        ]
        cell = {(r["invariant"], r["at"]): r for r in rows}
        for n in names:
            line = f"{_t(n):<{width}}"
            for t in times:
                r = cell.get((n, t))
                line += f"  {'-':>11}" if r is None else f"  {r['pass_rate']:>5.0%} ({r['traces']:>3})".rjust(13)
            out.append(line)
    soft = prod.soft_rates(con)
    if soft:
        width = max(len("rubric"), *(len(_t(r["check"])) for r in soft))
        out += ["", "soft rubrics (kit serve --rubrics, a sample of the traces; apart from the invariants above)"]
        for r in soft:
            line = f"  {_t(r['check']):<{width}}  {r['passed']} pass, {r['failed']} fail, {r['errors']} error"
            if r["skipped"]:
                line += f", {r['skipped']} skipped ({_t(str(r['skipped_reason'])[:reason_width])})"
            out.append(line)
    bad = prod.failing(con, failing)
    if bad:
        out += ["", f"failing traces (newest {len(bad)})"]
        for f in bad:
            who = " ".join(f"{k} {_t(f[k])}" for k in ("service", "agent", "model") if f.get(k) not in (None, ""))
            out.append(f"  {_t(f['trace_id'])}  {str(f['started_at'])[:19]}  {_t(f['outcome'])}  {who}")
            if f.get("error"):
                out.append(f"      error: {_t(str(f['error'])[:reason_width])}")
            for c in f.get("checks") or []:
                inv = f" ({_t(c['invariant'])})" if c.get("invariant") else ""
                reason = _t((c.get("reason") or "").replace("\n", " ")[:reason_width])
                out.append(f"      {_t(c['outcome']):<5} {_t(c['check'])}{inv}: {reason}")
    return "\n".join(out)
