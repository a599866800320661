"""`kit run` under faults: SIGKILL keeps finished results, workers die with their parent, a suite with a
broken case file gates red, bad numbers and bad shard files are exit 2 naming them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _procs import wait_for

from kit.cli import main as kit
from kit.store import open_store

CASES = """\
id: greet
input: "hello"
checks: [{type: contains, text: hello}]
"""

AGENT = """\
import os, time
calls = 0

def agent(text, case):
    global calls
    calls += 1
    if calls > int(os.environ.get("HANG_AFTER", "1000000")):
        open("hung", "w").write(str(os.getpid()))
        time.sleep(3600)
    return {"case_id": case.id, "final_output": "hello there", "finish_reason": "finish", "spans": []}
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "cases.yaml").write_text(CASES)
    (tmp_path / "hostile_agent.py").write_text(AGENT)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KIT_STORE", str(tmp_path / "store.duckdb"))
    monkeypatch.delenv("KIT_RUN_ID", raising=False)
    return tmp_path


def _start(project: Path, *args: str, hang_after: int) -> subprocess.Popen[bytes]:
    path = os.pathsep.join(p for p in (str(project), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "HANG_AFTER": str(hang_after), "PYTHONPATH": path}
    argv = [sys.executable, "-m", "kit.cli", "run", "--cases", "cases.yaml", "--agent", "hostile_agent:agent", "-q"]
    return subprocess.Popen([*argv, *args], cwd=project, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _wait_for(path: Path, proc: subprocess.Popen[bytes], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def _spooled_results(project: Path) -> int:
    """The results the run's writer has handed to the kernel (its spool's `case` lines)."""
    spool = project / "store.duckdb.spool"
    return sum(line.startswith('{"t":"case",') for f in spool.glob("*.jsonl") for line in f.read_text().splitlines())


def test_sigkill_keeps_every_finished_result(project):
    proc = _start(project, "--runs", "50", "--pool", "serial", "--timeout", "3600", hang_after=40)
    _wait_for(project / "hung", proc)  # 40 results finished, the 41st run hangs
    # They are written while it hangs (within a quarter of a second; on a loaded machine, later).
    wait_for(lambda: _spooled_results(project) >= 40, 30)
    spooled = _spooled_results(project)
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    assert spooled == 40, proc.stderr.read().decode() if proc.stderr else ""
    with open_store(project / "store.duckdb").connect() as con:
        assert con.execute("SELECT count(*) FROM case_results").fetchone() == (40,)
        assert con.execute("SELECT status FROM runs").fetchall() == [("incomplete",)]


def _children(pid: int) -> set[int]:
    found = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found |= {int(c) for c in (task / "children").read_text().split()}
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads children from /proc (Linux)")
def test_workers_die_with_a_killed_run(project):
    proc = _start(project, "--runs", "4", "--pool", "process", "--workers", "2", "--timeout", "3600", hang_after=0)
    _wait_for(project / "hung", proc)
    deadline = time.monotonic() + 30
    while len(workers := _children(proc.pid)) < 2:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    deadline = time.monotonic() + 5
    while any(_alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [w for w in workers if _alive(w)]
    for w in left:  # never leave them behind, even when the test fails
        os.kill(w, signal.SIGKILL)
    assert not left, f"workers {left} outlived their killed parent"


def test_a_suite_with_a_broken_case_file_gates_red(project, capsys):
    (project / "cases").mkdir()
    (project / "cases" / "good.yaml").write_text(CASES)
    (project / "cases" / "broken.yaml").write_text("id: refund\ninput: hi\nchecks: [{type: no_such_check}]\n")
    assert kit(["run", "--cases", "cases", "--agent", "hostile_agent:agent", "-q"]) == 2
    err = capsys.readouterr().err
    assert "broken.yaml" in err
    assert kit(["gate", "--config", os.devnull]) == 1
    err = capsys.readouterr().err
    assert "gate FAILED" in err and "refund" in err and "did not load" in err
    with open_store(project / "store.duckdb").connect() as con:
        assert con.execute("SELECT status FROM runs").fetchall() == [("incomplete",)]


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0"])
def test_a_timeout_that_is_not_a_positive_number_is_bad_input(project, capsys, value):
    assert kit(["run", "--cases", "cases.yaml", "--agent", "hostile_agent:agent", "-q", f"--timeout={value}"]) == 2
    err = capsys.readouterr().err
    said = ("must be a positive number", "greater than 0", "finite number")
    assert "timeout" in err and any(words in err for words in said), err
    assert not (project / "store.duckdb").exists()  # refused before any run


def test_merging_a_garbage_shard_is_exit_2_naming_it(project, capsys):
    shard = project / "shard"
    shard.mkdir()
    for table in ("runs", "case_results", "check_results"):
        (shard / f"{table}.parquet").write_bytes(b"PAR1 this is not parquet PAR1")
    (project / "shard.json").write_text('{"runs": [{"run_id": 5, "started_at": "yesterday"}]}')
    for bad in (shard, project / "shard.json"):
        assert kit(["run", "--merge", str(bad)]) == 2
        err = capsys.readouterr().err
        assert f"kit run: {bad}: " in err and "Traceback" not in err


def test_a_bad_record_in_the_store_never_sends_later_runs_to_files(project, capsys):
    store = open_store(project / "store.duckdb")
    run_id = store.start_run("kit", git_sha=None)
    bad = {"t": "case", "run_id": run_id, "case_id": "x", "attempt": "zero"}
    store._writer.write_many([])  # opens this process's spool
    os.write(store._writer._open(), (json.dumps(bad) + "\n").encode())
    assert kit(["run", "--cases", "cases.yaml", "--agent", "hostile_agent:agent", "-q"]) == 0
    assert "store unavailable" not in capsys.readouterr().err
    assert not (project / ".kit").exists()  # nothing written to the working directory
    with store.connect() as con:
        assert con.execute("SELECT count(*) FROM case_results WHERE case_id = 'greet'").fetchone() == (1,)
        assert con.execute("SELECT count(*) FROM quarantine").fetchone() == (1,)


def test_a_run_into_a_store_that_is_not_duckdb_is_exit_2(project, capsys):
    (project / "store.duckdb").write_bytes(b"not a database at all" * 100)
    assert kit(["run", "--cases", "cases.yaml", "--agent", "hostile_agent:agent", "-q"]) == 2
    assert f"{project / 'store.duckdb'}: not a readable DuckDB store" in capsys.readouterr().err
