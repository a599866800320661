"""The fast paths of the oracle decide exactly as the slow ones: canonical keys, trace reading, output."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from kit.aggregate import _ratios, pass_at_k, pass_hat_k
from kit.canonical import canonical, canonical_key

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.sampled_from([0, 1, -1, 2**63, 2**64, 1.0, -0.0, 0.5, 1e16, 1e-7, math.nan, math.inf, -math.inf, 3.0])
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(alphabet='aé\u00e9\u2028"\\\n0.', max_size=4)
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "b", "é", "1"]), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=500, deadline=None)
@given(VALUES, VALUES)
def test_canonical_key_is_equal_exactly_when_canonical_is(a, b):
    assert (canonical_key(a) == canonical_key(b)) == (canonical(a) == canonical(b))
    assert canonical_key(a) == canonical_key(a)


def test_canonical_key_keeps_what_orjson_would_blur():
    assert canonical_key({"x": math.nan}) != canonical_key({"x": None})
    assert canonical_key([math.inf]) != canonical_key([None])
    assert canonical_key({"n": 2**64}) == canonical_key({"n": float(2**64)})
    assert canonical_key({"b": 1, "a": 1.0}) == canonical_key({"a": 1, "b": 1})
    assert canonical_key({"x": True}) != canonical_key({"x": 1})


def test_pass_k_curves_are_the_exact_binomial_ratios():
    for n in (1, 2, 3, 10, 57, 300):
        for c in range(n + 1):
            assert _ratios(c, n) == [pass_hat_k(c, n, k) for k in range(1, n + 1)]
            assert [1.0 - v for v in _ratios(n - c, n)] == [pass_at_k(c, n, k) for k in range(1, n + 1)]
