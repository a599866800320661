"""Opening a store that is not ours: a SQLite file is exit 2 with no attempt to fetch an extension (DuckDB
auto-installed `sqlite_scanner` from the network before), and a store written by a newer kit is exit 2
naming the version found and the one expected, from `kit report`, `kit gate` and `kit run`."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import duckdb
import pytest

from kit.cli import main as kit
from kit.result import CaseRun, Result
from kit.store import open_store
from kit.store.schema import LATEST

CASES = "id: greet\ninput: hello\nchecks: [{type: contains, text: hello}]\n"
AGENT = (
    "def agent(text, case):\n"
    "    return {'case_id': case.id, 'final_output': 'hello there', 'finish_reason': 'finish', 'spans': []}\n"
)
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "cases.yaml").write_text(CASES)
    (tmp_path / "store_agent.py").write_text(AGENT)
    (tmp_path / "home").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    # DuckDB installs extensions under $HOME/.duckdb: an attempt leaves that folder behind.
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KIT_STORE", str(tmp_path / "store.duckdb"))
    monkeypatch.delenv("KIT_RUN_ID", raising=False)
    return tmp_path


def _sqlite_store(path: Path) -> None:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE runs (run_id TEXT)")
    con.commit()
    con.close()


@pytest.mark.parametrize(
    "argv",
    [
        ["report", "--store", "store.duckdb"],
        ["gate", "--store", "store.duckdb", "--config", "/dev/null"],
        ["run", "--cases", "cases.yaml", "--agent", "store_agent:agent", "-q"],
    ],
    ids=["report", "gate", "run"],
)
def test_a_sqlite_file_as_store_is_exit_2_and_fetches_nothing(project, capsys, argv):
    _sqlite_store(project / "store.duckdb")
    assert kit(argv) == 2
    err = capsys.readouterr().err
    assert "store.duckdb: " in err and "Traceback" not in err
    assert "not a readable DuckDB store: it is a SQLite database, not a DuckDB file" in err
    assert "download" not in err.lower() and "http" not in err.lower(), err
    assert not (project / "home" / ".duckdb").exists(), "DuckDB tried to install an extension"


def test_every_duckdb_connection_of_the_kit_goes_through_kit_duck():
    offenders = []
    for folder in ("kit", "providers", "redteam", "deepeval_metrics"):
        for py in (ROOT / folder).rglob("*.py"):
            if py.name == "duck.py":
                continue
            if re.search(r"duckdb\s*\.\s*connect\s*\(", py.read_text(encoding="utf-8")):
                offenders.append(str(py.relative_to(ROOT)))
    assert offenders == []


def test_kit_duck_turns_extension_loading_off_whatever_config_is_given():
    from kit import duck

    con = duck.connect(config={"autoload_known_extensions": True, "threads": 1})
    got = dict(
        con.execute(
            "SELECT name, value FROM duckdb_settings() WHERE name IN "
            "('autoinstall_known_extensions', 'autoload_known_extensions')"
        ).fetchall()
    )
    assert got == {"autoinstall_known_extensions": "false", "autoload_known_extensions": "false"}
    con.close()


def _future_store(path: Path, version: int) -> None:
    store = open_store(path)
    run_id = store.start_run("kit", git_sha=None)
    store.record(run_id, CaseRun("greet", 0, (Result("contains", True),)))
    store.finish_run(run_id)
    con = duckdb.connect(str(path))
    con.execute("INSERT INTO schema_version VALUES (?, now())", [version])
    con.close()


@pytest.mark.parametrize(
    "argv",
    [
        ["report", "--store", "store.duckdb"],
        ["gate", "--store", "store.duckdb", "--config", "/dev/null"],
        ["run", "--cases", "cases.yaml", "--agent", "store_agent:agent", "-q"],
    ],
    ids=["report", "gate", "run"],
)
def test_a_store_from_a_newer_kit_is_exit_2_naming_both_versions(project, capsys, argv):
    _future_store(project / "store.duckdb", LATEST + 5)
    capsys.readouterr()
    assert kit(argv) == 2
    out, err = capsys.readouterr()
    assert "store.duckdb: " in err and "Traceback" not in err
    assert f"store schema version {LATEST + 5} found, this kit expects version {LATEST} or older" in err
    assert " runs in " not in out  # kit run refuses before calling the agent, not after every run


def test_a_read_only_store_from_a_newer_kit_names_both_versions(project, capsys):
    _future_store(project / "store.duckdb", LATEST + 1)
    (project / "store.duckdb.lock").touch()
    (project / "store.duckdb.lock").chmod(0o444)
    project.chmod(0o555)
    try:
        assert kit(["report", "--store", "store.duckdb"]) == 2
    finally:
        project.chmod(0o755)
    err = capsys.readouterr().err
    assert f"store schema version {LATEST + 1} found, this kit expects version {LATEST} or older" in err
