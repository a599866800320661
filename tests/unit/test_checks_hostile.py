"""Hostile cases against the checks: linear PII scanning, time limits on every check and every query,
lint that refuses impossible parameters, and schema references that cannot leave the case's folder."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import pytest
from _oracle import make_case, make_trace, run1, tool
from hypothesis import given, settings
from hypothesis import strategies as st

from kit.checks import limits
from kit.checks.text import find_pii, luhn_ok
from kit.errors import KitInputError

KIT = str(Path(sys.executable).parent / "kit")


def kit(*args: str, cwd: Path, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [KIT, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd, env={**os.environ, **env}
    )


# --- no_pii is linear, and finds exactly what it found before -------------------------------------------

_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
_CARD = re.compile(r"(?<!\d)(?:\d[ -]?){12,18}\d(?!\d)")
_PHONE = re.compile(r"(?<![\w])(?:\+\d{1,3}[ .-]?)?(?:\(\d{3}\)|\d{3})[ .-]?\d{3}[ .-]?\d{4}(?!\d)")
_SSN = re.compile(r"(?<!\d)\d{3}-\d{2}-\d{4}(?!\d)")


def quadratic_find_pii(text: str, kinds: Iterable[str], allow: Iterable[str] = ()) -> list[tuple[str, str]]:
    """The scanner as it was (quadratic on long runs): the reference for what no_pii reports."""
    allowed = {a.casefold() for a in allow}
    kinds = set(kinds)
    found: list[tuple[str, str]] = []
    card_spans: list[tuple[int, int]] = []
    if "card" in kinds:
        for m in _CARD.finditer(text):
            digits = re.sub(r"\D", "", m.group(0))
            if 13 <= len(digits) <= 19 and luhn_ok(digits):
                card_spans.append(m.span())
                found.append(("card", m.group(0)))
    if "email" in kinds:
        found += [("email", m.group(0)) for m in _EMAIL.finditer(text)]
    if "ssn" in kinds:
        found += [("ssn", m.group(0)) for m in _SSN.finditer(text)]
    if "phone" in kinds:
        for m in _PHONE.finditer(text):
            if not any(a <= m.start() < b for a, b in card_spans) and not _SSN.fullmatch(m.group(0)):
                found.append(("phone", m.group(0)))
    return [(k, v) for k, v in found if v.casefold() not in allowed]


KINDS = ("email", "card", "phone", "ssn")
PIECES = st.sampled_from(
    ["a", "Z", "1", "4", "0", "@", ".", "-", " ", "(", ")", "+", "_", "%", "x.io", "@b.co", "4111 1111 1111 1111",
     "415-555-0134", "123-45-6789", "jane@example.com", "+1 ", "é", "\n"]
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(PIECES, max_size=40).map("".join), st.lists(st.sampled_from(["jane@example.com", "4", "a@b.co"])))
def test_no_pii_reports_exactly_what_the_old_scanner_reported(text, allow):
    assert find_pii(text, KINDS, allow) == quadratic_find_pii(text, KINDS, allow)


ADVERSARIAL = ["a", "1", "1 ", "a.", "a@", "1-", "ab1 ", "a@" + "b" * 50, "4111 1111 1111 1111 (415) 555-0134 "]


@pytest.mark.parametrize("unit", ADVERSARIAL)
def test_no_pii_on_a_200_kb_answer_is_well_under_a_second(unit):
    text = (unit * (200_000 // len(unit) + 1))[:200_000]
    t = time.process_time()
    r = run1(make_trace(output=text), {"type": "no_pii"})
    spent = time.process_time() - t
    assert r.outcome in ("pass", "fail") and spent < 0.5, f"{spent:.2f} s CPU on {unit!r} x 200 KB"


def test_no_pii_on_a_5_mb_answer_is_bounded():
    text = ("a" * 100_000 + "b@" + "c" * 100_000 + " 1-2-3 ") * 25  # long runs without a finished email
    assert len(text) > 5_000_000
    t = time.process_time()
    r = run1(make_trace(output=text + " jane@example.com"), {"type": "no_pii"})
    spent = time.process_time() - t
    assert not r.passed and r.reason == "output leaks email 'jane@example.com'"
    assert spent < 10, f"{spent:.1f} s CPU on 5 MB"


def test_fenced_output_hint_without_backtracking():
    t = time.process_time()
    r = run1(make_trace(output="```" + " " * 20_000 + "x"), {"type": "json"})
    assert time.process_time() - t < 0.5
    assert not r.passed and "fence" not in r.reason
    r = run1(make_trace(output='```json\n{"a": 1}\n```'), {"type": "json"})
    assert "wrapped in a ``` fence" in r.reason
    assert "fence" not in run1(make_trace(output="`````"), {"type": "json"}).reason


# --- time limits ----------------------------------------------------------------------------------------

RUNAWAY = {
    "series": "SELECT sum(x) FROM generate_series(1, 1000000000000) t(x)",
    "cross_join": "SELECT count(*) FROM big a, big b, big c, big d",
    "recursive": "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r",
}
BIG = {"big": [{"x": i} for i in range(3000)], "refunds": [{"order_id": "ORD-1"}]}


@pytest.fixture
def short_limit():
    previous = limits.set_check_timeout(0.5)
    yield
    limits.set_check_timeout(previous)


@pytest.mark.parametrize("name", RUNAWAY)
def test_a_runaway_query_is_an_error_and_the_next_query_runs(name, short_limit):
    t = make_trace(end_state=BIG)
    start = time.monotonic()
    r = run1(t, {"type": "end_state", "query": RUNAWAY[name], "empty": True})
    assert r.outcome == "error" and "ran longer than 0.5 s and was stopped" in r.reason, r.reason
    assert time.monotonic() - start < 10
    ok = run1(t, {"type": "end_state", "query": "SELECT order_id FROM refunds", "expected": [["ORD-1"]]})
    assert ok.passed


def test_a_runaway_query_stopped_by_the_cpu_timer_says_so_too(short_limit, monkeypatch):
    """On a busy machine the CPU timer can stop a query before the watchdog thread does. DuckDB runs the
    timer's handler inside its own signal polling and reports "Query interrupted": still the time limit."""
    watch = limits._Watch()
    watch.watch_sql = lambda: None  # no watchdog thread: only the timer can stop the query
    monkeypatch.setattr(limits, "_WATCH", watch)
    t = make_trace(end_state=BIG)
    r = run1(t, {"type": "end_state", "query": RUNAWAY["series"], "empty": True})
    assert r.outcome == "error" and "ran longer than 0.5 s and was stopped" in r.reason, r.reason


