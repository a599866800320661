"""The end_state sandbox against a hostile query or trace: no DuckDB file function reads a file (the temp
folder DuckDB allows by default included), a trace whose rows do not load is an error on every check
rather than an empty table, and a missing table is named with how to attach it."""

from __future__ import annotations

from pathlib import Path

import pytest
from _oracle import make_case, make_trace, run1

from kit.checks import end_state as es
from kit.errors import KitInputError

SECRET = "kit-secret-7f3a9c"


@pytest.fixture
def hostile_cwd(tmp_path, monkeypatch):
    """A working directory with a secret where DuckDB's default temp folder (`.tmp`) would be, and one
    beside it; a fresh sandbox opened there."""
    (tmp_path / ".tmp").mkdir()
    (tmp_path / ".tmp" / "secret.txt").write_text(SECRET + "\n")
    (tmp_path / ".tmp" / "secret.csv").write_text(f"a\n{SECRET}\n")
    (tmp_path / ".tmp" / "secret.json").write_text(f'{{"a": "{SECRET}"}}\n')
    (tmp_path / "secret.txt").write_text(SECRET + "\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(es, "_SANDBOX", es._Sandbox())
    return tmp_path


def _paths(root: Path) -> list[str]:
    return [
        ".tmp/secret.txt",
        ".tmp/*",
        ".tmp/secret.csv",
        ".tmp/secret.json",
        "secret.txt",
        str(root / ".tmp" / "secret.txt"),
        str(root / ".tmp"),
        "*",
        "**",
    ]


def _string_functions() -> tuple[list[str], list[str]]:
    """(table functions, scalar functions) of the sandbox's DuckDB whose first parameter can be a string."""
    con = es._SANDBOX._connect()
    rows = con.execute(
        "SELECT DISTINCT function_name, function_type FROM duckdb_functions() "
        "WHERE len(parameter_types) >= 1 AND parameter_types[1] IN ('VARCHAR', 'VARCHAR[]', 'ANY') "
        "AND function_type IN ('table', 'table_macro', 'scalar', 'macro')"
    ).fetchall()
    con.close()
    table = sorted(n for n, t in rows if t.startswith("table"))
    scalar = sorted(n for n, t in rows if not t.startswith("table"))
    return table, scalar


def _leaks(sql: str, trace) -> str | None:
    try:
        rows = es._SANDBOX.query(trace, sql, 100)
    except Exception as e:
        return sql if SECRET in str(e) else None
    return sql if SECRET in repr(rows) else None


def test_no_duckdb_function_reads_the_temp_folder_or_any_file(hostile_cwd):
    trace = make_trace(end_state={"t": [{"a": 1}]})
    table, scalar = _string_functions()
    assert {"glob", "read_text", "read_blob", "read_csv", "read_json", "read_parquet", "sniff_csv"} <= set(table)
    leaks = []
    for path in _paths(hostile_cwd):
        lit = "'" + path.replace("'", "''") + "'"
        for fn in table:
            leaks.append(_leaks(f'SELECT * FROM "{fn}"({lit})', trace))
        for fn in scalar:
            leaks.append(_leaks(f'SELECT "{fn}"({lit})', trace))
        leaks.append(_leaks(f"SELECT * FROM {lit}", trace))  # a path as a table name (a replacement scan)
    assert [x for x in leaks if x] == []
    # Listing the folder finds nothing either, not even the names.
    assert _leaks("SELECT * FROM glob('.tmp/*')", trace) is None
    with pytest.raises(Exception, match="disabled by configuration"):
        es._SANDBOX.query(trace, "SELECT * FROM glob('.tmp/*')", 10)


@pytest.mark.parametrize(
    "statement",
    [
        "COPY (SELECT 1) TO '.tmp/out.csv'",
        "COPY t FROM '.tmp/secret.csv'",
        "ATTACH '.tmp/x.duckdb' AS x",
        "EXPORT DATABASE '.tmp/export'",
        "IMPORT DATABASE '.tmp'",
        "INSTALL sqlite",
        "LOAD sqlite",
        "SET temp_directory = '.tmp'",
        "SET enable_external_access = true",
        "SELECT * FROM query('SELECT * FROM read_text(''.tmp/secret.txt'')')",
    ],
)
def test_statements_that_touch_files_fail_in_the_sandbox_itself(hostile_cwd, statement):
    # The check refuses anything but a SELECT at load; the sandbox refuses these on its own too.
    trace = make_trace(end_state={"t": [{"a": 1}]})
    with pytest.raises(Exception) as e:
        es._SANDBOX.query(trace, statement, 10)
    assert SECRET not in str(e.value)
    assert sorted(p.name for p in (hostile_cwd / ".tmp").iterdir()) == ["secret.csv", "secret.json", "secret.txt"]


def test_reading_the_temp_folder_through_the_check_gives_no_content_in_the_reason(hostile_cwd):
    trace = make_trace(end_state={"t": [{"a": 1}]})
    for query in (
        "SELECT * FROM glob('.tmp/*')",
        "SELECT content FROM read_text('.tmp/secret.txt')",
        "SELECT content FROM read_blob('.tmp/*')",
        "SELECT * FROM read_csv('.tmp/secret.csv')",
        "SELECT * FROM read_json('.tmp/secret.json')",
    ):
        r = run1(trace, {"type": "end_state", "query": query, "empty": True})
        assert r.error and SECRET not in r.reason and "secret" not in r.reason.replace(".tmp/secret", ""), r.reason
        assert "disabled by configuration" in r.reason


def test_the_sandbox_has_no_temp_folder_and_no_persistent_secrets(hostile_cwd):
    trace = make_trace(end_state={"t": [{"a": 1}]})
    es._SANDBOX.query(trace, "SELECT * FROM t", 10)
    # A query may not list the settings (below); the kit's own connection reads them.
    rows = es._SANDBOX.con.execute(
        "SELECT name, value FROM duckdb_settings() WHERE name IN "
        "('temp_directory', 'allow_persistent_secrets', 'enable_external_access', 'autoinstall_known_extensions', "
        "'autoload_known_extensions', 'lock_configuration') ORDER BY name",
    ).fetchall()
    assert dict(rows) == {
        "allow_persistent_secrets": "false",
        "autoinstall_known_extensions": "false",
        "autoload_known_extensions": "false",
        "enable_external_access": "false",
        "lock_configuration": "true",
        "temp_directory": "",
    }


# --- a failed load is an error, never an empty table ---------------------------------------------------


def test_an_integer_past_int64_loads_and_is_seen():
    # Before: the row failed to load, the table stayed empty under its content key, and `empty: true` passed.
    trace = make_trace(end_state={"refunds": [{"order_id": "ORD-1", "amount": 2**63}]})
    r = run1(trace, {"type": "end_state", "query": "SELECT order_id FROM refunds", "empty": True})
    assert not r.passed and not r.error and "ORD-1" in r.reason
    r = run1(trace, {"type": "end_state", "query": "SELECT amount FROM refunds", "expected": [[2**63]]})
    assert r.passed, r.reason


def test_a_row_that_does_not_load_is_an_error_on_every_check_and_every_attempt():
    rows = {"refunds": [{"order_id": "ORD-1", "amount": 2**200}]}
    check = {"type": "end_state", "query": "SELECT * FROM refunds", "empty": True}
    for _ in range(2):  # the same content key twice: nothing cached from the failed load
        trace = make_trace(end_state=rows)
        for _ in range(2):  # the same trace twice
            r = run1(trace, check)
            assert r.error and not r.passed
            assert "end_state table 'refunds' does not load" in r.reason and "EndStateError" in r.reason
    # A good trace after it is judged on its own rows.
    good = make_trace(end_state={"refunds": [{"order_id": "ORD-2", "amount": 5}]})
    r = run1(good, {"type": "end_state", "query": "SELECT order_id FROM refunds", "expected": [["ORD-2"]]})
    assert r.passed, r.reason


# --- a missing table names itself and how to attach it -------------------------------------------------


def test_a_trace_without_the_table_is_an_error_naming_it_and_how_to_attach():
    trace = make_trace()
    r = run1(trace, {"type": "end_state", "query": "SELECT * FROM refunds", "empty": True})
    assert r.error and not r.passed
    assert "'refunds'" in r.reason and "kit import --end-state FILE" in r.reason
    assert "top-level `end_state` in the trace" in r.reason and "Catalog Error" not in r.reason


def test_a_missing_table_beside_present_ones_is_named_alone():
    trace = make_trace(end_state={"orders": [{"id": 1}]})
    r = run1(trace, {"type": "end_state", "query": "SELECT * FROM orders JOIN refunds USING (id)", "empty": True})
    assert r.error and "table 'refunds' not in this trace's end state (it has 'orders')" in r.reason


def test_an_unknown_function_keeps_duckdbs_own_words():
    trace = make_trace(end_state={"orders": [{"id": 1}]})
    r = run1(trace, {"type": "end_state", "query": "SELECT no_such_fn(id) FROM orders", "empty": True})
    assert r.error and "no_such_fn" in r.reason


# --- the catalogue, settings, secrets and extensions are not the end state's -----------------------------


@pytest.mark.parametrize(
    "query",
    [
        "SELECT * FROM duckdb_secrets()",
        "SELECT * FROM DuckDB_Secrets()",
        'SELECT * FROM "duckdb_secrets"()',
        "SELECT * FROM duckdb_settings()",
        "SELECT * FROM duckdb_extensions()",
        "SELECT * FROM duckdb_secret_types()",
        "SELECT * FROM which_secret('s3://bucket/x', 's3')",
        "SELECT current_setting('temp_directory')",
        "SELECT * FROM pg_catalog.pg_settings",
        "SELECT * FROM pragma_version()",
        "SELECT * FROM query('SELECT * FROM duckdb_' || 'secrets()')",
        "SELECT * FROM query /* a comment */ ('SELECT 1')",
        "SELECT * FROM query_table('t')",
        "SELECT getvariable('x')",
        "SELECT * FROM duckdb_logs()",
    ],
)
def test_settings_secrets_and_extensions_are_refused_at_load_and_in_the_sandbox(hostile_cwd, query):
    with pytest.raises(KitInputError, match="end_state query reads the end state's tables only"):
        make_case({"type": "end_state", "query": query, "empty": True})
    trace = make_trace(end_state={"t": [{"a": 1}]})
    with pytest.raises(es.EndStateError, match="end_state query reads the end state's tables only"):
        es._SANDBOX.query(trace, query, 10)


def test_a_column_named_query_or_setting_is_still_a_column():
    trace = make_trace(end_state={"searches": [{"query": "bike", "setting": "x"}]})
    r = run1(trace, {"type": "end_state", "query": "SELECT query, setting FROM searches", "expected": [["bike", "x"]]})
    assert r.passed, r.reason


def test_a_declared_column_type_goes_into_the_sandbox_only_from_the_allowed_list():
    bad = make_trace(end_state={"t": []}, end_state_columns={"t": {"a": "INTEGER); DROP TABLE t; --"}})
    r = run1(bad, {"type": "end_state", "query": "SELECT * FROM t", "empty": True})
    assert r.error and "type 'INTEGER); DROP TABLE t; --' is not one the sandbox takes" in r.reason


# --- a query's answer is kept for the rows it read, and only for them ----------------------------------


class _Counting:
    """A DuckDB connection that counts the queries it is asked."""

    def __init__(self, con):
        self.con, self.asked = con, []

    def execute(self, sql, *args):
        self.asked.append(sql)
        return self.con.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self.con, name)


