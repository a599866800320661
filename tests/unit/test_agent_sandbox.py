"""The reference agent's sandbox: values as the column types say, stable order, private per run (threads,
forked processes), lookups' matching rules, bad fixtures refused by name."""

from __future__ import annotations

import json
import multiprocessing
import subprocess
import sys
from pathlib import Path

import pytest

from kit.agent import sandbox as sandbox_module
from kit.agent.fixtures import DEFAULT_PATH, TABLES
from kit.agent.sandbox import Sandbox
from kit.agent.tools import run_tool


def _fixture(tmp_path: Path, **tables: list[dict]) -> str:
    data = json.loads(DEFAULT_PATH.read_text())
    data.update(tables)
    path = tmp_path / "shop.json"
    path.write_text(json.dumps(data))
    return str(path)


def _refund(order_id: str, refund_id: str | None, reason: str, amount: object = 10) -> dict:
    return {"refund_id": refund_id, "order_id": order_id, "amount": amount, "reason": reason, "created_at": "d"}


def test_end_state_is_every_table_with_the_fixture_values_and_types() -> None:
    seed = json.loads(DEFAULT_PATH.read_text())
    with Sandbox() as sb:
        state = sb.end_state()
    assert list(state) == list(TABLES)
    for table, rows in state.items():
        first = next(iter(TABLES[table]))
        want = sorted(seed.get(table, []), key=lambda r: r[first])
        assert rows == want, table
        for row in rows:
            assert list(row) == list(TABLES[table])  # column order of the table
            for column, sql_type in TABLES[table].items():
                assert isinstance(row[column], float if sql_type == "DOUBLE" else str), (table, column)


def test_numbers_stay_floats_and_strings_strings(tmp_path: Path) -> None:
    order = json.loads(DEFAULT_PATH.read_text())["orders"][0]
    path = _fixture(
        tmp_path,
        orders=[{**order, "order_id": "ORD-900001", "total": 120, "items": None, "placed_at": 7}],
        refunds=[_refund("ORD-900001", "RF-0001", "x", amount="12.5"), _refund("ORD-900001", "RF-0002", "y", True)],
    )
    with Sandbox(path) as sb:
        state = sb.end_state()
        got = run_tool(sb, "lookup_order", {"order_id": "ORD-900001", "customer_id": order["customer_id"]})
    row = state["orders"][0]
    assert (row["total"], row["items"], row["placed_at"]) == (120.0, None, "7.0")
    assert type(row["total"]) is float and type(got["total"]) is float and got["total"] == 120.0
    assert [(r["amount"], type(r["amount"])) for r in state["refunds"]] == [(12.5, float), (1.0, float)]
    assert got["refunded_amount"] == 13.5


def test_rows_are_ordered_by_the_first_column_nulls_last_ties_as_inserted(tmp_path: Path) -> None:
    rows = [
        _refund("ORD-100001", "RF-0002", "b1"),
        _refund("ORD-100001", None, "n1"),
        _refund("ORD-100001", "RF-0001", "a"),
        _refund("ORD-100001", "RF-0002", "b2"),
        _refund("ORD-100001", None, "n2"),
        _refund("ORD-100001", "rf-0000", "lower case sorts after upper"),
    ]
    with Sandbox(_fixture(tmp_path, refunds=rows)) as sb:
        got = [r["reason"] for r in sb.end_state()["refunds"]]
    assert got == ["a", "b1", "b2", "lower case sorts after upper", "n1", "n2"]


def test_a_tool_write_reaches_this_sandbox_only() -> None:
    with Sandbox() as first, Sandbox() as second:
        out = run_tool(first, "issue_refund", {"order_id": "ORD-100001", "reason": "damaged"})
        assert out == {"ok": True, "refund_id": "RF-0003", "order_id": "ORD-100001", "amount": 42.5}
        assert [r["refund_id"] for r in first.end_state()["refunds"]] == ["RF-0001", "RF-0002", "RF-0003"]
        assert [r["refund_id"] for r in second.end_state()["refunds"]] == ["RF-0001", "RF-0002"]
        status = {o["order_id"]: o["status"] for o in first.end_state()["orders"]}
        assert status["ORD-100001"] == "refunded"
    with Sandbox() as third:
        assert len(third.end_state()["refunds"]) == 2


def _refund_in_child(queue: multiprocessing.Queue) -> None:
    with Sandbox() as sb:
        run_tool(sb, "issue_refund", {"order_id": "ORD-100001", "reason": "damaged"})
        queue.put([r["refund_id"] for r in sb.end_state()["refunds"]])


@pytest.mark.skipif(sys.platform != "linux", reason="forks a child: fork is unsafe on macOS")
def test_a_forked_child_seeds_its_own_database_even_if_the_lock_was_held_at_fork() -> None:
    with Sandbox():  # the parent's template exists before the fork
        pass
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    with sandbox_module._lock:  # as if another thread of the parent were restoring a sandbox right now
        child = ctx.Process(target=_refund_in_child, args=(queue,))
        child.start()
        child.join(timeout=30)
    if child.is_alive():
        child.kill()
        child.join()
    assert child.exitcode == 0, "the forked child hung or failed"
    assert queue.get(timeout=5) == ["RF-0001", "RF-0002", "RF-0003"]
    with Sandbox() as sb:  # the parent is untouched by the child's write
        assert len(sb.end_state()["refunds"]) == 2


@pytest.mark.parametrize(
    ("args", "found"),
    [
        ({"email": "alice.moreau@example.com"}, "C001"),
        ({"email": "ALICE.Moreau@Example.com"}, "C001"),
        ({"email": "AL\u0130CE.MOREAU@EXAMPLE.com"}, "C001"),  # dotted capital I folds to i
        ({"email": "alicx.moreau@example.com"}, None),
        ({"phone": "+1 415 555 0101"}, "C001"),
        ({"phone": "14155550101"}, "C001"),
        ({"phone": "1-415-555-0199"}, None),
    ],
)
def test_lookup_customer_matching(args: dict, found: str | None) -> None:
    with Sandbox() as sb:
        assert run_tool(sb, "lookup_customer", args) == {"found": found is not None, "customer_id": found}


def test_a_bad_number_in_the_fixtures_names_file_table_row_and_column(tmp_path: Path) -> None:
    path = _fixture(tmp_path, refunds=[_refund("ORD-100001", "RF-0001", "x", amount="lots")])
    with pytest.raises(ValueError, match=r"shop\.json: refunds\[0\]\.amount: 'lots' is not a number"):
        Sandbox(path)


def test_a_run_of_the_reference_agent_imports_no_duckdb() -> None:
    code = (
        "import sys; from kit.agent import run_agent; "
        "t = run_agent('alice.moreau@example.com, zip 94107: refund ORD-100001, damaged. Yes, go ahead.', "
        "case_id='c'); assert t['finish_reason'] == 'finish', t; print('duckdb' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