def test_a_query_returning_billions_of_rows_is_read_only_as_far_as_needed():
    t = make_trace(end_state=BIG)
    r = run1(t, {"type": "end_state", "query": "SELECT * FROM generate_series(1, 1000000000000)", "empty": True})
    assert not r.passed and r.reason.startswith("query returned over 10000 rows, want none: [[1], [2]")
    r = run1(t, {"type": "end_state", "query": "SELECT * FROM range(100000000)", "expected": [[1]]})
    assert r.reason.startswith("query returned over 10001 rows, want 1")


def test_a_check_stuck_in_catastrophic_backtracking_is_stopped(short_limit):
    # A JSON Schema `pattern` runs under the regex timeout (the `regex` module), as a regex check does.
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a|aa)+$"}}}
    start = time.monotonic()
    r = run1(make_trace(output=json.dumps({"s": "a" * 60 + "!"})), {"type": "schema", "schema": schema})
    assert r.outcome == "error" and "pattern '^(a|aa)+$' took over" in r.reason, r.reason
    assert time.monotonic() - start < 10
    assert run1(make_trace(output='{"s": "aaa"}'), {"type": "schema", "schema": schema}).passed


def _write_runaway_suite(tmp_path: Path) -> None:
    checks = "".join(
        f"- id: {n}\n  input: hi\n  checks:\n    - {{type: end_state, query: '{q}', empty: true}}\n"
        for n, q in RUNAWAY.items()
    )
    checks += (
        "- id: fine\n  input: hi\n  checks:\n    - {type: end_state, query: 'SELECT * FROM refunds', empty: true}\n"
    )
    (tmp_path / "cases.yaml").write_text(checks)


