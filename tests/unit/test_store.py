"""The store: schema and migration, many writers at once, durability across SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb

from kit.result import CaseRun, Result
from kit.settings import load_settings
from kit.store import open_store
from kit.store.schema import LATEST, current_version, migrate


def _run(case_id: str, attempt: int, ok: bool) -> CaseRun:
    return CaseRun(
        case_id,
        attempt,
        (Result("called:lookup_order", ok, "" if ok else "lookup_order never called"), Result("budget", True)),
        metrics={"steps": 3, "tokens": 100, "cost_usd": 0.01, "latency_ms": 5.0},
    )


def test_kit_store_env_overrides_default(tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_STORE", str(tmp_path / "x.duckdb"))
    assert load_settings(root=tmp_path).store == tmp_path / "x.duckdb"
    monkeypatch.delenv("KIT_STORE")
    assert load_settings(root=tmp_path).store == Path(".kit/evals.duckdb")


def test_contract_tables_and_columns(tmp_path):
    store = open_store(tmp_path / "s.duckdb")
    with store.connect() as con:
        cols = {
            t: [
                r[0]
                for r in con.execute(
                    "SELECT column_name FROM information_schema.columns WHERE table_name = ? ORDER BY ordinal_position",
                    [t],
                ).fetchall()
            ]
            for t in ("runs", "case_results", "check_results")
        }
    assert cols["runs"][:7] == ["run_id", "source", "started_at", "git_sha", "agent", "model", "config_hash"]
    assert cols["case_results"][:9] == [
        "run_id",
        "case_id",
        "attempt",
        "passed",
        "steps",
        "tokens",
        "cost_usd",
        "latency_ms",
        "trace",
    ]
    assert cols["check_results"][:8] == ["run_id", "case_id", "attempt", "check", "gate", "outcome", "score", "reason"]
    assert {"status", "kit_version", "finished_at"} <= set(cols["runs"])


def test_record_and_read_back(tmp_path):
    store = open_store(tmp_path / "s.duckdb")
    run_id = store.start_run("kit", agent="desk", model="m1", config_hash="abc", git_sha="deadbeef")
    store.record(run_id, _run("c1", 0, True), {"case_id": "c1", "final_output": "ok", "spans": []})
    store.record(run_id, CaseRun("c2", 0, (), error="agent raised ValueError"))
    store.record(run_id, CaseRun("c1", 0, (Result("geval:tone", True, "polite", score=0.8),)), gate="soft")
    store.record_soft(run_id, "c2", 0, "geval:tone", outcome="skipped", reason="no judge model configured")
    store.record_soft(
        run_id,
        "c1",
        0,
        "geval:helpful",
        outcome="fail",
        score=0.3,
        threshold=0.7,
        judge_model="judge-1",
        rubric_hash="r1",
        raw_answer='{"score": 3}',
    )
    store.finish_run(run_id)
    with store.connect() as con:
        run = con.execute("SELECT source, git_sha, model, config_hash, status, kit_version FROM runs").fetchone()
        assert run == ("kit", "deadbeef", "m1", "abc", "complete", "0.1.0")
        assert con.execute("SELECT case_id, passed, steps, outcome FROM case_results ORDER BY case_id").fetchall() == [
            ("c1", True, 3, "pass"),
            ("c2", False, None, "error"),
        ]
        soft = con.execute("""SELECT case_id, "check", outcome, score FROM check_results WHERE gate = 'soft'
                              ORDER BY 1, 2""").fetchall()
        assert soft == [
            ("c1", "geval:helpful", "fail", 0.3),
            ("c1", "geval:tone", "pass", 0.8),
            ("c2", "geval:tone", "skipped", None),
        ]
        infra = con.execute("""SELECT outcome, reason FROM check_results WHERE "check" = 'infrastructure'""").fetchall()
        assert infra == [("error", "agent raised ValueError")]
        judge = con.execute("SELECT judge_model, rubric_hash, raw_answer FROM judge_calls").fetchall()
        assert judge == [("judge-1", "r1", '{"score": 3}')]
        # Merging again adds nothing: offsets are committed with the rows.
    store.merge()
    with store.connect() as con:
        assert con.execute("SELECT count(*) FROM case_results").fetchone()[0] == 2


def test_migrates_a_version_1_file_in_place(tmp_path):
    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    migrate(con, target=1)
    con.execute("INSERT INTO runs VALUES ('r-old', 'kit', now(), 'sha1', 'a', 'm', 'h')")
    con.execute("INSERT INTO case_results VALUES ('r-old', 'c1', 0, true, 1, 2, 0.1, 3, NULL)")
    con.execute("INSERT INTO check_results VALUES ('r-old', 'c1', 0, 'finished', 'hard', 'pass', NULL, '')")
    con.close()
    store = open_store(path)
    with store.connect() as con:
        assert current_version(con) == LATEST > 1
        assert con.execute("SELECT run_id, status FROM runs").fetchall() == [("r-old", "complete")]
        assert con.execute("SELECT count(*) FROM case_results").fetchone()[0] == 1
        assert con.execute("SELECT count(*) FROM check_results").fetchone()[0] == 1


def test_a_corrupt_spool_line_is_skipped_not_fatal(tmp_path, capsys):
    store = open_store(tmp_path / "s.duckdb")
    run_id = store.start_run("kit", git_sha=None)
    store.record(run_id, _run("c1", 0, True))
    os.write(store._writer._fd, b'{"t": "case", "run_id": oops}\n')
    store.record(run_id, _run("c2", 0, True))
    store.finish_run(run_id)
    with store.connect() as con:
        assert con.execute("SELECT count(*) FROM case_results").fetchone()[0] == 2
    assert "jsonl: line 3: not readable JSON" in capsys.readouterr().err


WRITER = textwrap.dedent(
    """
    import sys
    from kit.result import CaseRun, Result
    from kit.store import open_store
    store = open_store(sys.argv[1]); run_id = sys.argv[2]; w = int(sys.argv[3]); n = int(sys.argv[4])
    for i in range(n):
        ok = (i + w) % 4 != 0
        store.record(run_id, CaseRun(f"w{w}-c{i}", 0, (Result("called:x", ok, "r"), Result("budget", True))))
        if i % 700 == 699:
            store.merge()  # some writers merge while the others keep writing
    """
)


def test_threads_sharing_one_store_write_one_spool_numbered_without_a_gap_or_a_repeat(tmp_path):
    """The merger tells a cut spool, and the records lost with it, by its line numbers: a writer shared by
    threads (one store object in a threaded recorder) once opened a file per thread and wrote numbers twice."""
    import json
    import threading

    from kit.store.spool import SpoolWriter

    writer = SpoolWriter(tmp_path / "spool")
    go = threading.Barrier(8)

    def write(t: int) -> None:
        go.wait()
        for i in range(300):
            writer.write({"t": "x", "thread": t, "i": i})

    threads = [threading.Thread(target=write, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    files = list((tmp_path / "spool").iterdir())
    assert len(files) == 1, files
    seqs = [json.loads(line)["seq"] for line in files[0].read_text().splitlines()]
    assert seqs == list(range(1, 2401))


def test_eight_writers_at_once_lose_no_row(tmp_path):
    path = tmp_path / "s.duckdb"
    store = open_store(path)
    run_id = store.start_run("kit", git_sha=None)
    writers, per_writer = 8, 2000
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), run_id, str(w), str(per_writer)])
        for w in range(writers)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0] * writers
    store.finish_run(run_id)
    with store.connect() as con:
        total, distinct = con.execute(
            "SELECT count(*), count(DISTINCT case_id) FROM case_results WHERE run_id = ?", [run_id]
        ).fetchone()
        checks = con.execute("SELECT count(*) FROM check_results WHERE run_id = ?", [run_id]).fetchone()[0]
        failed = con.execute("SELECT count(*) FROM case_results WHERE NOT passed").fetchone()[0]
    assert total == distinct == writers * per_writer
    assert checks == 2 * writers * per_writer
    assert failed == writers * per_writer // 4
    # The writers are gone, so their spools were removed once merged; only this (live) process's remains.
    assert list(store.spool.glob("*.jsonl")) == [store._writer.path]


KILLED = textwrap.dedent(
    """
    import os, sys, time
    from kit.result import CaseRun, Result
    from kit.store import open_store
    store = open_store(sys.argv[1])
    run_id = store.start_run("kit", git_sha=None)
    for i in range(50):
        store.record(run_id, CaseRun(f"c{i}", 0, (Result("finished", True),)))
    os.write(store._writer._fd, b'{"t": "case", "run_id": "' + run_id.encode() + b'", "case_id": "torn')
    print(run_id, flush=True)
    time.sleep(60)
    """
)


def test_sigkilled_run_keeps_finished_results_and_is_incomplete(tmp_path):
    path = tmp_path / "s.duckdb"
    proc = subprocess.Popen([sys.executable, "-c", KILLED, str(path)], stdout=subprocess.PIPE, text=True)
    run_id = proc.stdout.readline().strip()
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    store = open_store(path)
    with store.connect() as con:
        assert con.execute("SELECT status FROM runs WHERE run_id = ?", [run_id]).fetchone() == ("incomplete",)
        assert con.execute("SELECT count(*) FROM case_results WHERE run_id = ?", [run_id]).fetchone()[0] == 50


def test_a_live_unfinished_run_is_running_not_incomplete(tmp_path):
    store = open_store(tmp_path / "s.duckdb")
    run_id = store.start_run("kit", git_sha=None)
    store.record(run_id, _run("c1", 0, True))
    with store.connect() as con:
        assert con.execute("SELECT status FROM runs").fetchone() == ("running",)
    detached = store.start_run("promptfoo", git_sha=None, detached=True)
    with store.connect() as con:
        assert con.execute("SELECT status FROM runs WHERE run_id = ?", [detached]).fetchone() == ("running",)


def test_nested_connect_in_one_process_does_not_deadlock(tmp_path, monkeypatch):
    monkeypatch.setattr("kit.store.lock.DEFAULT_TIMEOUT_S", 2.0)
    store = open_store(tmp_path / "s.duckdb")
    run_id = store.start_run("kit", git_sha=None)
    store.record(run_id, _run("c1", 0, True))
    with store.connect() as outer:
        store.finish_run(run_id)  # merges: takes the lock this process already holds
        assert outer.execute("SELECT status FROM runs").fetchone() == ("complete",)


def test_two_threads_of_one_process_take_the_store_in_turn(tmp_path):
    """`make evals` stores the golden eval and the red team from two threads of one process: the second waits
    for the first to let go, as another process would. It once walked in, taken for a nested connect, and
    raised KeyError on leaving after the first had let go: `make evals`' promptfoo stage broke, exit 1."""
    import threading
    import time

    store = open_store(tmp_path / "s.duckdb")
    with store.connect():
        pass
    inside: list[str] = []
    overlaps: list[tuple[str, ...]] = []
    errors: list[str] = []
    go = threading.Barrier(2)

    def hold(name: str) -> None:
        go.wait()
        try:
            with store.connect() as con:
                inside.append(name)
                if len(inside) > 1:
                    overlaps.append(tuple(inside))
                con.execute("SELECT count(*) FROM runs").fetchone()
                time.sleep(0.2)
                inside.remove(name)
        except Exception as e:  # a thread's exception never reaches the test on its own
            errors.append(f"{name}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=hold, args=(n,)) for n in ("golden", "redteam")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert not overlaps, f"both threads held the store at once: {overlaps}"


CASE = """\
id: order
input: "Where is ORD-1?"
checks:
  - {type: called, tool: lookup_order}
  - {type: finished}
"""


def _outcomes(tmp_path: Path, monkeypatch) -> list:
    """Three runs as the runner hands them over: a trace whose `finished` check raised, an agent that
    raised, and a trace given without the CaseRun's figures (the rows derive them from its spans)."""
    import dataclasses

    from kit.case import load_suite
    from kit.checks import REGISTRY
    from kit.evaluate import error_run, evaluate
    from kit.runner import Invocation
    from kit.trace import parse_trace

    def boom(trace, *args, **kwargs):
        raise ValueError("first line\nsecond line")

    (tmp_path / "cases.yaml").write_text(CASE)
    (tmp_path / "invariants.yaml").write_text("{}\n")
    case = load_suite(tmp_path / "cases.yaml").cases[0]
    monkeypatch.setitem(REGISTRY, "finished", dataclasses.replace(REGISTRY["finished"], fn=boom))
    span = {"kind": "tool", "name": "lookup_order", "input": {"order_id": "ORD-1"}, "latency_ms": 7.5}
    data = {"case_id": "order", "attempt": 0, "final_output": "shipped", "finish_reason": "finish", "spans": [span]}
    judged = evaluate(parse_trace(data), case, run_id="r-same")
    bare = dataclasses.replace(judged, attempt=2, metrics={})
    return [
        Invocation(judged, data),
        Invocation(error_run("order", 1, "the agent raised RuntimeError: down", run_id="r-same"), None),
        Invocation(bare, {**data, "attempt": 2}),
    ]


def _normalized(rows: list[tuple], names: list[str]) -> list[tuple]:
    """JSON columns parsed: the same object may be spelled with other whitespace by another writer."""
    import json

    return [
        tuple(json.loads(v) if n == "trace" and v is not None else v for n, v in zip(names, row, strict=True))
        for row in rows
    ]


def _table(con, source: str) -> tuple[list[str], list[tuple]]:
    cur = con.execute(f"SELECT * FROM {source} WHERE run_id = 'r-same' ORDER BY ALL")
    names = [d[0] for d in cur.description]
    return names, _normalized(cur.fetchall(), names)


def test_shard_files_and_the_store_hold_identical_rows(tmp_path, monkeypatch):
    from kit.store.shards import merge_shards, rows, write_file

    outcomes = _outcomes(tmp_path, monkeypatch)
    store = open_store(tmp_path / "s.duckdb")
    store.start_run("kit", run_id="r-same", git_sha=None)
    store.record_many("r-same", [(o.case_run, o.trace) for o in outcomes])
    store.finish_run("r-same")
    run_row = {"run_id": "r-same", "source": "kit", "status": "complete", "meta": {"shard": "1/1"}}
    parquet = write_file(tmp_path / "shard", rows(run_row, outcomes))
    as_json = write_file(tmp_path / "shard.json", rows(run_row, outcomes))
    merged = open_store(tmp_path / "merged.duckdb")
    with store.connect() as con, merged.connect() as mcon:
        assert merge_shards(mcon, [as_json])["check_results"] == 5
        for table in ("case_results", "check_results"):
            names, stored = _table(con, table)
            from_parquet = _table(con, f"read_parquet('{parquet / (table + '.parquet')}')")
            assert from_parquet == (names, stored), table
            assert _table(mcon, table) == (names, stored), table
        _, cases = _table(con, "case_results")
        checks = con.execute(
            'SELECT attempt, "check", outcome, reason, traceback FROM check_results ORDER BY attempt, "check"'
        ).fetchall()
    # The figures of the bare run come from its trace, in every writer alike.
    assert [(c[2], c[4], c[7]) for c in cases] == [(0, 0, 7.5), (1, None, None), (2, 0, 7.5)]
    assert [row[:3] for row in checks] == [
        (0, "called:lookup_order", "pass"),
        (0, "finished", "error"),
        (1, "infrastructure", "error"),
        (2, "called:lookup_order", "pass"),
        (2, "finished", "error"),
    ]
    # A raised check keeps its stack trace beside its one-line reason.
    raised = checks[1]
    assert raised[3] == "check raised ValueError: first line"
    assert "in boom" in raised[4] and raised[4].rstrip().endswith("second line")
    assert checks[0][4] is None and checks[2][4] is None
