"""kit.stats against values worked out by hand (no SciPy in the kit, nor in its test environment)."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from kit import stats


def test_fisher_matches_the_hypergeometric_by_hand():
    # Fisher's lady tasting tea: 4 of 4 before, 0 of 4 after; one table of C(8,4) = 70 is this extreme.
    assert stats.fisher_drop(4, 4, 0, 4) == pytest.approx(1 / 70, rel=1e-12)
    assert stats.fisher_rise(0, 4, 4, 4) == pytest.approx(1 / 70, rel=1e-12)
    # 5/5 then 2/5: P(after <= 2 | 7 passes in 10) = C(7,5)C(3,0) / C(10,5) = 21/252 (after = 2 is the least).
    assert stats.fisher_drop(5, 5, 2, 5) == pytest.approx(21 / 252, rel=1e-12)
    assert stats.fisher_drop(5, 5, 1, 5) == pytest.approx(6 / 252, rel=1e-12)
    # 3/3 then 0/3: 1 / C(6,3) = 0.05 exactly, not under 0.05.
    assert stats.fisher_drop(3, 3, 0, 3) == pytest.approx(0.05, rel=1e-12)
    # 40/40 then 30/40: every after-table this extreme has all 10 failures after, C(70,40)/C(80,40),
    # which is the product (40·39·…·31)/(80·79·…·71).
    by_hand = math.prod(Fraction(40 - i, 80 - i) for i in range(10))
    assert stats.fisher_drop(40, 40, 30, 40) == pytest.approx(float(by_hand), rel=1e-12)
    assert 5.1e-4 < float(by_hand) < 5.2e-4


def test_fisher_on_halves_is_symmetric():
    # 38/40 then 37/40: the 5 failures fall in one half or the other alike, so P(>= 3 after) = P(<= 2 after)
    # and the two sum to 1: p = 1/2 exactly.
    assert stats.fisher_drop(38, 40, 37, 40) == pytest.approx(0.5, abs=1e-15)


def test_the_two_tails_overlap_in_the_observed_table():
    drop, rise = stats.fisher_drop(7, 10, 4, 12), stats.fisher_rise(7, 10, 4, 12)
    # P(X <= x) + P(X >= x) = 1 + P(X = x); P(X = 4) with 11 passes in 22, 12 drawn:
    point = math.comb(11, 4) * math.comb(11, 8) / math.comb(22, 12)
    assert drop + rise == pytest.approx(1 + point, rel=1e-12)


def test_fisher_handles_thousands_of_attempts_exactly():
    # Binomials this size overflow a float; the sum is carried in integers.
    p = stats.fisher_drop(1990, 2000, 1950, 2000)
    assert 0 < p < 1e-5
    assert stats.fisher_drop(2000, 2000, 2000, 2000) == 1.0


def test_no_attempts_on_a_side_is_no_evidence_and_bad_counts_are_refused():
    assert stats.fisher_drop(0, 0, 0, 5) == 1.0 and stats.fisher_rise(3, 3, 0, 0) == 1.0
    with pytest.raises(ValueError, match="need 0 <= passed <= attempts, got passed=6 attempts=5"):
        stats.fisher_drop(6, 5, 1, 5)


def test_holm_by_hand():
    # sorted: 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, 0.04·1 = 0.04 -> kept at 0.06 (step-down).
    assert stats.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert stats.holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])  # capped at 1
    assert stats.holm([0.02]) == [0.02] and stats.holm([]) == []


def test_wilson_by_hand():
    z2 = stats.Z95**2
    # At 0/n the upper bound is z²/(n + z²); at n/n the lower bound is n/(n + z²).
    assert stats.wilson(0, 10) == pytest.approx((0.0, z2 / (10 + z2)))
    assert stats.wilson(10, 10) == pytest.approx((10 / (10 + z2), 1.0))
    # 5/10: centre 1/2, half-width z/(1 + z²/n) · sqrt(1/40 + z²/400) = 0.2634.
    lo, hi = stats.wilson(5, 10)
    assert (round(lo, 4), round(hi, 4)) == (0.2366, 0.7634)
    assert stats.wilson(0, 0) == (0.0, 1.0)


def test_smallest_detectable_drop_by_hand():
    # 5 runs: 1/5 gives 6/252 < 0.05, 2/5 gives 21/252 > 0.05, so 100% -> 20% is the least.
    assert stats.smallest_detectable_drop(5, 0.05) == pytest.approx(0.8)
    # 3 runs: even 0/3 gives 1/20, not under 0.05.
    assert stats.smallest_detectable_drop(3, 0.05) is None
    # 4 runs: 0/4 gives 1/70; 1/4 gives 5/70 > 0.05.
    assert stats.smallest_detectable_drop(4, 0.05) == pytest.approx(1.0)
    # Over 3 cases Holm's first step needs p < alpha/3: 2/5 -> 1/42 = 0.024 > 0.0167; only 0/5 (1/252) passes.
    assert stats.smallest_detectable_drop(5, 0.05, family=3) == pytest.approx(1.0)
    assert stats.detectable_drop_sentence(5, 0.05) == (
        "with 5 runs per case, a drop from 100% to 20% (5/5 to 1/5) is the smallest this suite can detect "
        "(one-sided Fisher exact, alpha 0.05)"
    )
    assert "with 1 run per case, no drop, not even from 100% to 0%, can be told" in stats.detectable_drop_sentence(
        1, 0.05
    )


def _beta_half_three_halves_cdf(x: float) -> float:
    """Beta(1/2, 3/2)'s CDF by hand: x = sin²θ turns the integral of x^-1/2 (1-x)^1/2 / B(1/2, 3/2) into
    (2/π)(θ + sinθ cosθ)."""
    return 2 / math.pi * (math.asin(math.sqrt(x)) + math.sqrt(x * (1 - x)))


def _quantile(cdf, q: float) -> float:
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cdf(mid) < q else (lo, mid)
    return lo


def test_beta_cdf_by_hand():
    for x in (0.001, 0.2, 0.5, 0.7, 0.999):
        assert stats.beta_cdf(x, 1, 1) == pytest.approx(x, abs=1e-12)  # uniform
        assert stats.beta_cdf(x, 2, 1) == pytest.approx(x * x, abs=1e-12)
        assert stats.beta_cdf(x, 0.5, 1.5) == pytest.approx(_beta_half_three_halves_cdf(x), abs=1e-12)
        assert stats.beta_cdf(x, 40.5, 2.5) == pytest.approx(1 - stats.beta_cdf(1 - x, 2.5, 40.5), abs=1e-12)
    assert stats.beta_quantile(0.975, 0.5, 1.5) == pytest.approx(_quantile(_beta_half_three_halves_cdf, 0.975))


def test_suite_pass_hat_k_interval_is_the_jeffreys_interval_for_one_case():
    # One case at 0/1: the Jeffreys posterior Beta(1/2, 3/2); its lower bound is the estimate 0 itself.
    upper = _quantile(_beta_half_three_halves_cdf, 0.975)
    assert stats.suite_pass_hat_k_intervals([(0, 1)], [1])[1] == pytest.approx((0.0, upper), abs=1e-9)
    # 1/1 mirrors it: Beta(3/2, 1/2); the upper bound is the estimate 1.
    lower = 1 - upper
    assert stats.suite_pass_hat_k_intervals([(1, 1)], [1])[1] == pytest.approx((lower, 1.0), abs=1e-9)


def test_suite_pass_hat_k_intervals_shrink_with_attempts_and_skip_undefined_k():
    counts = [(38, 40), (40, 40), (20, 40)]
    got = stats.suite_pass_hat_k_intervals(counts, [1, 2, 50])
    assert set(got) == {1, 2}  # k = 50 is above the attempts: no pass^k, no interval
    (lo1, hi1), (lo2, hi2) = got[1], got[2]
    point1 = (38 + 40 + 20) / 120
    assert lo1 < point1 < hi1 and lo2 < lo1 and hi2 < hi1  # pass^2 is below pass^1
    # The exact mean and variance of the suite's mean: its middle is near the posterior mean.
    posterior_mean = (38.5 / 41 + 40.5 / 41 + 20.5 / 41) / 3
    assert lo1 < posterior_mean < hi1
    wider = stats.suite_pass_hat_k_intervals([(19, 20), (20, 20), (10, 20)], [1])[1]
    assert wider[1] - wider[0] > hi1 - lo1  # half the attempts: a wider interval
    assert stats.suite_pass_hat_k_intervals([], [1]) == {}