def test_kit_check_judges_the_traces_after_runaway_queries(tmp_path):
    _write_runaway_suite(tmp_path)
    traces = [{"case_id": n, "final_output": "", "end_state": BIG} for n in [*RUNAWAY, "fine"]]
    (tmp_path / "traces.jsonl").write_text("\n".join(json.dumps(t) for t in traces))
    p = kit("check", "traces.jsonl", "--cases", "cases.yaml", "--json", cwd=tmp_path, KIT_CHECK_TIMEOUT="0.5")
    assert p.returncode == 1, p.stderr
    out = {r["case_id"]: r["checks"][0] for r in json.loads(p.stdout)["results"]}
    for name in RUNAWAY:
        assert out[name]["outcome"] == "error" and "ran longer than 0.5 s" in out[name]["reason"]
    assert out["fine"]["outcome"] == "fail" and out["fine"]["reason"].startswith("query returned 1 rows")


@pytest.mark.parametrize("pool", ["serial", "process"])
def test_kit_run_goes_on_after_runaway_queries(tmp_path, pool):
    _write_runaway_suite(tmp_path)
    (tmp_path / "runaway_agent.py").write_text(
        "BIG = " + repr(BIG) + "\n\ndef run(text, case=None):\n"
        "    return {'case_id': case.id, 'final_output': 'done', 'end_state': BIG}\n"
    )
    p = kit(
        "run", "--cases", "cases.yaml", "--agent", "runaway_agent:run", "--pool", pool, "--workers", "1",
        "--no-store", "--json", "--timeout", "300", cwd=tmp_path, KIT_CHECK_TIMEOUT="0.5", PYTHONPATH=str(tmp_path),
    )  # fmt: skip
    assert p.returncode == 1, p.stdout[-2000:] + p.stderr[-2000:]
    out = {r["case_id"]: r for r in json.loads(p.stdout)["results"]}
    for name in RUNAWAY:
        assert out[name]["checks"][0]["outcome"] == "error", out[name]
    assert out["fine"]["checks"][0]["outcome"] == "fail"


# --- lint refuses checks that can never pass, or always pass -----------------------------------------------

NONSENSE = [
    ({"type": "contains", "text": []}, "at least one text"),
    ({"type": "contains", "text": ["ok", "  "]}, "blank text"),
    ({"type": "contains", "text": ""}, "blank text"),
    ({"type": "number", "expected": float("nan")}, "finite number"),
    ({"type": "number", "expected": float("inf")}, "finite number"),
    ({"type": "number", "expected": 1, "tol": -1}, "greater than or equal to 0"),
    ({"type": "number", "expected": 1, "rel": float("nan")}, "tol"),
    ({"type": "called_at_most", "tool": "t", "n": -1}, "greater than or equal to 0"),
    ({"type": "called", "tool": "t", "min": 0}, "greater than or equal to 1"),
    ({"type": "not_called", "tool": []}, "at least 1 item"),
    ({"type": "guarded", "tool": "t", "requires": []}, "at least 1 item"),
    ({"type": "trajectory", "tools": [], "mode": "superset"}, "always passes"),
    ({"type": "trajectory", "tools": [], "mode": "in_order"}, "always passes"),
    ({"type": "order", "before": "t", "after": "t"}, "same tool"),
    ({"type": "arg", "tool": "t", "key": "k", "expected": float("nan")}, "NaN"),
    ({"type": "arg", "tool": "t", "key": "k", "expected": 1, "tol": -0.1}, "greater than or equal to 0"),
    ({"type": "args", "tool": "t", "expected": {"a": [1, float("nan")]}}, "NaN"),
    ({"type": "budget", "steps": -1}, "greater than or equal to 0"),
    ({"type": "budget", "cost_usd": float("nan")}, "greater than or equal to 0"),
    ({"type": "no_pii", "kinds": []}, "at least 1 item"),
    ({"type": "regex", "pattern": ""}, "empty pattern"),
]


@pytest.mark.parametrize(("check", "why"), NONSENSE, ids=[f"{c['type']}-{i}" for i, (c, _) in enumerate(NONSENSE)])
def test_lint_refuses_parameters_that_decide_nothing(check, why):
    with pytest.raises(KitInputError) as e:
        make_case(check)
    message = str(e.value)
    assert "test.yaml" in message and "c1" in message and f"#1 ({check['type']})" in message
    if why != "tol":
        assert why in message, message


def test_sensible_limits_still_load():
    make_case(
        {"type": "called_at_most", "tool": "t", "n": 0},
        {"type": "trajectory", "tools": [], "mode": "strict"},
        {"type": "budget", "latency_ms": float("inf"), "steps": 0},
        {"type": "number", "expected": -3, "tol": 0},
        {"type": "contains", "text": ["refund", "ORD"], "all": False},
    )


