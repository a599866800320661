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


SPAN_VALUES = {
    "kind": st.sampled_from(["llm", "tool", "message", "other", 3]),
    "name": st.none() | st.text(max_size=3) | st.integers(),
    "input": st.none()
    | st.just("")
    | st.just('{"a": 1.0}')
    | st.just("[1]")
    | st.dictionaries(st.sampled_from("ab"), SCALARS, max_size=2),
    "tokens_in": st.none() | st.integers(-2, 5) | st.sampled_from([1.0, 1.5, "3", "x"]),
    "cost_usd": st.none() | st.floats(allow_nan=False) | st.sampled_from([1, "0.5", "x"]),
    "latency_ms": st.none() | st.integers(0, 9) | st.sampled_from(["5", "x"]),
    "turn": st.none() | st.integers(-1, 3),
    "extra": st.integers() | st.lists(st.integers(), max_size=2),
}
SPANS = st.lists(
    st.fixed_dictionaries(
        {"kind": SPAN_VALUES["kind"]}, optional={k: v for k, v in SPAN_VALUES.items() if k != "kind"}
    ),
    max_size=4,
)


@settings(max_examples=400, deadline=None)
@given(SPANS)
def test_spans_read_on_the_fast_path_equal_those_read_in_full(spans):
    from kit.errors import KitInputError
    from kit.trace import Span, _fast_spans, parse_trace

    fast = _fast_spans(spans)
    try:
        full = [Span.model_validate(s) for s in spans]
    except Exception:
        full = None
    if fast is not None:
        assert full is not None and [s.model_dump() for s in fast] == [s.model_dump() for s in full]
    try:
        trace = parse_trace({"case_id": "c", "spans": spans})
    except KitInputError as e:
        assert full is None and "invalid trace: spans." in str(e)
    else:
        assert full is not None and trace.spans == full
        dumped = trace.model_dump(mode="json")["spans"]
        assert dumped == [s.model_dump(mode="json") for s in full]
        assert all(d["turn"] is not None for d in dumped if "turn" in d)


def test_reading_a_trace_file_with_what_orjson_refuses_gives_what_json_gives(tmp_path):
    from kit.trace import read_traces

    big = 123456789012345678901234567890
    text = '{"case_id": "c", "spans": [{"kind": "tool", "input": {"n": NaN, "big": ' + str(big) + "}}]}"
    (tmp_path / "t.json").write_text(text)
    traces, errors = read_traces(tmp_path / "t.json")
    assert not errors and traces[0].spans[0].input["big"] == big
    assert math.isnan(traces[0].spans[0].input["n"])
    (tmp_path / "l.jsonl").write_text('{"case_id": "a"}\n{"case_id": "b", "attempt": 2}\n')
    traces, errors = read_traces(tmp_path / "l.jsonl")
    assert not errors and [(t.case_id, t.attempt) for t in traces] == [("a", 0), ("b", 2)]
    (tmp_path / "bad.json").write_bytes(b'{"case_id": "\xff"}')
    traces, errors = read_traces(tmp_path / "bad.json")
    assert not traces and "not UTF-8 text: byte 0xff at offset 13" in str(errors[0])


def test_the_three_declarations_of_a_span_agree():
    """A span's fields are written three times, each for its own reader: `_SpanModel` (validation and its
    messages), `_FastSpan` (the same types checked in Rust) and `Span` (type hints and the defaults an
    absent field reads as). A field added to one and not the others would read or dump differently."""
    from typing import get_type_hints

    from kit.trace import Span, _FastSpan, _SpanModel

    model = _SpanModel.model_fields
    assert set(get_type_hints(_FastSpan)) == set(model)
    assert set(Span.__annotations__) == set(model)
    for name, f in model.items():
        if name in ("kind", "input"):  # always set on the instance (required; `{}` when absent)
            continue
        assert getattr(Span, name) == f.default, name
