"""`kit report` as plain text: per case pass fraction, pass^k, flaky and failing checks; soft gates; totals.

What comes from a trace or another tool (a model id, a tool's name or error in a reason, a case id) is
shown through `kit.names.printable`: an escape sequence or a line break in it never reaches a terminal raw."""

from __future__ import annotations

from typing import Any

from kit.names import printable, terminal
from kit.report.data import ReportData


def _t(v: Any) -> str:
    """A value from the store as one printable line."""
    return printable(str(v))


def _num(v: Any, digits: int = 2) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def run_header(run: dict[str, Any]) -> str:
    sha = _t((run.get("git_sha") or "-")[:10])
    return (
        f"run {_t(run['run_id'])}  source {_t(run['source'])}  status {_t(run.get('status') or '-')}\n"
        f"started {str(run['started_at'])[:19]} UTC  agent {_t(run.get('agent') or '-')}  "
        f"model {_t(run.get('model') or '-')}  git {sha}  config {_t(run.get('config_hash') or '-')}  "
        f"kit {_t(run.get('kit_version') or '-')}"
    )


def render(data: ReportData, *, reason_width: int = 100) -> str:
    out = [run_header(data.run), ""]
    width = max([len("case"), *(len(_t(c["case_id"])) for c in data.cases)])
    out.append(f"{'case':<{width}}  runs  pass  frac  pass^{data.k}  flaky")
    failing: dict[str, list[dict[str, Any]]] = {}
    for f in data.failing:
        failing.setdefault(f["case_id"], []).append(f)
    for c in data.cases:
        flag = "flaky" if c["flaky"] else ""
        errs = f"  {c['errors']} error(s)" if c["errors"] else ""
        out.append(
            f"{_t(c['case_id']):<{width}}  {c['n']:>4}  {c['c']:>4}  {_num(c['pass_fraction'])}  "
            f"{_num(c['pass_hat_k']):>6}  {flag}{errs}"
        )
        for f in failing.get(c["case_id"], []):
            reason = _t((f["reason"] or "").replace("\n", " ")[:reason_width])
            out.append(f"    {_t(f['outcome']):<5} {_t(f['check'])} ({f['times']}/{c['n']}): {reason}")
    if not data.cases:
        out.append("(no case results in this run)")
    if data.soft:
        out += ["", "soft gates                       n  pass  fail  skip  err  score  pass rate"]
        for s in data.soft:
            out.append(
                f"{_t(s['check']):<30} {s['n']:>3}  {s['passed']:>4}  {s['failed']:>4}  {s['skipped']:>4}  "
                f"{s['errors']:>3}  {_num(s['mean_score']):>5}  {_num(s['pass_rate'])}"
            )
    t = data.totals
    flaky = sum(1 for c in data.cases if c["flaky"])
    rate = "-" if t["pass_rate"] is None else f"{100 * t['pass_rate']:.1f}%"
    phk = "  ".join(f"pass^{k} {v:.2f}" for k, v in data.suite_pass_hat_k.items())
    out += [
        "",
        f"totals: {t['cases']} cases, {t['runs']} runs, {t['passed']} passed ({rate}), {t['errors']} errors, "
        f"{flaky} flaky" + (f"; {phk}" if phk else ""),
    ]
    if t.get("cost_usd") is not None or t.get("tokens"):
        # NULL when no trace gave a cost nor had a priced model: not recorded, never a 0 nobody measured.
        cost = "cost not recorded" if t.get("cost_usd") is None else f"cost ${t['cost_usd']:.4f}"
        out.append(f"{cost}, {t['tokens'] or 0} tokens")
    return terminal("\n".join(out))


def newly_successful_attacks(cmp: Any) -> list[Any]:
    """The red-team attacks (`redteam/...` cases) that passed in A and fail in B: what an attacker newly wins."""
    return [f for f in cmp.pass_to_fail if str(f.case_id).startswith("redteam/")]


def render_comparison(cmp: Any, run_a: dict[str, Any], run_b: dict[str, Any]) -> str:
    """`kit compare A B`: flips each way with the checks that caused them, then every pass-rate change."""
    out = [
        f"{side}: {_t(run['run_id'])} ({_t(run['source'])}, model {_t(run.get('model') or '-')}, "
        f"git {_t((run.get('git_sha') or '-')[:10])})"
        for side, run in (("A", run_a), ("B", run_b))
    ]
    out.append("")
    for title, flips in (("pass→fail", cmp.pass_to_fail), ("fail→pass", cmp.fail_to_pass)):
        out.append(f"{title}: {len(flips)}")
        for f in flips:
            why = ", ".join(map(_t, f.checks)) or "(no single check: see the failing attempts)"
            out.append(f"  {_t(f.case_id)}  {f.before:.2f} → {f.after:.2f}  checks: {why}")
    attacks = newly_successful_attacks(cmp)
    if attacks:  # a red-team attack the agent resisted in A and falls to in B
        out.append(f"newly successful attacks: {len(attacks)}")
        out += [f"  {_t(f.case_id)}  checks: {', '.join(map(_t, f.checks)) or '-'}" for f in attacks]
    moved = [c for c in cmp.changes if c.before != c.after]
    out.append(f"pass-rate changes: {len(moved)} of {len(cmp.changes)} common cases")
    for c in sorted(moved, key=lambda c: c.after - c.before):
        out.append(f"  {_t(c.case_id)}  {c.before:.2f} → {c.after:.2f}  ({c.after - c.before:+.2f})")
    if cmp.only_a:
        out.append(f"only in A: {', '.join(map(_t, cmp.only_a))}")
    if cmp.only_b:
        out.append(f"only in B: {', '.join(map(_t, cmp.only_b))}")
    return terminal("\n".join(out))