def test_kit_lint_names_file_case_and_check_for_nonsense(tmp_path):
    (tmp_path / "c.yaml").write_text(
        "- id: a\n  input: hi\n  checks:\n    - {type: contains, text: []}\n"
        "- id: b\n  input: hi\n  checks:\n    - {type: called, tool: t}\n    - {type: number, expected: .nan}\n"
        "- id: c\n  input: hi\n  checks:\n    - {type: called_at_most, tool: t, n: -1}\n"
    )
    p = kit("lint", "c.yaml", cwd=tmp_path)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    for where in ("'a': check #1 (contains)", "'b': check #2 (number)", "'c': check #1 (called_at_most)"):
        assert f"c.yaml: case {where}" in p.stderr, p.stderr


# --- schema references stay inside the case's folder -------------------------------------------------------


@pytest.fixture
def silent_server():
    """A server that accepts connections and never answers: fetching from it hangs."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        yield s


def test_schema_refs_that_leave_the_case_are_refused_at_load(tmp_path, silent_server):
    port = silent_server.getsockname()[1]
    secret = tmp_path / "secret.json"
    secret.write_text('{"type": "string", "description": "TOP-SECRET-VALUE"}')
    cases = tmp_path / "cases"
    cases.mkdir()
    refs = {
        "http": f"http://127.0.0.1:{port}/schema.json",
        "https": f"https://127.0.0.1:{port}/schema.json",
        "file": secret.as_uri(),
        "escape": "../secret.json",
        "absolute": str(secret),
    }
    body = "".join(
        f"- id: {name}\n  input: hi\n  checks:\n    - {{type: schema, schema: {{properties: {{a: {{$ref: '{ref}'}}}}}}}}\n"
        for name, ref in refs.items()
    )
    body += f"- id: via-id\n  input: hi\n  checks:\n    - {{type: schema, schema: {{$id: 'http://127.0.0.1:{port}/', $ref: 'x.json'}}}}\n"
    (cases / "c.yaml").write_text(body)
    start = time.monotonic()
    p = kit("lint", "cases", cwd=tmp_path, timeout=60)
    assert time.monotonic() - start < 30
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    for name in [*refs, "via-id"]:
        assert f"case '{name}': check #1 (schema): parameter 'schema': invalid JSON Schema (inline): $ref" in p.stderr
    assert "TOP-SECRET-VALUE" not in p.stdout + p.stderr
    silent_server.setblocking(False)
    with pytest.raises(BlockingIOError):
        silent_server.accept()  # nobody connected


def test_schema_refs_inside_the_document_or_the_case_folder_work(tmp_path):
    (tmp_path / "defs").mkdir()
    (tmp_path / "defs" / "order.json").write_text(
        '{"type": "object", "required": ["id"], "properties": {"id": {"$ref": "id.json"}}}'
    )
    (tmp_path / "defs" / "id.json").write_text('{"type": "string", "pattern": "^ORD-"}')
    by_file = {"type": "schema", "schema": {"$ref": "defs/order.json"}}
    assert run1(make_trace(output='{"id": "ORD-1"}'), by_file, tmp_path).passed
    r = run1(make_trace(output='{"id": "X-1"}'), by_file, tmp_path)
    assert not r.passed and "must match pattern" in r.reason
    inside = {"definitions": {"id": {"type": "string"}}, "properties": {"id": {"$ref": "#/definitions/id"}}}
    with_id = {**inside, "$id": "https://example.com/order.schema.json"}
    for schema in (inside, with_id):
        assert not run1(make_trace(output='{"id": 3}'), {"type": "schema", "schema": schema}, tmp_path).passed
        assert run1(make_trace(output='{"id": "3"}'), {"type": "schema", "schema": schema}, tmp_path).passed
    # A schema file above the case's folder (a shared one) may refer to files beside it.
    (tmp_path / "cases").mkdir()
    (tmp_path / "out.json").write_text('{"$ref": "defs/order.json"}')
    spec = {"type": "schema", "schema": "out.json"}
    assert run1(make_trace(output='{"id": "ORD-2"}'), spec, tmp_path / "cases").passed
    tools = {"type": "tool_schemas", "schemas": {"t": {"$ref": "defs/order.json"}}}
    assert not run1(make_trace(tool("t", {"id": 5})), tools, tmp_path).passed
