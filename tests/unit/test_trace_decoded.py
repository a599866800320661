"""A trace read from a file takes the decoded fast path (`kit.trace._decoded_spans`): it must read exactly as
the general path reads the same JSON, and refuse exactly what it refuses, with the same words."""

from __future__ import annotations

import json
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from kit.errors import KitInputError
from kit.trace import _DECODED_RULES, Span, _SpanModel, parse_trace, read_traces

EDGES = [0, 1, -1, 2**53, 2**53 + 1, -(2**53), -(2**53) - 1, 2**64, True, False, 0.5, -0.0, math.inf, math.nan]
VALUE = (
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.sampled_from(EDGES)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(alphabet="ab\u2028", max_size=2)
    | st.lists(st.integers(0, 2), max_size=2)
    | st.dictionaries(st.sampled_from("ab"), st.integers(0, 2), max_size=2)
)
FIELDS = {
    "kind": st.sampled_from(["llm", "tool", "message", "other", "LLM"]) | VALUE,
    "name": VALUE,
    "role": VALUE,
    "agent": VALUE,
    "server": VALUE,
    "content": VALUE,
    "input": VALUE | st.just('{"a": 1}'),
    "output": VALUE,
    "error": VALUE,
    "tokens_in": VALUE,
    "tokens_out": VALUE,
    "cost_usd": VALUE,
    "latency_ms": VALUE,
    "turn": VALUE,
    "executed": VALUE,
}
SPAN = st.fixed_dictionaries({}, optional=FIELDS)
TRACE = st.fixed_dictionaries(
    {"case_id": st.just("c"), "spans": st.lists(SPAN, max_size=4)},
    optional={"latency_ms": VALUE, "attempt": st.integers(0, 2)},
)


def _read(data: dict, *, decoded: bool) -> object:
    """The trace's spans as dumped (in order, key by key), or its error's words."""
    try:
        trace = parse_trace(json.loads(json.dumps(data)), file="t.json", decoded=decoded)
    except KitInputError as e:
        return ("error", str(e))
    return [list(s.model_dump().items()) for s in trace.spans], trace.model_dump(mode="json")


def _same(a: object, b: object) -> bool:
    # NaN is not equal to itself: compare the JSON text, where both are written alike.
    return json.dumps(a, default=repr) == json.dumps(b, default=repr)


@settings(max_examples=600, deadline=None)
@given(TRACE)
def test_a_decoded_trace_reads_as_the_general_path_reads_it(data):
    assert _same(_read(data, decoded=True), _read(data, decoded=False))


def test_the_decoded_path_takes_only_what_needs_no_change_but_a_float():
    from kit.trace import _decoded_spans

    spans = [{"kind": "llm", "latency_ms": 900, "cost_usd": 0.5, "tokens_in": 3}, {"kind": "tool", "x": [1]}]
    out = _decoded_spans(spans)
    assert out is not None and out[0].__dict__ is spans[0]  # the decoded dict is the span's own, no copy
    assert type(out[0].latency_ms) is float and out[0].latency_ms == 900.0
    assert out[1].input == {} and out[1].x == [1]
    for refused in (
        {"kind": "llm", "tokens_in": True},  # a bool is no int here: pydantic decides
        {"kind": "llm", "tokens_in": None},  # normalised to 0 by the model
        {"kind": "llm", "cost_usd": 2**53 + 1},  # not the float of the same value
        {"kind": "tool", "input": '{"a": 1}'},  # arguments as JSON text: parsed by the model
        {"kind": "llm", "turn": -1},
        {"kind": "llm", "name": 3},
        {"kind": "other"},
        {"kind": ["llm"]},
        ["llm"],
    ):
        assert _decoded_spans([{"kind": "message"}, refused]) is None, refused


def test_every_field_of_a_span_has_a_decoded_rule_or_takes_any_value():
    """A field added to `_SpanModel` with a type must be checked on the decoded path too."""
    untyped = {
        name
        for name, f in _SpanModel.model_fields.items()
        if f.annotation is object or str(f.annotation) == "typing.Any"
    }
    assert untyped == {"content", "output", "error"}
    assert set(_DECODED_RULES) == set(_SpanModel.model_fields) - untyped - {"kind"}
    assert set(Span.__annotations__) == set(_SpanModel.model_fields)


def test_a_bad_trace_file_is_refused_with_the_same_words(tmp_path):
    (tmp_path / "t.json").write_text(
        json.dumps([{"case_id": "a", "spans": [{"kind": "llm", "latency_ms": 1}, {"kind": "bogus"}]}, {"case_id": "b"}])
    )
    traces, errors = read_traces(tmp_path / "t.json")
    assert [t.case_id for t in traces] == ["b"]
    assert [str(e) for e in errors] == [
        f"{tmp_path / 't.json'}[0]: case 'a': invalid trace: spans.1.kind: Value error, kind must be llm, tool or message, "
        "got 'bogus'"
    ]


def test_a_file_read_whole_or_not_at_all_reads_as_read_traces_reads_it(tmp_path, monkeypatch):
    """`iter_traces` reads a small file with one open and read: what it yields is what `read_traces` gives,
    errors included (a folder, a missing file, an empty one, JSON Lines), and a file over the streaming size
    is still streamed."""
    import kit.trace
    from kit.trace import iter_traces

    (tmp_path / "folder").mkdir()
    (tmp_path / "empty.json").write_text("")
    (tmp_path / "lines.jsonl").write_text('{"case_id": "a"}\n{"case_id": "b", "spans": [{"kind": "x"}]}\n')
    (tmp_path / "one.json").write_text('{"case_id": "a", "spans": [{"kind": "llm", "latency_ms": 3}]}')
    for name in ("folder", "missing.json", "empty.json", "lines.jsonl", "one.json"):
        path = tmp_path / name
        traces, errors = read_traces(path)
        got = list(iter_traces(path))
        assert [str(e) for e in got if isinstance(e, KitInputError)] == [str(e) for e in errors], name
        assert [t for t in got if not isinstance(t, KitInputError)] == traces, name
    assert "cannot read trace file" in str(read_traces(tmp_path / "folder")[1][0])
    monkeypatch.setattr(kit.trace, "STREAM_BYTES", 10)
    assert [t.case_id for t in iter_traces(tmp_path / "lines.jsonl") if not isinstance(t, KitInputError)] == ["a"]


def test_tool_calls_and_held_calls_are_found_alike_whichever_is_read_first():
    data = {"case_id": "c", "spans": [{"kind": "tool", "name": "a"}, {"kind": "tool", "name": "b", "executed": False}]}
    first_ran = parse_trace(dict(data))
    ran = [s.name for s in first_ran.tool_calls]
    first_held = parse_trace(dict(data))
    held = [s.name for s in first_held.held_calls]
    assert ran == ["a"] and held == ["b"]
    assert [s.name for s in first_ran.held_calls] == held and [s.name for s in first_held.tool_calls] == ran
    assert first_ran.for_turn(0).held_calls == first_ran.held_calls
