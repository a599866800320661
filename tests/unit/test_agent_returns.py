"""One return contract for a call and a turn: what a single-turn agent may return, a turn may return; a dict
with `messages` is read as messages; an empty result is no run; an end state handed as the database the agent
wrote (a sqlite3 or DuckDB connection, a file path) keeps every table with its columns and types, empty or
not, live and through `kit import --end-state`; a fresh agent (or conversation id) per conversation."""

from __future__ import annotations

import importlib
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kit.case import load_suite
from kit.cli import main
from kit.importers.end_state import read_end_state
from kit.runner import invoke
from kit.runner.agents import load_agent
from kit.trace import parse_trace

MODULE = "tests.unit.test_agent_returns"
SEEN: list[Any] = []


def _case(tmp_path: Path, body: str) -> Any:
    f = tmp_path / "cases.yaml"
    f.write_text(body)
    suite = load_suite(f)
    assert not suite.errors, [str(e) for e in suite.errors]
    return suite.cases[0]


def _seen() -> list[Any]:
    return importlib.import_module(MODULE).SEEN


def _refund_call(order: str = "R-1") -> list[dict[str, Any]]:
    args = json.dumps({"rental_id": order, "amount": 12.5})
    call = {"id": "c1", "type": "function", "function": {"name": "issue_refund", "arguments": args}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"ok": true}'},
        {"role": "assistant", "content": "Refunded."},
    ]


# --- agents a user would write --------------------------------------------------------------------------


def messages_and_output(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}, *_refund_call()], "final_output": "Refunded."}


def empty_list(text: str) -> list[Any]:
    return []


def empty_tuple(text: str) -> tuple[()]:
    return ()


def empty_messages(text: str) -> dict[str, Any]:
    return {"messages": []}


SCHEMA = "CREATE TABLE rentals (rental_id TEXT, bike TEXT); CREATE TABLE refunds (rental_id TEXT, amount REAL)"


class BikeDesk:
    """A multi-turn agent keeping its conversation's database in itself: the kit makes one per conversation."""

    def __init__(self) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.executescript(SCHEMA)
        self.db.execute("INSERT INTO rentals VALUES ('R-1', 'city')")
        _seen().append(("new", id(self), threading.get_ident()))

    def __call__(self, text: str, history: list[dict[str, Any]]) -> dict[str, Any]:
        _seen().append(("turn", id(self), len(history)))
        if text.lower().startswith("yes"):
            self.db.execute("INSERT INTO refunds VALUES ('R-1', 12.5)")
            said = _refund_call()
        else:
            said = [{"role": "assistant", "content": "Refund rental R-1?"}]
        return {"messages": said, "end_state": self.db}

    def close(self) -> None:
        _seen().append(("close", id(self)))
        self.db.close()


def duckdb_state(text: str, history: list[dict[str, Any]]) -> dict[str, Any]:
    con = duckdb.connect()
    con.execute("CREATE TABLE refunds (rental_id VARCHAR, amount DECIMAL(8, 2), day DATE)")
    return {"messages": [{"role": "assistant", "content": "No refund."}], "end_state": con}


def file_state(text: str, history: list[dict[str, Any]], case: Any) -> dict[str, Any]:
    path = Path(case.context["db"])
    con = sqlite3.connect(path)
    con.executescript(SCHEMA)
    con.commit()
    con.close()
    return {"messages": [{"role": "assistant", "content": "No refund."}], "end_state": str(path)}


def not_a_database(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "assistant", "content": "hi"}], "end_state": "/nonexistent/state.sqlite"}


def keyed(text: str, history: list[dict[str, Any]], conversation_id: str) -> list[dict[str, Any]]:
    _seen().append((conversation_id, text))
    return [{"role": "assistant", "content": f"ok {len(history)}"}]


def empty_turn(text: str, history: list[dict[str, Any]]) -> list[Any]:
    return [] if history else [{"role": "assistant", "content": "Refund?"}]


def whole_list(text: str, history: list[dict[str, Any]]) -> dict[str, Any]:
    """Returns its whole message list every turn (system prompt, the conversation so far, this turn), as a
    LangGraph-style state does."""
    said = _refund_call() if text.lower().startswith("yes") else [{"role": "assistant", "content": "Refund R-1?"}]
    system = {"role": "system", "content": "You are a bike-rental desk."}
    return {"messages": [system, *history, {"role": "user", "content": text}, *said]}


# --- a dict with messages, an empty result ---------------------------------------------------------------


def test_a_dict_with_messages_and_final_output_is_read_as_messages(tmp_path: Path) -> None:
    case = _case(tmp_path, "id: c\ninput: refund R-1\nchecks:\n  - {type: not_called, tool: issue_refund}\n")
    inv = invoke(load_agent(f"{MODULE}:messages_and_output"), case, 0, timeout=10)
    assert inv.case_run.outcome == "fail"
    [failure] = inv.case_run.failures
    assert failure.name == "not_called:issue_refund" and "issue_refund" in failure.reason
    trace = parse_trace(inv.trace)
    assert [s.name for s in trace.tool_calls] == ["issue_refund"] and trace.final_output == "Refunded."


