"""What the runner shows: a progress bar on stderr and the per-case report (pass fraction, pass^k, the
failing checks with their reasons)."""

from __future__ import annotations

import sys
import time
from collections import Counter
from typing import Any, TextIO

from kit.names import printable
from kit.result import CaseRun


class Progress:
    """`[#####.....] 37/210 runs  2 failed  0 errors  105.2 runs/s` on stderr.

    On a terminal it redraws in place (at most ten times a second); in a CI log it prints a line at each
    quarter, so logs stay short.
    """

    def __init__(self, total: int, stream: TextIO | None = None, enabled: bool = True, width: int = 30) -> None:
        self.total, self.width, self.enabled = total, width, enabled and total > 0
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.done = self.failed = self.errors = 0
        self.t0 = time.perf_counter()
        self._last_draw = 0.0
        self._quarter = 0

    def update(self, run: CaseRun) -> None:
        self.done += 1
        self.failed += run.outcome == "fail"
        self.errors += run.outcome == "error"
        if not self.enabled:
            return
        now = time.perf_counter()
        if self.tty:
            if now - self._last_draw >= 0.1 or self.done == self.total:
                self._last_draw = now
                self.stream.write("\r" + self.line(now))
                if self.done == self.total:
                    self.stream.write("\n")
                self.stream.flush()
        elif self.done * 4 // self.total > self._quarter:
            self._quarter = self.done * 4 // self.total
            self.stream.write(self.line(now) + "\n")
            self.stream.flush()

    def line(self, now: float | None = None) -> str:
        elapsed = max((now or time.perf_counter()) - self.t0, 1e-9)
        filled = self.width * self.done // max(self.total, 1)
        bar = "#" * filled + "." * (self.width - filled)
        return (
            f"[{bar}] {self.done}/{self.total} runs  {self.failed} failed  {self.errors} errors  "
            f"{self.done / elapsed:.1f} runs/s"
        )


def failing_checks(runs: list[CaseRun]) -> list[tuple[str, str, int, str]]:
    """(outcome, check, how many runs, first reason) for every check that did not pass, most frequent first."""
    counts: Counter[tuple[str, str]] = Counter()
    reasons: dict[tuple[str, str], str] = {}
    for r in runs:
        if r.error is not None:
            key = ("error", "(run)")
            counts[key] += 1
            reasons.setdefault(key, r.error)
        for f in r.failures:
            key = (f.outcome, f.name)
            counts[key] += 1
            reasons.setdefault(key, f.reason)
    return [(o, name, n, reasons[(o, name)]) for (o, name), n in counts.most_common()]


def report(runs: list[CaseRun], summary: dict[str, Any], out: TextIO | None = None, *, verbose: bool = False) -> None:
    """Per case: passed/runs, pass fraction, pass^n, flaky; under each failing case, its failing checks."""
    out = out or sys.stdout
    by_case: dict[str, list[CaseRun]] = {}
    for r in runs:
        by_case.setdefault(r.case_id, []).append(r)
    width = max((len(c) for c in by_case), default=10)
    for cid, rs in by_case.items():
        s = summary["cases"][cid]
        n = s["runs"]
        mark = "PASS" if s["passed"] == n else ("ERROR" if s["errors"] == n else "FAIL")
        flaky = "  flaky" if s["flaky"] else ""
        if mark == "PASS" and not verbose:
            continue
        print(
            f"{mark:<5} {printable(cid):<{width}}  {s['passed']}/{n}  {s['pass_fraction']:.2f}  "
            f"pass^{n} {s['pass_hat_k'][str(n)]:.2f}{flaky}",
            file=out,
        )
        for outcome, name, count, reason in failing_checks(rs):
            # A reason or a check's name may carry a tool's name or error from the trace: one line, escaped.
            print(printable(f"        {outcome} {name} ({count}/{n}): {reason}"), file=out)
    cases = summary["cases"]
    passing = sum(s["passed"] == s["runs"] for s in cases.values())
    flaky = sum(s["flaky"] for s in cases.values())
    hat = summary.get("pass_hat_k") or {}
    kmax = max(hat, key=int, default=None)
    hat_text = f", pass^1 {hat['1']:.2f}" if kmax else ""
    if kmax and kmax != "1":
        hat_text += f", pass^{kmax} {hat[kmax]:.2f}"
    print(
        f"{passing}/{len(cases)} cases passed every run; {summary['passed']}/{summary['runs']} runs passed "
        f"({summary['pass_rate']:.0%}){hat_text}; {flaky} flaky; {summary['errors']} errors",
        file=out,
    )
    replayed = [r.metrics for r in runs if r.metrics.get("replayed_calls")]
    if replayed:  # kit.recording: the model's calls answered from recordings
        tokens = sum(m.get("recorded_tokens") or 0 for m in replayed)
        priced = [m["recorded_cost_usd"] for m in replayed if m.get("recorded_cost_usd") is not None]
        cost = f"${sum(priced):.4f}" if priced else "cost not recorded"
        print(
            f"{len(replayed)}/{len(runs)} runs replayed from recordings ({sum(m['replayed_calls'] for m in replayed)} "
            f"model calls): $0 spent; when recorded they cost {tokens:,} tokens, {cost}",
            file=out,
        )
