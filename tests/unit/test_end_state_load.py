"""The end_state sandbox loads a large end state in bounded batches: memory grows with the rows, never with one
statement as long as the table (100,000 rows of 8 MB once took 1.2 GB and 16 s in one INSERT); a column DuckDB
cannot take as one list (values of mixed kinds) still loads, each value cast alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kit.case import load_suite
from kit.checks import end_state as es
from kit.evaluate import evaluate
from kit.trace import parse_trace


class _Counting:
    """The sandbox's connection, counting the values each statement carries."""

    def __init__(self, con: Any) -> None:
        self.con = con
        self.largest = 0

    def execute(self, sql: str, params: Any = None) -> Any:
        if params is not None:
            self.largest = max(self.largest, sum(len(p) if isinstance(p, list) else 1 for p in params))
            return self.con.execute(sql, params)
        return self.con.execute(sql)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.con, name)


def _run(tmp_path: Path, rows: list[dict[str, Any]], query: str, expected: list[list[Any]]) -> Any:
    (tmp_path / "c.yaml").write_text(
        f"id: c\ninput: x\nchecks:\n  - {{type: end_state, query: {query!r}, expected: {expected!r}}}\n"
    )
    [case] = load_suite(tmp_path / "c.yaml").cases
    trace = parse_trace({"case_id": "c", "final_output": "x", "spans": [], "end_state": {"orders": rows}})
    return evaluate(trace, case)


def test_a_large_end_state_loads_in_bounded_batches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _run(tmp_path, [{"a": 1}], "SELECT count(*) FROM orders", [[1]])  # the sandbox's connection exists
    counting = _Counting(es._SANDBOX.con)
    monkeypatch.setattr(es._SANDBOX, "con", counting)
    n = 20_003
    rows = [{"order_id": f"GA-{i}", "amount": i * 1.5, "paid": i % 2 == 0} for i in range(n)]
    total = sum(r["amount"] for r in rows)
    run = _run(tmp_path, rows, "SELECT count(*), sum(amount), count_if(paid) FROM orders", [[n, total, (n + 1) // 2]])
    assert run.passed, run
    assert counting.largest <= 3 * 10_000, counting.largest  # a batch's values (3 columns), never the table's
    mixed = [{"order_id": "x"}, {"order_id": {"nested": 1}}, {"order_id": 7}]  # no one list type holds these
    run = _run(tmp_path, mixed, "SELECT count(*) FROM orders", [[3]])
    assert run.passed, run