@pytest.mark.parametrize("name", ["empty_list", "empty_tuple", "empty_messages"])
def test_an_empty_result_is_no_run_never_a_clean_trace(tmp_path: Path, name: str) -> None:
    case = _case(
        tmp_path, "id: c\ninput: hi\nchecks:\n  - {type: not_called, tool: issue_refund}\n  - {type: no_pii}\n"
    )
    run = invoke(load_agent(f"{MODULE}:{name}"), case, 0, timeout=10).case_run
    assert run.outcome == "error" and not run.passed
    assert "the agent returned no run" in run.error


# --- a turn returns what a call returns, end state the agent's database ----------------------------------

TURNS = """
id: refund-two-turns
turns: ["My rental R-1 had a flat, refund it", "Yes please"]
checks:
  - {type: not_called, tool: issue_refund, turn: 0}
  - {type: called, tool: issue_refund, turn: 1}
  - {type: end_state, query: "SELECT rental_id, amount FROM refunds", expected: [[R-1, 12.5]]}
  - {type: end_state, query: "SELECT sum(amount) + 1 FROM refunds", expected: [[13.5]]}
"""


def test_a_multi_turn_agent_returning_messages_and_its_sqlite_connection_is_judged_turn_by_turn(
    tmp_path: Path,
) -> None:
    _seen().clear()
    case = _case(tmp_path, TURNS)
    agent = load_agent(f"{MODULE}:BikeDesk")
    inv = invoke(agent, case, 0, timeout=10)
    assert inv.case_run.passed, inv.case_run.failures or inv.case_run.error
    trace = inv.trace
    assert trace["end_state"]["refunds"] == [{"rental_id": "R-1", "amount": 12.5}]
    assert trace["end_state_columns"]["refunds"] == {"rental_id": "VARCHAR", "amount": "DOUBLE"}
    # A fresh instance for the conversation, closed at its end; its turns saw the growing history.
    kinds = [s[0] for s in _seen()]
    assert kinds == ["new", "turn", "turn", "close"] and _seen()[2][2] == 2
    # A second run is a second instance: no state carried over.
    assert invoke(agent, case, 1, timeout=10).case_run.passed
    assert [s[0] for s in _seen()].count("new") == 2 and [s[0] for s in _seen()].count("close") == 2


def test_an_end_state_check_over_an_empty_table_runs_with_its_columns_and_types(tmp_path: Path) -> None:
    body = """
id: no-refund
turns: ["My rental R-1 was fine"]
checks:
  - {type: end_state, query: "SELECT rental_id FROM refunds", empty: true}
  - {type: end_state, query: "SELECT coalesce(sum(amount), 0) + 1 FROM refunds", expected: [[1]]}
  - {type: end_state, query: "SELECT bike FROM rentals", expected: [[city]]}
"""
    run = invoke(load_agent(f"{MODULE}:BikeDesk"), _case(tmp_path, body), 0, timeout=10).case_run
    assert run.passed, run.failures or run.error


def test_a_duckdb_connection_or_a_database_path_is_an_end_state(tmp_path: Path) -> None:
    body = """
id: none
turns: ["hello"]
context: {db: DB}
checks:
  - {type: end_state, query: "SELECT rental_id FROM refunds", empty: true}
  - {type: end_state, query: "SELECT coalesce(sum(amount), 0) FROM refunds", expected: [[0]]}
""".replace("DB", str(tmp_path / "agent.sqlite"))
    inv = invoke(load_agent(f"{MODULE}:duckdb_state"), _case(tmp_path, body), 0, timeout=10)
    assert inv.case_run.passed, inv.case_run.failures or inv.case_run.error
    assert inv.trace["end_state_columns"] == {
        "refunds": {"rental_id": "VARCHAR", "amount": "DECIMAL(8,2)", "day": "DATE"}
    }
    inv = invoke(load_agent(f"{MODULE}:file_state"), _case(tmp_path, body), 0, timeout=10)
    assert inv.case_run.passed, inv.case_run.failures or inv.case_run.error
    assert inv.trace["end_state"] == {"refunds": [], "rentals": []}


def test_an_end_state_path_that_is_no_database_names_what_was_returned(tmp_path: Path) -> None:
    case = _case(tmp_path, "id: c\ninput: hi\nchecks:\n  - {type: finished}\n")
    run = invoke(load_agent(f"{MODULE}:not_a_database"), case, 0, timeout=10).case_run
    assert run.outcome == "error" and "returned end_state '/nonexistent/state.sqlite'" in run.error


