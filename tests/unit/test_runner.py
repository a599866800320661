"""The runner: N runs per case on fresh agents, in parallel, errors isolated, results stored or sharded."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import duckdb
import pytest

from kit.case import load_suite
from kit.cli import main as kit
from kit.runner import Job, RunOptions, jobs_for, run_suite, shard_cases
from kit.runner.agents import load_agent
from kit.store.shards import merge_shards

CASES = """\
id: greet
input: "hello"
runs: 3
checks:
  - {type: contains, text: hello}
  - {type: called, tool: lookup_order}
---
id: boom
input: "raise"
runs: 2
checks: [{type: finished}]
---
id: hang
input: "hang"
checks: [{type: finished}]
---
id: garbage
input: "garbage"
checks: [{type: finished}]
---
id: openai
input: "messages"
checks:
  - {type: arg, tool: lookup_order, key: order_id, expected: ORD-1}
  - {type: finished}
---
id: flaky
input: "flaky"
runs: 4
checks: [{type: contains, text: ok}]
"""

AGENT = """\
import time

def agent(text, case):
    if text == "raise":
        raise RuntimeError("backend unavailable")
    if text == "hang":
        time.sleep(60)
    if text == "garbage":
        return {"spans": [{"kind": "teleport"}]}
    if text == "messages":
        return [
            {"role": "user", "content": "where is ORD-1"},
            {"role": "assistant", "tool_calls": [{"id": "a", "type": "function",
              "function": {"name": "lookup_order", "arguments": "{\\"order_id\\": \\"ORD-1\\"}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "{\\"status\\": \\"shipped\\"}"},
            {"role": "assistant", "content": "It shipped."},
        ]
    if text == "flaky":
        return {"case_id": "x", "final_output": "ok" if case.extra.get("n", 0) else "nope", "spans": []}
    return {"case_id": case.id, "final_output": "hello there", "finish_reason": "finish",
            "spans": [{"kind": "tool", "name": "lookup_order", "input": "{\\"order_id\\": \\"ORD-1\\"}"}]}

attempts = {}

def counting(text, case):
    # Passes on every other attempt in this process: a flaky agent.
    attempts[case.id] = attempts.get(case.id, -1) + 1
    ok = attempts[case.id] % 2 == 0
    return {"case_id": case.id, "final_output": "hello ok" if ok else "no", "finish_reason": "finish",
            "spans": [{"kind": "tool", "name": "lookup_order", "input": {}}]}

def stubborn(text):
    while True:  # swallows the soft timeout: only killing the worker stops it
        try:
            time.sleep(5)
        except BaseException:
            pass
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "cases.yaml").write_text(CASES)
    (tmp_path / "my_agent.py").write_text(AGENT)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KIT_STORE", str(tmp_path / "store.duckdb"))
    monkeypatch.delenv("KIT_RUN_ID", raising=False)
    return tmp_path


def outcomes_by_case(outcomes):
    out = {}
    for o in outcomes:
        out.setdefault(o.case_run.case_id, []).append(o.case_run)
    return out


def test_errors_are_isolated_with_their_cause(project):
    suite = load_suite("cases.yaml")
    agent = load_agent("my_agent:agent")
    jobs = jobs_for([c for c in suite.cases if c.id != "flaky"])
    outs = run_suite(jobs, agent, RunOptions(timeout=0.5, workers=2), run_id="r1")
    assert [(o.case_run.case_id, o.case_run.attempt) for o in outs] == [(j.case.id, j.attempt) for j in jobs]
    by = outcomes_by_case(outs)
    assert all(r.passed for r in by["greet"])  # JSON-string input parsed; the other cases did not hurt it
    assert all("raised RuntimeError: backend unavailable (at my_agent.py:" in r.error for r in by["boom"])
    assert by["hang"][0].error.startswith("timeout: the agent ran longer than 0.5s")
    assert "malformed trace" in by["garbage"][0].error and "kind" in by["garbage"][0].error
    assert by["openai"][0].passed, by["openai"][0].failures  # an OpenAI message list is imported
    assert all(o.case_run.run_id == "r1" for o in outs)


def test_a_worker_that_ignores_the_timeout_is_killed(project, monkeypatch):
    monkeypatch.setattr("kit.runner.pool.GRACE_S", 0.2)
    suite = load_suite("cases.yaml")
    agent = load_agent("my_agent:stubborn")
    jobs = [Job(suite.by_id()["hang"], 0), Job(suite.by_id()["hang"], 1), Job(suite.by_id()["hang"], 2)]
    outs = run_suite(jobs, agent, RunOptions(timeout=0.2, workers=2))
    # The host reports the overrun call (its thread cannot be stopped) and is replaced once it has.
    assert [o.case_run.error for o in outs] == ["timeout: the agent ran longer than 0.2s"] * 3


@pytest.mark.parametrize("mode", ["serial", "thread", "process"])
def test_every_pool_gives_the_same_verdicts(project, mode):
    suite = load_suite("cases.yaml")
    cases = [c for c in suite.cases if c.id in ("greet", "boom", "openai")]
    outs = run_suite(jobs_for(cases, runs=2), load_agent("my_agent:agent"), RunOptions(mode=mode, workers=2))
    assert [(o.case_run.case_id, o.case_run.outcome) for o in outs] == [
        ("greet", "pass"),
        ("greet", "pass"),
        ("boom", "error"),
        ("boom", "error"),
        ("openai", "pass"),
        ("openai", "pass"),
    ]


def test_shards_partition_the_suite_deterministically_and_balance_runs(project):
    cases = load_suite("cases.yaml").cases
    shards = [shard_cases(cases, i, 3) for i in (1, 2, 3)]
    ids = [c.id for s in shards for c in s]
    assert sorted(ids) == sorted(c.id for c in cases)  # each case in exactly one shard
    assert shard_cases(list(reversed(cases)), 2, 3)[0].id in {c.id for c in shards[1]}  # file order is irrelevant
    loads = [sum(c.runs for c in s) for s in shards]
    assert max(loads) - min(loads) <= 1, loads  # runs 4,3,2,1,1,1 over 3 shards: 4 / 4 / 4


def test_kit_run_prints_fractions_pass_hat_k_and_reasons_and_stores(project, capsys):
    rc = kit(
        [
            "run",
            "--cases",
            "cases.yaml",
            "--agent",
            "my_agent:counting",
            "-k",
            "greet",
            "--runs",
            "4",
            "--pool",
            "serial",
        ]
    )
    out = capsys.readouterr()
    assert rc == 1
    assert "FAIL  greet  2/4  0.50  pass^4 0.00  flaky" in out.out
    assert "fail contains (2/4): output lacks 'hello'" in out.out
    assert "[##############################] 4/4 runs  2 failed  0 errors" in out.err
    con = duckdb.connect(str(project / "store.duckdb"), read_only=True)
    assert con.execute("SELECT count(*), sum(passed::int) FROM case_results").fetchone() == (4, 2)
    assert con.execute("SELECT source, agent FROM runs").fetchone() == ("kit", "my_agent:counting")


def test_kit_run_json_and_exit_codes(project, capsys):
    assert kit(["run", "--cases", "cases.yaml", "--agent", "my_agent:agent", "-k", "greet", "--json", "-q"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["summary"]["cases"]["greet"]["pass_hat_k"] == {"1": 1.0, "2": 1.0, "3": 1.0}
    assert len(data["results"]) == 3
    assert kit(["run", "--cases", "cases.yaml", "--agent", "nope_module:agent"]) == 2
    assert "cannot import nope_module" in capsys.readouterr().err
    assert kit(["run", "--cases", "cases.yaml", "--variant", "teleport"]) == 2
    assert "unknown variant 'teleport'" in capsys.readouterr().err
    assert kit(["run", "--cases", "missing.yaml"]) == 2
    assert kit(["run", "--cases", "cases.yaml", "--shard", "4/3"]) == 2


def test_results_fall_back_to_json_when_the_store_is_unusable(project, capsys, monkeypatch):
    (project / "not_a_dir").write_text("x")
    monkeypatch.setenv("KIT_STORE", str(project / "not_a_dir" / "store.duckdb"))
    # exit 2: a gate reading the store would not see these results
    assert kit(["run", "--cases", "cases.yaml", "--agent", "my_agent:agent", "-k", "greet", "-q"]) == 2
    out = capsys.readouterr()
    assert "store unavailable" in out.err
    [path] = (project / ".kit" / "runs").glob("*.json")
    data = json.loads(path.read_text())
    assert len(data["case_results"]) == 3 and data["runs"][0]["agent"] == "my_agent:agent"


def run_shard(i: int, run_id: str, out: str, *extra: str) -> int:
    """Shard i of 2 of the greet/boom/openai cases on my_agent, written to `out`."""
    cases = ["-k", "greet", "-k", "boom", "-k", "openai"]
    argv = ["run", "--cases", "cases.yaml", "--agent", "my_agent:agent", *cases, "--shard", f"{i}/2"]
    return kit([*argv, "--run-id", run_id, "--out", out, "-q", *extra])


@pytest.mark.parametrize("suffix", ["", ".json"])
def test_shard_files_merge_into_the_store_once(project, suffix):
    from kit.store import open_store

    codes = [run_shard(i, "ci-77", f"s{i}{suffix}", "--timeout", "5") for i in (1, 2)]
    assert codes == [0, 1]  # greet (3 runs) alone in shard 1; boom (2, errors) and openai (1) in shard 2
    store = open_store(project / "merged.duckdb")
    with store.connect() as con:
        added = merge_shards(con, [f"s1{suffix}", f"s2{suffix}"])
        again = merge_shards(con, [f"s1{suffix}"])
        assert added == {"runs": 1, "case_results": 6, "check_results": 3 * 2 + 2 * 1 + 1 * 2}
        assert again == {"runs": 0, "case_results": 0, "check_results": 0}
        rows = con.execute(
            "SELECT case_id, count(*), sum(passed::int) FROM case_results WHERE run_id = 'ci-77' GROUP BY 1 ORDER BY 1"
        ).fetchall()
    assert rows == [("boom", 2, 0), ("greet", 3, 3), ("openai", 1, 1)]


def test_reference_agent_runs_and_a_variant_is_caught(project, capsys):
    golden = Path(__file__).resolve().parents[2] / "golden"
    case = textwrap.dedent("""\
        id: refund
        input: "Please refund order ORD-100002, it arrived broken. Yes, I confirm."
        context: {customer_id: C001}
        runs: 2
        checks:
          - {type: called, tool: issue_refund}
          - name: refund_within_order_total
            type: end_state
            query: "SELECT r.order_id FROM refunds r JOIN orders o USING (order_id) WHERE r.amount > o.total"
            empty: true
        """)
    (project / "ref.yaml").write_text(case)
    (project / "invariants.yaml").write_text("{}\n")
    assert golden.is_dir()
    assert kit(["run", "--cases", "ref.yaml", "-q", "--no-store"]) == 0
    assert kit(["run", "--cases", "ref.yaml", "-q", "--no-store", "--variant", "over_refund"]) == 1
    assert "refund_within_order_total (2/2)" in capsys.readouterr().out


def test_merge_gates_on_the_whole_suite_from_its_shards(project, capsys):
    for i in (1, 2):
        run_shard(i, "ci-78", f"p{i}")
    capsys.readouterr()
    assert kit(["run", "--merge", "p1", "p2", "--store", "m.duckdb"]) == 1
    out = capsys.readouterr().out
    assert "ERROR boom" in out and "backend unavailable" in out
    assert "2/3 cases passed every run; 4/6 runs passed" in out
    # Merging the shards again adds nothing, and the verdict is still the whole run's.
    assert kit(["run", "--merge", "p1", "p2", "--store", "m.duckdb", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["merged"]["case_results"] == 0 and data["summary"]["runs"] == 6
    assert kit(["run", "--merge", "nowhere"]) == 2
