"""`make evals`' own settings are checked before anything runs, and a bad one names itself: SHARDS that are not
there (or hold no shards), EVALS_OUT naming a file, BASELINE_STORE naming a file that is not a store or a store
a newer kit wrote. Each is exit 2 with one line, never a traceback, never the agent run in their place."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import duckdb
import pytest

from kit.pipeline.evals import main
from kit.result import CaseRun, Result
from kit.store import open_store
from kit.store.schema import LATEST

ROOT = Path(__file__).resolve().parents[2]


def _make_evals(tmp_path: Path, *variables: str) -> subprocess.CompletedProcess[str]:
    """`make evals VAR=...` as typed, on a scratch store. Only the lint stage is asked for (an older kit that
    ignored the variable would then pass in seconds, not run every stage)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KIT_")}
    env.update(KIT_STORE=str(tmp_path / "evals.duckdb"), KIT_MAKE_ONLY="lint")
    return subprocess.run(
        ["make", "--no-print-directory", "evals", *variables],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_make_evals_refuses_shards_that_are_not_there(tmp_path):
    missing = tmp_path / "no-such-shards"
    proc = _make_evals(tmp_path, f"SHARDS={missing}", f"EVALS_OUT={tmp_path / 'out'}")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"SHARDS={missing}: no such folder" in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    assert not (tmp_path / "evals.duckdb").exists()  # nothing ran, nothing was stored


@pytest.mark.parametrize("content", ["empty", "hidden only"])
def test_a_shards_folder_holding_no_shards_is_refused(tmp_path, capsys, content):
    shards = tmp_path / "shards"
    shards.mkdir()
    if content == "hidden only":
        (shards / ".DS_Store").write_text("")
    assert main(["--shards", str(shards), "--only", "lint", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"--shards={shards}: holds no shards" in err and "Traceback" not in err


def test_make_evals_refuses_an_output_folder_that_is_a_file(tmp_path):
    out = tmp_path / "out.txt"
    out.write_text("not a folder")
    proc = _make_evals(tmp_path, f"EVALS_OUT={out}")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"EVALS_OUT={out}: not a folder" in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    assert out.read_text() == "not a folder"


def test_an_output_folder_under_a_file_is_refused_naming_the_setting(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    assert main(["--only", "lint", "--out", str(tmp_path / "file" / "out")]) == 2
    err = capsys.readouterr().err
    assert "--out=" in err and "cannot make the folder" in err and "Traceback" not in err


def _future_store(path: Path, version: int) -> None:
    store = open_store(path)
    run_id = store.start_run("kit", git_sha=None, run_id="base-run")
    store.record(run_id, CaseRun("greet", 0, (Result("contains", True),)))
    store.finish_run(run_id)
    con = duckdb.connect(str(path))
    con.execute("INSERT INTO schema_version VALUES (?, now())", [version])
    con.close()


@pytest.fixture
def from_make(tmp_path, monkeypatch):
    """The pipeline as the Makefile starts it, on a scratch store and output folder."""
    for var in [v for v in os.environ if v.startswith("KIT_")]:
        monkeypatch.delenv(var)
    monkeypatch.setenv("KIT_STORE", str(tmp_path / "evals.duckdb"))
    monkeypatch.setenv("KIT_MAKE_EVALS_OUT", str(tmp_path / "out"))
    monkeypatch.setenv("KIT_MAKE_ONLY", "lint")
    return lambda: main(["--from-make"])


def test_a_baseline_store_that_is_not_a_store_is_refused_like_kit_report_refuses_it(
    tmp_path, capsys, from_make, monkeypatch
):
    base = tmp_path / "base.duckdb"
    base.write_text("this is not a store\n")
    monkeypatch.setenv("KIT_MAKE_BASELINE_STORE", str(base))
    assert from_make() == 2
    err = capsys.readouterr().err
    assert f"BASELINE_STORE={base}: " in err and "not a" in err and "Traceback" not in err
    assert not (tmp_path / "evals.duckdb").exists()


def test_a_baseline_store_of_a_newer_kit_is_refused_and_nothing_is_copied(tmp_path, capsys, from_make, monkeypatch):
    base = tmp_path / "base.duckdb"
    _future_store(base, LATEST + 3)
    monkeypatch.setenv("KIT_MAKE_BASELINE_STORE", str(base))
    assert from_make() == 2
    err = capsys.readouterr().err
    assert f"BASELINE_STORE={base}: " in err and "Traceback" not in err
    assert f"store schema version {LATEST + 3} found, this kit expects version {LATEST} or older" in err
    assert not (tmp_path / "evals.duckdb").exists()  # no run of it copied in


def test_a_baseline_store_that_is_not_there_is_said_not_an_error(tmp_path, capsys, from_make, monkeypatch):
    """CI's first run has no base branch store to download."""
    monkeypatch.setenv("KIT_MAKE_BASELINE_STORE", str(tmp_path / "absent.duckdb"))
    assert from_make() == 1  # lint alone writes no run ("no run reached the store"); it ran, nothing refused
    out = capsys.readouterr().out
    assert f"BASELINE_STORE={tmp_path / 'absent.duckdb'}: no such store" in out
    assert "lint            passed" in out


def test_a_store_of_a_newer_kit_is_refused_before_any_stage_writes(tmp_path, capsys, from_make):
    _future_store(tmp_path / "evals.duckdb", LATEST + 1)
    assert from_make() == 2
    err = capsys.readouterr().err
    assert f"store schema version {LATEST + 1} found" in err and "Traceback" not in err
