"""The statistics the gate and the comparisons rest on, exact and in pure Python (no SciPy in the kit).

- `fisher_drop` / `fisher_rise`: one-sided Fisher exact test on (passes, attempts) before and after.
- `holm`: Holm's step-down adjustment of p-values over a family (the cases compared).
- `wilson`: the Wilson score interval of a pass fraction.
- `smallest_detectable_drop`: the largest fall from 100% that a given number of attempts can still miss.
- `suite_pass_hat_k_intervals`: intervals for a suite's pass^k (the mean over cases of each case's p^k).
- `beta_cdf`, `beta_quantile`: the Beta distribution those intervals rest on.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import comb, exp, lgamma, log, log1p, sqrt

Z95 = 1.959963984540054  # the 97.5% quantile of the standard normal: a two-sided 95% interval


def _check_counts(passed: int, attempts: int) -> None:
    if attempts < 0 or not 0 <= passed <= attempts:
        raise ValueError(f"need 0 <= passed <= attempts, got passed={passed} attempts={attempts}")


def _hypergeom_tail(x: int, total: int, successes: int, draws: int, *, lower: bool) -> float:
    """P(X <= x) (lower) or P(X >= x) for X ~ Hypergeometric(total, successes, draws), summed exactly in
    integers and divided once: binomials of a few thousand attempts overflow a float long before this does
    (an int divided by an int is rounded once, correctly, however large both are)."""
    lo, hi = max(0, draws - (total - successes)), min(draws, successes)
    xs = range(lo, min(x, hi) + 1) if lower else range(max(x, lo), hi + 1)
    num = sum(comb(successes, i) * comb(total - successes, draws - i) for i in xs)
    return num / comb(total, draws)


def fisher_drop(passed_before: int, attempts_before: int, passed_after: int, attempts_after: int) -> float:
    """One-sided Fisher exact p-value that the pass rate fell: the chance, were both runs drawn from one
    pass rate, that the later run would have this few passes or fewer, given the passes of both together."""
    _check_counts(passed_before, attempts_before)
    _check_counts(passed_after, attempts_after)
    total = attempts_before + attempts_after
    if attempts_before == 0 or attempts_after == 0:
        return 1.0  # nothing to compare on one side: no evidence of a change
    return _hypergeom_tail(passed_after, total, passed_before + passed_after, attempts_after, lower=True)


def fisher_rise(passed_before: int, attempts_before: int, passed_after: int, attempts_after: int) -> float:
    """One-sided Fisher exact p-value that the pass rate rose (the mirror of `fisher_drop`)."""
    _check_counts(passed_before, attempts_before)
    _check_counts(passed_after, attempts_after)
    total = attempts_before + attempts_after
    if attempts_before == 0 or attempts_after == 0:
        return 1.0
    return _hypergeom_tail(passed_after, total, passed_before + passed_after, attempts_after, lower=False)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the order given: the i-th smallest of m is multiplied by m - i + 1, and
    each is kept at least as large as the one before it (step-down), capped at 1. Rejecting where the
    adjusted p is under alpha holds the chance of any false alarm over the family to alpha."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def wilson(passed: int, attempts: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of passed/attempts (95% by default). Unlike the normal approximation it
    is never empty at 0/n or n/n: 5 of 5 passed says the rate is likely above 57%, not that it is 100%."""
    _check_counts(passed, attempts)
    if attempts == 0:
        return 0.0, 1.0
    p = passed / attempts
    z2n = z * z / attempts
    centre = (p + z2n / 2) / (1 + z2n)
    half = z / (1 + z2n) * sqrt(p * (1 - p) / attempts + z2n / (4 * attempts))
    # At 0/n and n/n one bound is exactly 0 or 1; rounding must not move it off.
    return (0.0 if passed == 0 else max(0.0, centre - half), 1.0 if passed == attempts else min(1.0, centre + half))


def detectable_after(attempts: int, threshold: float) -> int | None:
    """The most passes a run of `attempts` may have after a run that passed all `attempts`, and still be
    told from chance (one-sided Fisher p under `threshold`); None when even 0 passes cannot be."""
    for passed in range(attempts - 1, -1, -1):
        if fisher_drop(attempts, attempts, passed, attempts) < threshold:
            return passed
    return None


