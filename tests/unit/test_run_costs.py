"""What a run cost, in the store: calls to the agent (retries included), retries, tokens and cost where the
traces carry them, and the agent's seconds beside the kit's own, per run (kit.store.queries.run_costs)."""

from __future__ import annotations

import importlib
import sys

import pytest

from kit.case import load_suite
from kit.runner import RunOptions, jobs_for, run_suite
from kit.runner.agents import load_agent
from kit.store import open_store
from kit.store.queries import run_costs

invoke_module = importlib.import_module("kit.runner.invoke")

CASES = "---\n".join(f'id: {c}\ninput: "{c}"\nchecks: [{{type: contains, text: echo}}]\n' for c in "abc")

AGENT = """\
import time

calls = {}

class RateLimitError(Exception):
    pass

def limited_once(text):
    calls[text] = calls.get(text, 0) + 1
    if calls[text] == 1:
        raise RateLimitError("429 rate limit")
    time.sleep(0.02)
    return {"final_output": "echo", "finish_reason": "finish", "spans": []}

def counted(text):
    time.sleep(0.02)
    span = {"kind": "llm", "name": "m", "tokens_in": 10, "tokens_out": 5, "cost_usd": 0.001}
    return {"final_output": "echo", "finish_reason": "finish", "spans": [span]}
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "cases.yaml").write_text(CASES)
    (tmp_path / "cost_agent.py").write_text(AGENT)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "cost_agent", raising=False)  # a fresh module: its counters start at 0
    monkeypatch.delenv("KIT_SLOTS_DIR", raising=False)
    monkeypatch.setattr(invoke_module, "BACKOFF_S", 0.01)
    return tmp_path


def _stored(project, fn: str, mode: str) -> dict:
    outs = run_suite(
        jobs_for(load_suite("cases.yaml").cases), load_agent(f"cost_agent:{fn}"), RunOptions(mode=mode, timeout=10)
    )
    store = open_store(project / "store.duckdb")
    run_id = store.start_run("kit", agent=fn, git_sha=None)
    store.record_many(run_id, [(o.case_run, o.trace) for o in outs])
    store.finish_run(run_id)
    with store.connect() as con:
        [row] = run_costs(con, [run_id])
    return row


@pytest.mark.parametrize("mode", ["thread", "process"])
def test_calls_retries_and_seconds_are_stored_per_run(project, mode):
    row = _stored(project, "limited_once", mode)
    assert (row["runs"], row["agent_calls"], row["retries"]) == (3, 6, 3)
    assert row["agent_s"] >= 3 * 0.02 and row["kit_s"] > 0
    assert row["tokens"] is None and row["tokens_runs"] == 0  # no trace carries tokens: not a zero
    assert row["cost_usd"] is None


def test_tokens_and_cost_are_summed_from_the_traces(project):
    row = _stored(project, "counted", "thread")
    assert (row["agent_calls"], row["retries"]) == (3, 0)
    assert (row["tokens"], row["tokens_runs"], row["cost_runs"]) == (45, 3, 3)
    assert row["cost_usd"] == pytest.approx(0.003)
