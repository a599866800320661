"""The store against values DuckDB refuses, bad spool lines, cut spools, broken store files, full disks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _oracle import llm

from kit.cli import main as kit
from kit.errors import KitInputError
from kit.result import CaseRun, Result
from kit.store import StoreError, open_store


def _ok(case_id: str, attempt: int = 0) -> CaseRun:
    return CaseRun(case_id, attempt, (Result("budget", True, "within budget"),))


def _rows(store, sql: str, params=None):
    with store.connect() as con:
        return con.execute(sql, params or []).fetchall()


def test_a_lone_surrogate_in_an_answer_is_stored_and_never_wedges_the_store(tmp_path):
    store = open_store(tmp_path / "s.duckdb")
    run_id = store.start_run("kit", git_sha=None)
    trace = {"case_id": "c1", "final_output": "refund \ud800 done", "spans": [llm()]}
    store.record(run_id, _ok("c1"), trace)
    store.finish_run(run_id)
    (answer,) = _rows(store, "SELECT trace->>'final_output' FROM case_results")[0]
    assert answer == "refund \ufffd done"
    later = store.start_run("kit", git_sha=None)  # the store goes on taking runs
    store.record(later, _ok("c2"))
    store.finish_run(later)
    assert _rows(store, "SELECT count(*) FROM case_results")[0][0] == 2


def test_a_token_count_past_bigint_is_stored_as_unknown(tmp_path):
    store = open_store(tmp_path / "s.duckdb")
    run_id = store.start_run("kit", git_sha=None)
    trace = {"case_id": "c1", "final_output": "ok", "spans": [llm(tokens_in=10**19)]}
    store.record(run_id, _ok("c1"), trace)  # tokens derived from the trace: 10**19 + 20
    store.record(run_id, CaseRun("c2", 0, (), metrics={"tokens": 10**19, "steps": 2**40, "cost_usd": float("nan")}))
    store.finish_run(run_id)
    assert _rows(store, "SELECT case_id, tokens, steps, cost_usd FROM case_results ORDER BY case_id") == [
        ("c1", None, 1, 0.001),
        ("c2", None, None, None),
    ]


def test_a_bad_key_is_refused_before_it_reaches_the_journal(tmp_path):
    store = open_store(tmp_path / "s.duckdb")
    run_id = store.start_run("kit", git_sha=None)
    with pytest.raises(ValueError, match="attempt"):
        store.record(run_id, CaseRun("c1", "zero", ()))  # type: ignore[arg-type]
    store.finish_run(run_id)
    assert _rows(store, "SELECT status FROM runs") == [("complete",)]


def test_a_spool_line_with_a_bad_attempt_is_quarantined_and_its_run_gates_red(tmp_path, capsys):
    store = open_store(tmp_path / "s.duckdb")
    run_id = store.start_run("kit", git_sha=None)
    store.record(run_id, _ok("c1"))
    bad = {"t": "case", "run_id": run_id, "case_id": "c2", "attempt": "zero", "passed": True, "checks": []}
    os.write(store._writer._fd, json.dumps(bad).encode() + b"\n")
    store.record(run_id, _ok("c3"))
    store.finish_run(run_id)
    spool = store._writer.path
    err = capsys.readouterr().err
    assert f"{spool}: line 3: attempt: 'zero' is not a valid integer" in err
    assert _rows(store, "SELECT spool, line, run_id FROM quarantine") == [(spool.name, 3, run_id)]
    assert _rows(store, "SELECT case_id, outcome FROM case_results ORDER BY case_id") == [
        ("c1", "pass"),
        ("c2", "error"),  # the lost result is an error of its run, not a hole
        ("c3", "pass"),
    ]
    assert _rows(store, "SELECT status FROM runs") == [("incomplete",)]
    # and every later command still reads the store
    later = store.start_run("kit", git_sha=None)
    store.record(later, _ok("c1"))
    store.finish_run(later)
    assert _rows(store, "SELECT count(*) FROM runs WHERE status = 'complete'") == [(1,)]
    assert kit(["gate", "--store", str(store.path), "--run", run_id, "--config", os.devnull]) == 1


@pytest.mark.parametrize(
    "line",
    [
        b'{"t": "case", "run_id": "r", "case_id": "c", "attempt": 0, "tokens": 10000000000000000000}',
        b'{"t": "check", "run_id": "r", "case_id": "c", "attempt": 0, "score": "high", "outcome": "pass"}',
        b'{"t": "case", "run_id": "r", "case_id": "c", "attempt": 1e12}',
        b'{"t": "case", "run_id": "r", "case_id": "c", "attempt": 0, "checks": [{"outcome": "pass", "score": []}]}',
        b'{"t": "case", "run_id": "r", "case_id": "c", "attempt": 0, "error": "\\ud800"}',
        b'{"t": "case", "case_id": "c", "attempt": 0}',
        b'{"t": "run", "run_id": "r"}',
        b"[1, 2]",
        b'"\\ud800"',
        b"[" * 100_000,
    ],
)
def test_no_spool_line_wedges_the_store(tmp_path, line):
    store = open_store(tmp_path / "s.duckdb")
    run_id = store.start_run("kit", git_sha=None)
    store.record(run_id, _ok("c1"))
    os.write(store._writer._fd, line + b"\n")
    store.record(run_id, _ok("c2"))
    store.finish_run(run_id)
    assert _rows(store, "SELECT case_id FROM case_results WHERE run_id = ? ORDER BY case_id", [run_id]) == [
        ("c1",),
        ("c2",),
    ]


def test_a_spool_cut_under_its_live_writer_is_reported_and_its_run_is_incomplete(tmp_path, capsys):
    store = open_store(tmp_path / "s.duckdb")
    run_id = store.start_run("kit", git_sha=None)
    store.record(run_id, _ok("c1"))
    store.merge()
    store.record(run_id, _ok("c2"))  # written, not yet merged...
    store.record(run_id, _ok("c3"))
    os.truncate(store._writer.path, 0)  # ...and cut away under the live writer
    store.record(run_id, _ok("c4"))
    store.finish_run(run_id)
    err = capsys.readouterr().err
    assert "under its writer: 2 record(s) lost (line numbers 3 to 4)" in err
    assert _rows(store, "SELECT case_id FROM case_results ORDER BY case_id") == [("c1",), ("c4",)]
    assert _rows(store, "SELECT status FROM runs") == [("incomplete",)]
    (problem,) = _rows(store, "SELECT problem FROM quarantine WHERE run_id = ?", [run_id])[0]
    assert "2 record(s) lost" in problem


def test_a_spool_cut_to_a_shorter_length_is_noticed(tmp_path, capsys):
    store = open_store(tmp_path / "s.duckdb")
    run_id = store.start_run("kit", git_sha=None)
    for i in range(3):
        store.record(run_id, _ok(f"c{i}"))
    store.merge()
    os.truncate(store._writer.path, 10)
    store.finish_run(run_id)
    assert "cut from" in capsys.readouterr().err
    # the finish record was cut too: the run is not complete, and its loss is on record
    assert _rows(store, "SELECT status FROM runs") != [("complete",)]
    assert _rows(store, "SELECT count(*) FROM quarantine WHERE run_id = ?", [run_id]) == [(1,)]


def test_ingest_checks_every_value_before_writing(tmp_path):
    store = open_store(tmp_path / "s.duckdb")
    pf = {
        "evalId": "e1",
        "results": {
            "results": [
                {
                    "success": True,
                    "vars": {"case_id": "c1"},
                    "gradingResult": {"componentResults": [{"pass": True, "score": "high", "assertion": {}}]},
                }
            ]
        },
    }
    (tmp_path / "pf.json").write_text(json.dumps(pf))
    from kit.store.ingest import deepeval, promptfoo

    done = promptfoo.ingest(store, tmp_path / "pf.json")
    assert _rows(store, "SELECT score FROM check_results WHERE run_id = ?", done.run_ids) == [(None,)]

    pf["results"]["results"][0]["gradingResult"]["componentResults"] = ["oops"]
    (tmp_path / "bad.json").write_text(json.dumps(pf))
    with pytest.raises(KitInputError, match=r"bad.json: .*componentResults.0: expected an object"):
        promptfoo.ingest(store, tmp_path / "bad.json", force=True)

    for attempt in ("two", 1e12, -1, True):
        de = {"testCases": [{"name": "c1", "metadata": {"attempt": attempt}, "success": True}]}
        (tmp_path / "de.json").write_text(json.dumps(de))
        with pytest.raises(KitInputError, match=r"de.json: test case 'c1': attempt .* is not a whole number"):
            deepeval.ingest(store, tmp_path / "de.json")
    assert _rows(store, "SELECT count(*) FROM runs") == [(1,)]  # nothing half-ingested


def test_ingest_of_a_bad_file_is_exit_2_naming_it(tmp_path, capsys):
    de = tmp_path / "de.json"
    de.write_text(json.dumps({"testCases": [{"name": "c1", "metadata": {"attempt": "two"}}]}))
    pf = tmp_path / "pf.json"
    pf.write_text(json.dumps({"results": {"results": [{"gradingResult": {"componentResults": ["oops"]}}]}}))
    store = str(tmp_path / "s.duckdb")
    assert kit(["ingest", "deepeval", str(de), "--store", store, "--git-sha", "none"]) == 2
    assert kit(["ingest", "promptfoo", str(pf), "--store", store, "--git-sha", "none"]) == 2
    err = capsys.readouterr().err
    assert f"{de}: test case 'c1': attempt 'two'" in err and f"{pf}: not a Promptfoo output file" in err


def test_a_store_path_that_is_a_folder_or_a_cut_file_is_exit_2(tmp_path, capsys):
    good = open_store(tmp_path / "good.duckdb")
    good.finish_run(good.start_run("kit", git_sha=None))
    cut = tmp_path / "cut.duckdb"
    cut.write_bytes(good.path.read_bytes()[:5000])
    folder = tmp_path / "folder.duckdb"
    folder.mkdir()
    for path, why in ((cut, "not a readable DuckDB store"), (folder, "is a folder")):
        with pytest.raises(StoreError, match=why), open_store(path).connect():
            pass
        for command in (["report"], ["gate"], ["compare", "previous"], ["run", "--merge", str(good.path)]):
            assert kit([*command, "--store", str(path)]) == 2, command
            assert f"{path}: {why}" in capsys.readouterr().err


def test_gate_with_a_missing_policy_file_is_exit_2(tmp_path, capsys):
    store = open_store(tmp_path / "s.duckdb")
    store.finish_run(store.start_run("kit", git_sha=None))
    assert kit(["gate", "--store", str(store.path), "--config", str(tmp_path / "missing.yaml")]) == 2
    assert "missing.yaml: no such gate policy file" in capsys.readouterr().err


ROOT_ONLY = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root and unshare for a private mount"
)
RECORD = textwrap.dedent(
    """
    import sys
    from kit.result import CaseRun, Result
    from kit.store import open_store
    store = open_store(sys.argv[1])
    run_id = store.start_run("kit", git_sha=None)
    store.record(run_id, CaseRun("c1", 0, (Result("budget", True),)))
    store.finish_run(run_id)
    """
)


def _in_private_mount(script: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )


@ROOT_ONLY
def test_a_read_only_store_can_be_read(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    (tmp_path / "record.py").write_text(RECORD)
    subprocess.run([sys.executable, "record.py", "ro/s.duckdb"], cwd=tmp_path, check=True)
    (folder / "s.duckdb.lock").unlink()
    kit_bin = f"{sys.executable} -m kit.cli"
    out = _in_private_mount(
        f"mount --bind ro ro && mount -o remount,bind,ro ro && {kit_bin} report --store ro/s.duckdb && "
        f"{kit_bin} gate --store ro/s.duckdb --config {os.devnull}",
        tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert "gate passed" in out.stdout and "Traceback" not in out.stderr
    assert not (folder / "s.duckdb.lock").exists()


@ROOT_ONLY
def test_gate_on_a_full_disk_is_exit_2_not_a_pass_on_the_previous_run(tmp_path):
    (tmp_path / "record.py").write_text(RECORD)
    (tmp_path / "disk").mkdir()
    kit_bin = f"{sys.executable} -m kit.cli"
    out = _in_private_mount(
        "mount -t tmpfs -o size=6m tmpfs disk && "
        f"{sys.executable} record.py disk/s.duckdb && "
        f"{kit_bin} gate --store disk/s.duckdb --config {os.devnull} && "
        "(dd if=/dev/zero of=disk/filler bs=64k 2>/dev/null; true) && "
        f"{kit_bin} gate --store disk/s.duckdb --config {os.devnull}",
        tmp_path,
    )
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert out.stdout.count("gate passed") == 1  # before the disk filled, not after
    assert "disk/s.duckdb: cannot be written (No space left on device)" in out.stderr
