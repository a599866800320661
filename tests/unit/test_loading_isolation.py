"""Loading keeps good input when a neighbour is bad, refuses bytes and nesting it cannot read with exit 2,
and hands out cases nobody can change."""

from __future__ import annotations

import copy
import json
import pickle
import textwrap
from pathlib import Path

import pytest

from kit.case import MAX_RUNS, load_suite
from kit.cli import main as kit
from kit.errors import KitInputError
from kit.evaluate import evaluate
from kit.trace import load_traces, read_traces

GOOD = {"case_id": "a", "final_output": "hello", "spans": [{"kind": "tool", "name": "lookup_order"}]}
BAD = {"case_id": "a", "spans": [{"kind": "teleport"}]}
CASES = "id: a\ninput: hi\nchecks: [{type: called, tool: lookup_order}, {type: contains, text: hello}]\n"
DEEP = "[" * 100_000 + "]" * 100_000


def write(folder: Path, name: str, text: str | bytes) -> Path:
    p = folder / name
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(textwrap.dedent(text))
    return p


# One bad trace among good ones


@pytest.mark.parametrize("layout", ["list", "jsonl", "jsonl-garbage-line"])
def test_one_bad_trace_does_not_stop_the_good_ones(tmp_path, layout):
    if layout == "list":
        text = json.dumps([GOOD, BAD, GOOD])
    elif layout == "jsonl":
        text = "\n".join(json.dumps(t) for t in (GOOD, BAD, GOOD)) + "\n"
    else:
        text = json.dumps(GOOD) + "\n{not json\n" + json.dumps(GOOD) + "\n"
    p = write(tmp_path, "t.json", text)
    traces, errors = read_traces(p)
    assert len(traces) == 2 and len(errors) == 1
    assert str(p) in str(errors[0])
    with pytest.raises(KitInputError):
        load_traces(p)  # the strict reader still refuses the file


def test_kit_check_judges_the_good_traces_and_exits_2(tmp_path, capsys):
    write(tmp_path, "cases.yaml", CASES)
    p = write(tmp_path, "t.jsonl", "\n".join(json.dumps(t) for t in (GOOD, BAD, GOOD)) + "\n")
    code = kit(["check", str(p), "--cases", str(tmp_path / "cases.yaml"), "--json"])
    out = capsys.readouterr()
    assert code == 2
    assert [r["passed"] for r in json.loads(out.out)["results"]] == [True, True]
    assert f"{p}:2" in out.err and "Traceback" not in out.err


# Bytes and nesting that cannot be read


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("t.json", b'{"case_id": "a", "final_output": "\xff\xfe"}'),
        ("t.json", DEEP.encode()),
        ("t.json", ('{"case_id": "a", "final_output": ' + DEEP + "}").encode()),
    ],
)
def test_unreadable_trace_files_are_exit_2_naming_the_file(tmp_path, capsys, name, content):
    write(tmp_path, "cases.yaml", CASES)
    p = write(tmp_path, name, content)
    code = kit(["check", str(p), "--cases", str(tmp_path / "cases.yaml")])
    err = capsys.readouterr().err
    assert code == 2 and str(p) in err and "Traceback" not in err


@pytest.mark.parametrize(
    "content",
    [
        b"id: bad\ninput: \xff\xfe\n",
        ("id: bad\ninput: hi\ncontext: {x: " + DEEP + "}\n").encode(),
        ("id: bad\ninput: hi\ncontext: {x: " + "{a: " * 20_000 + "1" + "}" * 20_000 + "}\n").encode(),
        ("- " * 30_000 + "x\n").encode(),
    ],
)
def test_an_unreadable_case_file_does_not_stop_the_folder(tmp_path, content):
    write(tmp_path, "a.yaml", "id: fine\ninput: hi\n")
    bad = write(tmp_path, "b.yaml", content)
    write(tmp_path, "c.yaml", "id: also-fine\ninput: hi\n")
    suite = load_suite(tmp_path)
    assert [c.id for c in suite.cases] == ["fine", "also-fine"]
    (err,) = suite.errors
    assert str(err).startswith(str(bad))


