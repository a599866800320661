"""Aggregation over runs: pass fraction, pass^k, pass@k, flaky cases, flips between suite runs, and two runs' per-case
pass counts told apart from chance (`evidence`)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from math import comb
from typing import Any, Literal

from kit.result import CaseRun
from kit.stats import detectable_drop_sentence, fisher_drop, fisher_rise, holm, suite_pass_hat_k_intervals, wilson


def pass_hat_k(c: int, n: int, k: int) -> float:
    """The chance that k runs drawn from the n all pass: C(c,k)/C(n,k) (tau-bench's estimator)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got c={c} n={n} k={k}")
    return comb(c, k) / comb(n, k)


def pass_at_k(c: int, n: int, k: int) -> float:
    """The chance that at least one of k runs drawn from the n passes: 1 - C(n-c,k)/C(n,k)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got c={c} n={n} k={k}")
    return 1.0 - comb(n - c, k) / comb(n, k)


def _ratios(m: int, n: int) -> list[float]:
    """C(m,k)/C(n,k) for k = 1..n, exactly as `pass_hat_k` computes them: the binomials are carried from
    one k to the next (C(n,k) = C(n,k-1)*(n-k+1)/k), not recomputed, so n runs cost O(n) big-integer
    steps instead of O(n^2)."""
    out = []
    top, bottom = 1, 1
    for k in range(1, n + 1):
        top = top * (m - k + 1) // k if k <= m else 0
        bottom = bottom * (n - k + 1) // k
        out.append(top / bottom)
    return out


def case_summary(runs: list[CaseRun]) -> dict[str, Any]:
    n = len(runs)
    c = sum(r.passed for r in runs)
    failing: dict[str, str] = {}
    for r in runs:
        for f in r.failures:
            failing.setdefault(f.name, f.reason)
        if r.error is not None:
            failing.setdefault("(run error)", r.error)
    return {
        "runs": n,
        "passed": c,
        "errors": sum(r.outcome == "error" for r in runs),
        "pass_fraction": round(c / n, 4),
        "flaky": 0 < c < n,
        "pass_hat_k": {str(k): round(v, 4) for k, v in enumerate(_ratios(c, n), 1)},
        "pass_at_k": {str(k): round(1.0 - v, 4) for k, v in enumerate(_ratios(n - c, n), 1)},
        "failing": failing,
    }


def summarize(runs: Iterable[CaseRun]) -> dict[str, Any]:
    """The `summary` object of `kit check --json`; suite-level pass^k is the mean over cases."""
    by_case: dict[str, list[CaseRun]] = {}
    for r in runs:
        by_case.setdefault(r.case_id, []).append(r)
    cases = {cid: case_summary(rs) for cid, rs in by_case.items()}
    total = sum(s["runs"] for s in cases.values())
    passed = sum(s["passed"] for s in cases.values())
    out: dict[str, Any] = {
        "runs": total,
        "passed": passed,
        "errors": sum(s["errors"] for s in cases.values()),
        "pass_rate": round(passed / total, 4) if total else 0.0,
        "cases": cases,
    }
    if cases:
        kmax = min(s["runs"] for s in cases.values())
        out["pass_hat_k"] = {
            str(k): round(sum(s["pass_hat_k"][str(k)] for s in cases.values()) / len(cases), 4)
            for k in range(1, kmax + 1)
        }
    return out


def flips(before: Mapping[str, bool], after: Mapping[str, bool]) -> dict[str, list[str]]:
    """Cases that went pass→fail and fail→pass between two suite runs (cases in both)."""
    common = sorted(before.keys() & after.keys())
    return {
        "pass_to_fail": [c for c in common if before[c] and not after[c]],
        "fail_to_pass": [c for c in common if not before[c] and after[c]],
    }


# Two runs of a suite, case by case, told apart from chance. Pure over (passed, attempts) per case, so the
# gate, `kit compare` (text and JSON), the HTML report and the PR comment all show one verdict.

Verdict = Literal["regression", "improvement", "noise", "unchanged"]
Counts = Mapping[str, tuple[int, int]]  # case id -> (passed, attempts)


@dataclass(frozen=True)
class Side:
    """A case's passes over its attempts in one run, with the Wilson 95% interval of its fraction."""

    passed: int
    attempts: int

    @property
    def fraction(self) -> float:
        return self.passed / self.attempts if self.attempts else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.passed, self.attempts)

    def text(self) -> str:
        lo, hi = self.interval
        return f"{self.passed}/{self.attempts} ({self.fraction:.2f}, 95% {lo:.2f}-{hi:.2f})"

    def to_json(self) -> dict[str, Any]:
        lo, hi = self.interval
        return {
            "passed": self.passed,
            "attempts": self.attempts,
            "fraction": round(self.fraction, 4),
            "interval": [round(lo, 4), round(hi, 4)],
        }


@dataclass(frozen=True)
class CaseChange:
    """One case in both runs. `p_value` is the one-sided Fisher exact p in the direction the fraction
    moved (a drop when it did not move), Holm-adjusted over every case compared: what `alpha` is held to."""

    case_id: str
    before: Side
    after: Side
    p_value: float
    verdict: Verdict

    def to_json(self) -> dict[str, Any]:
        return {
            "case_id": self.case_id,
            "before": self.before.to_json(),
            "after": self.after.to_json(),
            "p_value": self.p_value,
            "verdict": self.verdict,
        }


