"""The statistics the gate and the comparisons rest on, exact and in pure Python (no SciPy in the kit).

- `fisher_drop` / `fisher_rise`: one-sided Fisher exact test on (passes, attempts) before and after.
- `holm`: Holm's step-down adjustment of p-values over a family (the cases compared).
- `wilson`: the Wilson score interval of a pass fraction.
- `smallest_detectable_drop`: the largest fall from 100% that a given number of attempts can still miss.
- `suite_pass_hat_k_interval`: an interval for a suite's pass^k (the mean over cases of each case's p^k).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from fractions import Fraction
from math import comb, sqrt

Z95 = 1.959963984540054  # the 97.5% quantile of the standard normal: a two-sided 95% interval


def _check_counts(passed: int, attempts: int) -> None:
    if attempts < 0 or not 0 <= passed <= attempts:
        raise ValueError(f"need 0 <= passed <= attempts, got passed={passed} attempts={attempts}")


def _hypergeom_tail(x: int, total: int, successes: int, draws: int, *, lower: bool) -> float:
    """P(X <= x) (lower) or P(X >= x) for X ~ Hypergeometric(total, successes, draws), summed exactly in
    integers and divided once: binomials of a few thousand attempts overflow a float long before this does."""
    lo, hi = max(0, draws - (total - successes)), min(draws, successes)
    xs = range(lo, min(x, hi) + 1) if lower else range(max(x, lo), hi + 1)
    num = sum(comb(successes, i) * comb(total - successes, draws - i) for i in xs)
    return float(Fraction(num, comb(total, draws)))


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


def suite_pass_hat_k_intervals(
    counts: Sequence[tuple[int, int]], ks: Sequence[int], *, level: float = 0.95, draws: int = 1000, seed: int = 0
) -> dict[int, tuple[float, float]]:
    """Intervals for a suite's pass^k, the mean over its cases of each case's chance that k runs all pass
    (p^k), for each k given. Each case's pass rate is drawn from its Jeffreys posterior,
    Beta(passed + 1/2, failed + 1/2), `draws` times with a fixed seed (the same counts always give the same
    interval, and one set of draws serves every k); the interval is the middle `level` of the means. The
    cases are the suite's own, not a sample: only the attempts vary. A k above some case's attempts has no
    pass^k (as in kit.aggregate), so no interval; nor has a suite without cases."""
    for c, n in counts:
        _check_counts(c, n)
    wanted = sorted({k for k in ks if k >= 1 and counts and all(n >= k for _, n in counts)})
    if not wanted:
        return {}
    rng = random.Random(seed)
    m = len(counts)
    means: dict[int, list[float]] = {k: [] for k in wanted}
    for _ in range(draws):
        rates = [rng.betavariate(c + 0.5, n - c + 0.5) for c, n in counts]
        for k in wanted:
            means[k].append(sum(r**k for r in rates) / m)
    tail = (1 - level) / 2
    out = {}
    for k, values in means.items():
        values.sort()
        out[k] = (values[int(tail * (draws - 1))], values[round((1 - tail) * (draws - 1))])
    return out