def test_kit_lint_on_invalid_utf8_is_exit_2(tmp_path, capsys):
    bad = write(tmp_path, "b.yaml", b"id: bad\ninput: \xff\n")
    assert kit(["lint", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "UTF-8" in err and "Traceback" not in err


@pytest.mark.parametrize("content", [b"safe: [{type: finished}]\nx: \xff\n", ("x: " + DEEP + "\n").encode()])
def test_an_unreadable_invariants_file_is_named_and_not_called_missing(tmp_path, content):
    inv = write(tmp_path, "invariants.yaml", content)
    write(tmp_path, "c.yaml", "id: a\ninput: hi\ninvariants: [safe]\n")
    suite = load_suite(tmp_path)
    assert suite.cases == []
    messages = [str(e) for e in suite.errors]
    assert messages[0].startswith(str(inv))
    assert "case 'a': invariant 'safe' is not available: " in messages[1]
    assert not any("no invariants.yaml" in m for m in messages)


# One bad invariant among good ones


def test_one_invalid_invariant_loses_only_itself(tmp_path):
    inv = write(
        tmp_path,
        "invariants.yaml",
        """
        safe: [{type: not_called, tool: delete_account}]
        broken: [{type: called}]
        also_safe: [{type: finished}]
        """,
    )
    write(tmp_path, "good.yaml", "id: good\ninput: hi\ninvariants: [safe, also_safe]\n")
    write(tmp_path, "uses-broken.yaml", "id: uses-broken\ninput: hi\ninvariants: [broken]\n")
    suite = load_suite(tmp_path)
    (good,) = suite.cases
    assert [s.label for s in good.checks] == ["not_called:delete_account", "finished"]
    first, second = (str(e) for e in suite.errors)
    assert first == f"{inv}: check #1 of invariant 'broken' (called): missing parameter 'tool'"
    assert second.endswith(
        "case 'uses-broken': invariant 'broken' is not available: check #1 (called): missing parameter 'tool'"
    )


def test_an_invariant_that_is_not_a_list_loses_only_itself(tmp_path):
    write(tmp_path, "invariants.yaml", "odd: 3\nsafe: [{type: finished}]\n")
    write(tmp_path, "c.yaml", "id: a\ninput: hi\ninvariants: [safe]\n")
    suite = load_suite(tmp_path)
    assert [c.id for c in suite.cases] == ["a"]
    (err,) = suite.errors
    assert "invariant 'odd' must be a list of checks" in str(err)


# Runs


def test_runs_has_an_upper_bound(tmp_path):
    write(tmp_path, "c.yaml", f"id: a\ninput: hi\nruns: {MAX_RUNS + 1}\n")
    write(tmp_path, "d.yaml", f"id: b\ninput: hi\nruns: {MAX_RUNS}\n")
    suite = load_suite(tmp_path)
    assert [c.runs for c in suite.cases] == [MAX_RUNS]
    (err,) = suite.errors
    assert "case 'a': field 'runs': Input should be less than or equal to 1000" in str(err)


def test_kit_lint_refuses_a_huge_runs(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "c.yaml", "id: a\ninput: hi\nruns: 100000000000\n")
    assert kit(["lint", "c.yaml"]) == 2
    assert "field 'runs'" in capsys.readouterr().err


# The oracle's case is immutable


def refund_case(tmp_path: Path):
    write(
        tmp_path,
        "c.yaml",
        """
        id: a
        input: hi
        context: {customer_id: C1, history: [{role: user, content: earlier}]}
        checks:
          - {type: not_called, tool: issue_refund}
          - {type: args, tool: lookup_order, expected: {order_id: ORD-1, tags: [x]}}
        """,
    )
    (case,) = load_suite(tmp_path).cases
    return case


MUTATIONS = [
    lambda c: c.context.__setitem__("customer_id", "C2"),
    lambda c: c.context.update(customer_id="C2"),
    lambda c: c.context.pop("customer_id"),
    lambda c: c.context.clear(),
    lambda c: c.context.setdefault("new", 1),
    lambda c: c.context["history"].append({"role": "user", "content": "again"}),
    lambda c: c.context["history"][0].__setitem__("content", "changed"),
    lambda c: c.checks[0].params.__setitem__("tool", "nothing"),
    lambda c: c.checks[1].params["expected"].__setitem__("order_id", "ORD-2"),
    lambda c: c.checks[1].params["expected"]["tags"].extend(["y"]),
    lambda c: c.checks[0].raw.__setitem__("tool", "nothing"),
    lambda c: c.checks.__setitem__(0, None),
    lambda c: setattr(c, "checks", ()),
    lambda c: setattr(c.checks[0], "params", {}),
    lambda c: c.extra.__setitem__("cassette", "x"),
]


@pytest.mark.parametrize("mutate", MUTATIONS)
def test_an_agent_cannot_change_the_case_it_is_handed(tmp_path, mutate):
    case = refund_case(tmp_path)
    refund = {"case_id": "a", "spans": [{"kind": "tool", "name": "issue_refund", "input": {"order_id": "ORD-1"}}]}
    before = [(r.name, r.passed, r.reason) for r in evaluate(load_one_trace(tmp_path, refund), case).results]
    with pytest.raises((TypeError, AttributeError)):
        mutate(case)
    after = [(r.name, r.passed, r.reason) for r in evaluate(load_one_trace(tmp_path, refund), case).results]
    assert after == before and not before[0][1]
    assert case.context == {"customer_id": "C1", "history": [{"role": "user", "content": "earlier"}]}


def load_one_trace(tmp_path: Path, data: dict):
    (trace,) = load_traces(write(tmp_path, "t.json", json.dumps(data)))
    return trace


def test_a_frozen_case_still_reads_pickles_copies_and_serialises_like_plain_data(tmp_path):
    case = refund_case(tmp_path)
    assert isinstance(case.context, dict) and isinstance(case.context["history"], list)
    assert json.loads(json.dumps(case.context)) == case.context
    assert pickle.loads(pickle.dumps(case)) == case
    thawed = copy.deepcopy(case.context)
    assert thawed == case.context
    spec = case.checks[1]
    assert spec.params["expected"] == {"order_id": "ORD-1", "tags": ["x"]}
    mine = dict(case.context)
    mine["customer_id"] = "C9"  # a copy is the caller's own
    assert case.context["customer_id"] == "C1"


def test_equal_checks_share_one_spec_within_a_folder_and_errors_stay_per_case(tmp_path):
    write(tmp_path, "a.yaml", "- {id: a, input: hi, checks: [{type: called, tool: t}]}\n")
    write(tmp_path, "b.yaml", "- {id: b, input: hi, checks: [{type: called, tool: t}]}\n")
    write(
        tmp_path,
        "c.yaml",
        "- {id: c, input: hi, checks: [{type: called}]}\n- {id: d, input: hi, checks: [{type: called}]}\n",
    )
    suite = load_suite(tmp_path)
    a, b = suite.cases
    assert a.checks[0] is b.checks[0]
    assert [e.case for e in suite.errors] == ["c", "d"]


def test_a_memoised_check_is_not_shared_across_folders(tmp_path):
    schema = {"lookup": {"type": "object", "required": ["order_id"]}}
    write(tmp_path, "one/tools.json", json.dumps(schema))
    write(tmp_path, "two/tools.json", json.dumps({"other": {"type": "object"}}))
    for folder in ("one", "two"):
        write(
            tmp_path,
            f"{folder}/c.yaml",
            f"id: {folder}\ninput: hi\nchecks: [{{type: tool_schemas, schemas: tools.json}}]\n",
        )
    one, two = load_suite(tmp_path).cases
    assert one.checks[0] is not two.checks[0]
