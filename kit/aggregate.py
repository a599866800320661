"""Aggregation over runs: pass fraction, pass^k, pass@k, flaky cases, flips between suite runs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from math import comb
from typing import Any

from kit.result import CaseRun


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
