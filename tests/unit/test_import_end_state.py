"""`kit import --end-state FILE` attaches the tables recorded after a run (JSON rows per table, a SQLite or a
DuckDB file) as the trace's end_state, so `end_state` checks judge an imported run as they judge a live one."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import duckdb
import pytest

from kit.cli import main

LIBRARY = Path(__file__).resolve().parents[2] / "tests" / "data" / "import" / "library"
CASES = """
id: return-confirmed
input: x
checks:
  - {type: end_state, query: "SELECT loan_id FROM loans WHERE returned ORDER BY loan_id", expected: [[L42]]}
  - {type: end_state, query: "SELECT count(*) FROM members", expected: [[1]]}
"""
LOANS = [{"loan_id": "L42", "returned": True}, {"loan_id": "L43", "returned": False}]


def _json(tmp: Path) -> Path:
    (tmp / "state.json").write_text(json.dumps({"loans": LOANS, "members": [{"member_id": "M7"}]}))
    return tmp / "state.json"


def _sqlite(tmp: Path) -> Path:
    con = sqlite3.connect(tmp / "state.sqlite")
    con.execute("CREATE TABLE loans (loan_id TEXT, returned BOOLEAN)")
    con.executemany("INSERT INTO loans VALUES (?, ?)", [(r["loan_id"], r["returned"]) for r in LOANS])
    con.execute("CREATE TABLE members (member_id TEXT)")
    con.execute("INSERT INTO members VALUES ('M7')")
    con.commit()
    con.close()
    return tmp / "state.sqlite"


def _duckdb(tmp: Path) -> Path:
    con = duckdb.connect(str(tmp / "state.duckdb"))
    con.execute("CREATE TABLE loans (loan_id VARCHAR, returned BOOLEAN, fee DECIMAL(6, 2), due DATE)")
    con.execute("INSERT INTO loans VALUES ('L42', true, 1.50, '2026-12-01'), ('L43', false, 0, '2026-12-09')")
    con.execute("CREATE TABLE members (member_id VARCHAR)")
    con.execute("INSERT INTO members VALUES ('M7')")
    con.close()
    return tmp / "state.duckdb"


@pytest.mark.parametrize("make", [_json, _sqlite, _duckdb])
def test_end_state_from_json_sqlite_or_duckdb_is_judged(tmp_path, capsys, make):
    state = make(tmp_path)
    out = tmp_path / "t.json"
    args = ["import", str(LIBRARY / "messages_guarded.json"), "--case-id", "return-confirmed"]
    assert main([*args, "--end-state", str(state), "-o", str(out)]) == 0, capsys.readouterr().err
    tables = json.loads(out.read_text())["end_state"]
    assert sorted(tables) == ["loans", "members"]
    assert [r["loan_id"] for r in tables["loans"]] == ["L42", "L43"]
    (tmp_path / "c.yaml").write_text(CASES)
    assert main(["check", str(out), "--cases", str(tmp_path / "c.yaml")]) == 0, capsys.readouterr().out
    if make is _duckdb:  # values JSON cannot hold as they are: a decimal as a number, a date as ISO text
        assert tables["loans"][0]["fee"] == 1.5 and tables["loans"][0]["due"] == "2026-12-01"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"loans": {"loan_id": "L42"}}', "table 'loans': expected a list of row objects"),
        ("[1, 2]", "expected an object of tables"),
        ("not json", "not JSON, SQLite or DuckDB"),
    ],
)
def test_a_bad_end_state_file_is_exit_2_naming_it(tmp_path, capsys, content, message):
    (tmp_path / "state.json").write_text(content)
    out = tmp_path / "t.json"
    args = ["import", str(LIBRARY / "messages_guarded.json"), "--end-state", str(tmp_path / "state.json")]
    assert main([*args, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path / "state.json") in err and message in err and not out.exists()


def test_one_end_state_for_several_runs_is_refused(tmp_path, capsys):
    convs = [{"case_id": "c", "messages": [{"role": "user", "content": str(i)}]} for i in range(2)]
    (tmp_path / "two.json").write_text(json.dumps(convs))
    args = ["import", str(tmp_path / "two.json"), "--end-state", str(_json(tmp_path)), "-o", str(tmp_path / "t.json")]
    assert main(args) == 2
    assert "the import holds more than one run" in capsys.readouterr().err


def test_an_agent_may_hand_back_the_path_of_a_duckdb_file_it_still_holds_open(tmp_path: Path) -> None:
    from kit.importers.end_state import end_state_of

    held = duckdb.connect(str(tmp_path / "state.duckdb"))  # the agent's own connection, left open
    held.execute("CREATE TABLE loans (loan_id VARCHAR, returned BOOLEAN)")
    held.execute("INSERT INTO loans VALUES ('L42', true)")
    state = end_state_of(str(tmp_path / "state.duckdb"))
    assert state is not None and state.tables == {"loans": [{"loan_id": "L42", "returned": True}]}
    held.execute("INSERT INTO loans VALUES ('L43', false)")  # still the agent's, writable as before
    assert held.execute("SELECT count(*) FROM loans").fetchone() == (2,)
    held.close()
