"""Property tests: canonical argument comparison and the pass^k / pass@k estimators."""

from __future__ import annotations

import random
from itertools import combinations, pairwise
from math import comb

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kit.aggregate import pass_at_k, pass_hat_k, summarize
from kit.canonical import canonical, deep_equal, normalise
from kit.result import CaseRun, Result

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**6), 10**6)
    | st.text(max_size=8)
    | st.floats(allow_nan=False, allow_infinity=False, width=32)
)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=20,
)


def shuffled(value, rnd: random.Random):
    """The same JSON value with every object's keys in another order and integral floats as ints or floats."""
    if isinstance(value, dict):
        items = list(value.items())
        rnd.shuffle(items)
        return {k: shuffled(v, rnd) for k, v in items}
    if isinstance(value, list):
        return [shuffled(v, rnd) for v in value]
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**52:
        return int(value) if rnd.random() < 0.5 else value
    if isinstance(value, int) and not isinstance(value, bool) and rnd.random() < 0.5:
        return float(value)
    return value


@given(json_values, st.integers(0, 2**32))
def test_canonical_ignores_key_order_and_number_spelling(value, seed):
    other = shuffled(value, random.Random(seed))
    assert canonical(value) == canonical(other)
    assert deep_equal(value, other)


@given(json_values, json_values)
def test_canonical_equality_agrees_with_deep_equality(a, b):
    assert (canonical(a) == canonical(b)) == deep_equal(normalise(a), normalise(b))


@given(json_values)
def test_canonical_is_idempotent_through_normalise(value):
    assert canonical(normalise(value)) == canonical(value)


def test_bool_never_equals_a_number():
    assert canonical({"x": True}) != canonical({"x": 1})
    assert not deep_equal(True, 1) and not deep_equal(0, False)
    assert deep_equal(1, 1.0) and canonical([1.0]) == canonical([1])


counts = st.integers(1, 12).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n)))


@given(counts, st.data())
def test_pass_hat_k_is_the_chance_that_k_drawn_runs_all_pass(cn, data):
    c, n = cn
    k = data.draw(st.integers(1, n))
    runs = [True] * c + [False] * (n - c)
    drawn = list(combinations(runs, k))
    assert pass_hat_k(c, n, k) == pytest.approx(sum(all(d) for d in drawn) / len(drawn))
    assert pass_at_k(c, n, k) == pytest.approx(sum(any(d) for d in drawn) / len(drawn))


@given(counts)
def test_pass_hat_k_bounds_and_monotonicity(cn):
    c, n = cn
    values = [pass_hat_k(c, n, k) for k in range(1, n + 1)]
    assert values[0] == pytest.approx(c / n)
    assert all(0.0 <= v <= 1.0 for v in values)
    assert all(a >= b for a, b in pairwise(values))  # never rises with k
    assert values[-1] == (1.0 if c == n else 0.0)
    assert all(pass_hat_k(c, n, k) <= pass_at_k(c, n, k) + 1e-12 for k in range(1, n + 1))


def test_pass_hat_k_refuses_impossible_counts():
    for c, n, k in [(3, 2, 1), (1, 2, 3), (1, 2, 0), (-1, 2, 1)]:
        with pytest.raises(ValueError):
            pass_hat_k(c, n, k)


@settings(max_examples=50)
@given(st.lists(st.tuples(st.sampled_from("abc"), st.booleans()), min_size=1, max_size=30))
def test_summary_counts_and_suite_pass_hat_k(runs):
    case_runs = [CaseRun(cid, i, (Result("x", ok),)) for i, (cid, ok) in enumerate(runs)]
    s = summarize(case_runs)
    assert s["runs"] == len(runs) and s["passed"] == sum(ok for _, ok in runs)
    for cid, cs in s["cases"].items():
        oks = [ok for c, ok in runs if c == cid]
        assert cs["runs"] == len(oks) and cs["passed"] == sum(oks)
        assert cs["flaky"] == (0 < sum(oks) < len(oks))
        assert cs["pass_hat_k"]["1"] == round(sum(oks) / len(oks), 4)
        n, c = len(oks), sum(oks)
        assert cs["pass_hat_k"][str(n)] == round(comb(c, n) / comb(n, n), 4)
    mean1 = sum(cs["pass_hat_k"]["1"] for cs in s["cases"].values()) / len(s["cases"])
    assert s["pass_hat_k"]["1"] == pytest.approx(mean1, abs=1e-4)


def test_errors_are_kept_apart_from_failures():
    runs = [
        CaseRun("a", 0, (Result("x", True),)),
        CaseRun("a", 1, (), error="agent timed out after 30 s"),
        CaseRun("a", 2, (Result("x", False, "nope"),)),
    ]
    s = summarize(runs)["cases"]["a"]
    assert s["runs"] == 3 and s["passed"] == 1 and s["errors"] == 1
    assert s["failing"] == {"(run error)": "agent timed out after 30 s", "x": "nope"}