def p_text(p: float | None) -> str:
    """A p-value as every front end prints it: two decimals, or two significant figures under 0.01, cut
    rather than rounded, so a p under alpha never prints as alpha itself ("p = 0.01 < alpha 0.01")."""
    if p is None:
        return "-"
    if p <= 0:
        return "0"
    if p >= 0.01:
        return f"{math.floor(p * 100 * (1 + 1e-12)) / 100:.2f}"
    unit = 10.0 ** (math.floor(math.log10(p)) - 1)
    return f"{math.floor(p / unit * (1 + 1e-12)) * unit:#.2g}"


def case_changes(before: Counts, after: Counts, alpha: float) -> list[CaseChange]:
    """Every case in both runs, by id, with its verdict: a regression when the one-sided Fisher exact test
    of a drop gives a Holm-adjusted p under `alpha` (an improvement likewise for a rise), unchanged when the
    fraction is the same, noise otherwise. Holm runs over all the cases compared, so a suite of many cases
    does not fail on one chance drop among them."""
    common = sorted(before.keys() & after.keys())
    sides = [(Side(*before[c]), Side(*after[c])) for c in common]
    drops = holm([fisher_drop(a.passed, a.attempts, b.passed, b.attempts) for a, b in sides])
    rises = holm([fisher_rise(a.passed, a.attempts, b.passed, b.attempts) for a, b in sides])
    out = []
    for case_id, (a, b), drop, rise in zip(common, sides, drops, rises, strict=True):
        moved = b.passed * a.attempts - a.passed * b.attempts  # the sign of after - before, exactly
        p = rise if moved > 0 else drop
        verdict: Verdict
        if moved < 0 and drop < alpha:
            verdict = "regression"
        elif moved > 0 and rise < alpha:
            verdict = "improvement"
        else:
            verdict = "unchanged" if moved == 0 else "noise"
        out.append(CaseChange(case_id, a, b, p, verdict))
    return out


def flaky_cases(counts: Counts) -> list[tuple[str, Side]]:
    """Cases that passed some attempts and failed others (0 < fraction < 1), by id."""
    return [(c, Side(p, n)) for c, (p, n) in sorted(counts.items()) if 0 < p < n]


@dataclass(frozen=True)
class SuiteHatK:
    """A suite's pass^k (the mean over cases) with its 95% interval (kit.stats.suite_pass_hat_k_intervals)."""

    k: int
    value: float
    interval: tuple[float, float]

    def text(self) -> str:
        return f"pass^{self.k} {self.value:.2f} (95% {self.interval[0]:.2f}-{self.interval[1]:.2f})"

    def to_json(self) -> dict[str, Any]:
        return {"value": round(self.value, 4), "interval": [round(v, 4) for v in self.interval]}


def suite_hat_k(counts: Counts, ks: Iterable[int]) -> list[SuiteHatK]:
    """The suite's pass^k for each k given that every case's attempts allow, with its interval."""
    pairs = list(counts.values())
    return [
        SuiteHatK(k, sum(pass_hat_k(c, n, k) for c, n in pairs) / len(pairs), interval)
        for k, interval in suite_pass_hat_k_intervals(pairs, list(ks)).items()
    ]


@dataclass(frozen=True)
class Evidence:
    """What a reader (and the gate) needs to tell a change from chance between two runs."""

    alpha: float
    changes: tuple[CaseChange, ...]
    only_before: tuple[str, ...]
    only_after: tuple[str, ...]
    flaky_before: tuple[tuple[str, Side], ...]
    flaky_after: tuple[tuple[str, Side], ...]
    suite_before: tuple[SuiteHatK, ...]
    suite_after: tuple[SuiteHatK, ...]
    detectable: tuple[str, ...]  # the smallest detectable drop, one sentence per attempts count

    def by_verdict(self, verdict: Verdict) -> list[CaseChange]:
        return [c for c in self.changes if c.verdict == verdict]

    def to_json(self) -> dict[str, Any]:
        def flaky(cases: tuple[tuple[str, Side], ...]) -> list[dict[str, Any]]:
            return [{"case_id": c, **s.to_json()} for c, s in cases]

        return {
            "alpha": self.alpha,
            "test": "one-sided Fisher exact, Holm-adjusted over the cases compared",
            "cases": [c.to_json() for c in self.changes],
            "verdicts": {v: [c.case_id for c in self.by_verdict(v)] for v in VERDICTS},
            "only_before": list(self.only_before),
            "only_after": list(self.only_after),
            "flaky": {"before": flaky(self.flaky_before), "after": flaky(self.flaky_after)},
            "suite_pass_hat_k": {
                "before": {str(s.k): s.to_json() for s in self.suite_before},
                "after": {str(s.k): s.to_json() for s in self.suite_after},
            },
            "smallest_detectable_drop": list(self.detectable),
        }


VERDICTS: tuple[Verdict, ...] = ("regression", "improvement", "noise", "unchanged")


def evidence(before: Counts, after: Counts, alpha: float, ks: Iterable[int] = (1,)) -> Evidence:
    """Two runs' per-case counts compared (see `case_changes`), their flaky cases, their suites' pass^k
    with intervals, and the smallest drop the later run's attempts can detect over the cases compared."""
    changes = case_changes(before, after, alpha)
    family = len(changes) or len(after)
    attempts = sorted({n for _, n in after.values()})
    ks = list(ks)
    return Evidence(
        alpha=alpha,
        changes=tuple(changes),
        only_before=tuple(sorted(before.keys() - after.keys())),
        only_after=tuple(sorted(after.keys() - before.keys())),
        flaky_before=tuple(flaky_cases(before)),
        flaky_after=tuple(flaky_cases(after)),
        suite_before=tuple(suite_hat_k(before, ks)),
        suite_after=tuple(suite_hat_k(after, ks)),
        detectable=tuple(detectable_drop_sentence(n, alpha, family) for n in attempts[:3]),
    )