def smallest_detectable_drop(attempts: int, alpha: float, family: int = 1) -> float | None:
    """The smallest fall in pass fraction, from 100%, that `attempts` runs per case before and after can
    tell from chance at `alpha` when `family` cases are compared (Holm's first step: p < alpha / family).
    None: no drop at all can be told apart (too few runs)."""
    if attempts < 1:
        return None
    passed = detectable_after(attempts, alpha / max(1, family))
    return None if passed is None else 1.0 - passed / attempts


def detectable_drop_sentence(attempts: int, alpha: float, family: int = 1) -> str:
    """The sentence that lets a team choose `runs` knowingly."""
    runs = f"{attempts} run{'s' if attempts != 1 else ''} per case"
    how = f"one-sided Fisher exact, alpha {alpha:g}" + (f", Holm over {family} cases" if family > 1 else "")
    drop = smallest_detectable_drop(attempts, alpha, family)
    if drop is None:
        return f"with {runs}, no drop, not even from 100% to 0%, can be told from chance ({how}): add runs"
    after = round((1 - drop) * attempts)
    return (
        f"with {runs}, a drop from 100% to {1 - drop:.0%} ({attempts}/{attempts} to {after}/{attempts}) is the "
        f"smallest this suite can detect ({how})"
    )


def beta_cdf(x: float, a: float, b: float) -> float:
    """The regularized incomplete beta function I_x(a, b): the CDF of Beta(a, b) at x, by its continued
    fraction (Lentz's method), on the side where it converges fast."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = exp(a * log(x) + b * log1p(-x) - (lgamma(a) + lgamma(b) - lgamma(a + b)))
    if x < (a + 1) / (a + b + 2):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1 - x) / b


def _beta_fraction(a: float, b: float, x: float) -> float:
    tiny, eps = 1e-300, 1e-15
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10_000):
        for num in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < eps:
            break
    return h


def beta_quantile(q: float, a: float, b: float) -> float:
    """The x at which Beta(a, b)'s CDF reaches q, by bisection (to 1e-12)."""
    lo, hi = 0.0, 1.0
    while hi - lo > 1e-12:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if beta_cdf(mid, a, b) < q else (lo, mid)
    return (lo + hi) / 2


def _beta_moment(a: float, b: float, j: int) -> float:
    """E[p^j] for p ~ Beta(a, b)."""
    out = 1.0
    for i in range(j):
        out *= (a + i) / (a + b + i)
    return out


def suite_pass_hat_k_intervals(
    counts: Sequence[tuple[int, int]], ks: Sequence[int], *, level: float = 0.95
) -> dict[int, tuple[float, float]]:
    """Intervals for a suite's pass^k, the mean over its cases of each case's chance that k runs all pass
    (p^k), for each k given. Each case's pass rate has the Jeffreys posterior Beta(passed + 1/2, failed +
    1/2); the suite's mean of p^k then has an exact mean and variance (the cases are independent), and the
    interval is the middle `level` of the Beta distribution with that mean and variance. For one case and
    k = 1 that is the Jeffreys interval itself. The interval never leaves out the estimate C(c,k)/C(n,k)
    averaged over cases (as at 5/5, whose upper bound is 1). The cases are the suite's own, not a sample:
    only the attempts vary. A k above some case's attempts has no pass^k (as in kit.aggregate), so no
    interval; nor has a suite without cases."""
    for c, n in counts:
        _check_counts(c, n)
    m = len(counts)
    out: dict[int, tuple[float, float]] = {}
    for k in sorted(set(ks)):
        if k < 1 or not m or any(n < k for _, n in counts):
            continue
        posteriors = [(c + 0.5, n - c + 0.5) for c, n in counts]
        mean = sum(_beta_moment(a, b, k) for a, b in posteriors) / m
        var = sum(_beta_moment(a, b, 2 * k) - _beta_moment(a, b, k) ** 2 for a, b in posteriors) / m**2
        point = sum(comb(c, k) / comb(n, k) for c, n in counts) / m
        # The Beta with this mean and variance (a mean of [0, 1] variables has var < mean (1 - mean)).
        spread = mean * (1 - mean) / var - 1
        a, b = mean * spread, (1 - mean) * spread
        tail = (1 - level) / 2
        lo, hi = beta_quantile(tail, a, b), beta_quantile(1 - tail, a, b)
        out[k] = (min(lo, point), max(hi, point))
    return out
