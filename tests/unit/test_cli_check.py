"""`kit check` and `kit lint` as docs/CONTRACT.md specifies them: arguments, JSON shape, exit codes 0/1/2."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kit.cli import main

CASES = """
id: refund
input: Please refund ORD-123456
runs: 4
checks:
  - {type: called, tool: lookup_order}
  - {type: arg, tool: issue_refund, key: amount, expected: 42.5}
"""


def trace(attempt: int, amount: float, lookup: bool = True) -> dict:
    spans = [{"kind": "tool", "name": "lookup_order", "input": {"order_id": "ORD-123456"}}] if lookup else []
    spans.append({"kind": "tool", "name": "issue_refund", "input": json.dumps({"amount": amount})})
    return {"case_id": "refund", "attempt": attempt, "final_output": "done", "finish_reason": "finish", "spans": spans}


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    (tmp_path / "cases.yaml").write_text(CASES)
    return tmp_path / "cases.yaml"


def write_traces(tmp_path: Path, traces: list[dict], name: str = "t.json") -> str:
    p = tmp_path / name
    p.write_text(json.dumps(traces))
    return str(p)


def test_all_pass_exits_0(tmp_path, suite, capsys):
    t = write_traces(tmp_path, [trace(0, 42.5), trace(1, 42.50)])
    assert main(["check", t, "--cases", str(suite)]) == 0
    assert "2/2 runs passed" in capsys.readouterr().out


def test_json_shape_and_pass_hat_k(tmp_path, suite, capsys):
    t = write_traces(tmp_path, [trace(0, 42.5), trace(1, 40.0), trace(2, 42.5, lookup=False), trace(3, 42.5)])
    assert main(["check", t, "--cases", str(suite), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    first_fail = out["results"][1]
    assert first_fail == {
        "case_id": "refund",
        "attempt": 1,
        "passed": False,
        "checks": [
            {"check": "called:lookup_order", "outcome": "pass", "reason": "lookup_order called 1 time"},
            {
                "check": "arg:issue_refund.amount",
                "outcome": "fail",
                "reason": "arg issue_refund.amount: got 40.0, want 42.5",
            },
        ],
    }
    s = out["summary"]
    assert (s["runs"], s["passed"], s["pass_rate"]) == (4, 2, 0.5)
    c = s["cases"]["refund"]
    assert c["runs"] == 4 and c["passed"] == 2 and c["pass_fraction"] == 0.5 and c["flaky"] is True
    assert c["pass_hat_k"] == {"1": 0.5, "2": 0.1667, "3": 0.0, "4": 0.0}


def test_bad_trace_exits_2_naming_file_and_case_but_evaluates_the_rest(tmp_path, suite, capsys):
    good = write_traces(tmp_path, [trace(0, 42.5)])
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"case_id": "refund", "spans": [{"kind": "tool", "name": "x", "input": "{oops"}]}))
    assert main(["check", good, str(bad), "--cases", str(suite), "--json"]) == 2
    captured = capsys.readouterr()
    assert f"{bad}: case 'refund': invalid trace: spans.0.input" in captured.err
    assert json.loads(captured.out)["summary"]["runs"] == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "malformed JSON at line 1"),
        ('{"spans": []}', "invalid trace: case_id: Field required"),
        ('{"case_id": "nope", "spans": []}', "case 'nope': no golden case with this id"),
        ('{"case_id": "refund", "spans": [{"kind": "thought"}]}', "kind must be llm, tool or message"),
    ],
)
def test_bad_input_messages(tmp_path, suite, capsys, content, message):
    p = tmp_path / "x.json"
    p.write_text(content)
    assert main(["check", str(p), "--cases", str(suite)]) == 2
    err = capsys.readouterr().err
    assert str(p) in err and message in err and "Traceback" not in err


def test_unknown_check_type_exits_2(tmp_path, capsys):
    (tmp_path / "c.yaml").write_text("id: c\ninput: hi\nchecks: [{type: teleported}]\n")
    t = write_traces(tmp_path, [{"case_id": "c", "spans": []}])
    assert main(["check", t, "--cases", str(tmp_path)]) == 2
    assert "case 'c': check #1 (teleported): unknown check type 'teleported'" in capsys.readouterr().err


def test_jsonl_traces(tmp_path, suite, capsys):
    p = tmp_path / "runs.jsonl"
    p.write_text("\n".join(json.dumps(trace(i, 42.5)) for i in range(3)) + "\n")
    assert main(["check", str(p), "--cases", str(suite)]) == 0


def test_lint_reports_every_problem_with_file_case_and_check(tmp_path, capsys):
    (tmp_path / "tools.json").write_text(json.dumps({"lookup_order": {}, "issue_refund": {}}))
    (tmp_path / "invariants.yaml").write_text("safe: [{type: called_at_most, tool: issue_refund}]\n")
    (tmp_path / "cases.yaml").write_text(
        textwrap.dedent("""
        - id: ok
          input: hi
          invariants: [safe]
          checks: [{type: order, before: lookup_order, after: issue_refund}]
        - id: typo-tool
          input: hi
          checks: [{type: called, tool: lookup_ordr}]
        - id: slow-regex
          input: hi
          checks: [{type: regex, pattern: '(a+)+$'}]
        - id: bad-sql
          input: hi
          checks: [{type: end_state, query: 'SELECT FROM WHERE', empty: true}]
    """)
    )
    assert main(["lint", str(tmp_path)]) == 2
    err = capsys.readouterr().err.splitlines()
    f = tmp_path / "cases.yaml"
    assert (
        f"kit lint: {f}: case 'typo-tool': check #1 (called): tool 'lookup_ordr' is not in {tmp_path / 'tools.json'}"
        in err
    )
    assert any(
        line.startswith(f"kit lint: {f}: case 'slow-regex': check #1 (regex): regex '(a+)+$' nests quantifiers")
        for line in err
    )
    assert any("case 'bad-sql': check #1 (end_state): parameter 'query': SQL does not parse" in line for line in err)
    assert len(err) == 3


def test_lint_passes_a_clean_folder(tmp_path, capsys):
    (tmp_path / "c.yaml").write_text("id: a\ninput: hi\nchecks: [{type: finished}]\n")
    assert main(["lint", str(tmp_path)]) == 0
    assert "1 cases, 1 checks" in capsys.readouterr().out


def test_the_installed_entry_point_runs(tmp_path, suite):
    t = write_traces(tmp_path, [trace(0, 40.0)])
    kit = Path(sys.executable).parent / "kit"
    proc = subprocess.run([str(kit), "check", t, "--cases", str(suite)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "fail: arg:issue_refund.amount: arg issue_refund.amount: got 40.0, want 42.5" in proc.stdout


def test_unknown_command_and_help(capsys):
    assert main(["frobnicate"]) == 2
    assert main(["--help"]) == 0
    assert "check" in capsys.readouterr().out
