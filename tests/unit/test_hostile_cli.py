"""Paths that cannot be written are exit 2 naming them, never a traceback."""

from __future__ import annotations

from pathlib import Path

from kit.cli import main as kit
from kit.result import CaseRun, Result
from kit.store import open_store

TRACE = Path(__file__).resolve().parents[2] / "examples" / "traces" / "order-status.openai.json"


def test_import_with_output_at_a_folder_is_exit_2(tmp_path, capsys):
    assert kit(["import", str(TRACE), "-o", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"kit import: {tmp_path}: Is a directory" in err and "Traceback" not in err


def test_report_html_at_a_folder_is_exit_2(tmp_path, capsys):
    store = open_store(tmp_path / "s.duckdb")
    run_id = store.start_run("kit", git_sha=None)
    store.record(run_id, CaseRun("c1", 0, (Result("budget", True),)))
    store.finish_run(run_id)
    out = tmp_path / "page"
    out.mkdir()
    assert kit(["report", "--store", str(store.path), "--html", str(out)]) == 2
    assert f"kit report: {out}: Is a directory" in capsys.readouterr().err