def test_the_same_rows_ask_a_query_once_and_other_rows_get_their_own_answer(monkeypatch):
    sandbox = es._Sandbox()
    monkeypatch.setattr(es, "_SANDBOX", sandbox)
    sandbox.con = _Counting(sandbox._connect())
    count = "SELECT count(*) FROM refunds"
    check = {"type": "end_state", "query": count, "expected": [[1]]}
    one = {"refunds": [{"order_id": "ORD-1", "amount": 5}]}
    for _ in range(3):  # three runs that left the same end state: three traces, one query
        assert run1(make_trace(end_state=one), check).passed
    assert sandbox.con.asked.count(count) == 1
    two = make_trace(end_state={"refunds": [{"order_id": "ORD-1", "amount": 5}, {"order_id": "ORD-2", "amount": 1}]})
    r = run1(two, check)
    assert not r.passed and "[[2]]" in r.reason  # other rows: asked again, and answered from them
    assert sandbox.con.asked.count(count) == 2
    # A query whose answer can change on the same rows is asked every time.
    volatile = "SELECT count(*) FROM refunds WHERE random() < 2"
    for _ in range(2):
        assert run1(make_trace(end_state=one), {"type": "end_state", "query": volatile, "expected": [[1]]}).passed
    assert sandbox.con.asked.count(volatile) == 2
    # So is one whose answer is large (kept answers are a check's few rows, not a table's worth).
    many = "SELECT * FROM range(200)"
    for _ in range(2):
        run1(make_trace(end_state=one), {"type": "end_state", "query": many, "empty": True})
    assert sandbox.con.asked.count(many) == 2