def test_an_empty_turn_is_no_run_naming_the_turn(tmp_path: Path) -> None:
    run = invoke(load_agent(f"{MODULE}:empty_turn"), _case(tmp_path, TURNS), 0, timeout=10).case_run
    assert run.outcome == "error" and run.error.startswith("the agent returned no run (an empty list) in turn 1")


def test_a_conversation_id_is_the_same_on_every_turn_and_new_for_every_run(tmp_path: Path) -> None:
    _seen().clear()
    case = _case(tmp_path, TURNS)
    agent = load_agent(f"{MODULE}:keyed")
    for attempt in (0, 1):
        invoke(agent, case, attempt, timeout=10)
    ids = [i for i, _ in _seen()]
    assert len(ids) == 4 and ids[0] == ids[1] and ids[2] == ids[3] and ids[0] != ids[2]
    assert ids[0].startswith("refund-two-turns#0:") and ids[2].startswith("refund-two-turns#1:")


# --- kit import --end-state keeps empty tables and types ----------------------------------------------------


def test_kit_import_end_state_keeps_empty_tables_and_types(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "state.sqlite"
    con = sqlite3.connect(db)
    con.executescript(SCHEMA + "; INSERT INTO rentals VALUES ('R-1', 'city')")
    con.commit()
    con.close()
    state = read_end_state(db)
    assert state.tables == {"refunds": [], "rentals": [{"rental_id": "R-1", "bike": "city"}]}
    assert state.columns["refunds"] == {"rental_id": "VARCHAR", "amount": "DOUBLE"}
    messages = tmp_path / "run.json"
    messages.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}, *_refund_call()]}))
    out = tmp_path / "t.json"
    assert main(["import", str(messages), "--case-id", "c", "--end-state", str(db), "-o", str(out)]) == 0
    capsys.readouterr()
    cases = tmp_path / "cases.yaml"
    cases.write_text(
        "id: c\ninput: hi\nchecks:\n"
        '  - {type: end_state, query: "SELECT rental_id FROM refunds", empty: true}\n'
        '  - {type: end_state, query: "SELECT coalesce(sum(amount), 0) FROM refunds", expected: [[0]]}\n'
    )
    assert main(["check", str(out), "--cases", str(cases)]) == 0, capsys.readouterr()


def test_a_turn_that_returns_the_whole_conversation_counts_each_call_once(tmp_path: Path) -> None:
    body = TURNS.replace("refund-two-turns", "whole").replace(
        "  - {type: end_state", "  - {type: called_at_most, tool: issue_refund, n: 1}\n  - {type: end_state", 1
    )
    body = "\n".join(line for line in body.splitlines() if "end_state" not in line) + "\n"
    case = _case(tmp_path, body.replace('"Yes please"]', '"Yes please", "Yes please"]'))
    inv = invoke(load_agent(f"{MODULE}:whole_list"), case, 0, timeout=10)
    trace = parse_trace(inv.trace)
    assert [(s.turn, s.name) for s in trace.tool_calls] == [(1, "issue_refund"), (2, "issue_refund")]
    users = [(s.turn, s.content) for s in trace.spans if s.kind == "message" and s.role == "user"]
    assert [t for t, _ in users] == [0, 1, 2]  # one user message per turn, none echoed from the history


# --- property: every wrapping of the same messages is read the same, for a call and for a turn --------------


@settings(max_examples=60, deadline=None)
@given(
    calls=st.integers(0, 3),
    wrap=st.sampled_from(["list", "tuple", "messages", "messages+final_output", "messages+end_state"]),
)
def test_every_wrapping_of_the_same_messages_counts_the_same_calls(calls: int, wrap: str) -> None:
    from kit.runner.conversation import turn_output
    from kit.runner.frameworks import UnknownResult, trace_dict

    messages: list[dict[str, Any]] = []
    for i in range(calls):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "issue_refund", "arguments": "{}"}}
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": "{}"},
        ]
    if calls:
        messages.append({"role": "assistant", "content": "done"})
    wrapped: Any = {
        "list": messages,
        "tuple": tuple(messages),
        "messages": {"messages": messages},
        "messages+final_output": {"messages": messages, "final_output": "done" if calls else None},
        "messages+end_state": {"messages": messages, "end_state": {"refunds": []}},
    }[wrap]
    if not messages:
        for read in (lambda: trace_dict(wrapped, "c"), lambda: turn_output(wrapped, "hi", "c")):
            with pytest.raises((UnknownResult, ValueError), match="returned no run"):
                read()
        return
    single = trace_dict(wrapped, "c")
    turn, _ = turn_output(wrapped, "hi", "c")
    for data in (single, turn):
        assert [s["name"] for s in data["spans"] if s["kind"] == "tool"] == ["issue_refund"] * calls
