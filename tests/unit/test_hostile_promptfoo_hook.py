"""Lone surrogates (text no UTF-8 can hold) in a Promptfoo eval: the afterAll store hook and `kit ingest
promptfoo` store every row, the bad text escaped, instead of crashing and storing none."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from test_ingest import PROMPTFOO_FILE

from kit.cli import main as kit
from kit.store import open_store

BAD = "caf\ud83d and \udc00 alone"  # a lone high and a lone low surrogate
GOOD_PAIR = "\U0001f600"  # an emoji: a valid pair once JSON-escaped, kept as it is


def _with_surrogates() -> dict:
    data = copy.deepcopy(PROMPTFOO_FILE)
    first = data["results"]["results"][0]
    first["vars"]["note"] = BAD
    first["testCase"]["vars"]["note"] = BAD
    first["response"]["output"] = f"Refund issued {BAD} {GOOD_PAIR}"
    first["gradingResult"]["componentResults"][1]["reason"] = BAD
    data["results"]["results"][1]["testCase"]["description"] = BAD
    return data


def _stored(store_path: Path) -> tuple[list[tuple], list[str]]:
    store = open_store(store_path)
    with store.connect() as con:
        cases = con.execute("SELECT case_id, attempt, outcome FROM case_results ORDER BY case_id, attempt").fetchall()
        reasons = [r[0] for r in con.execute('SELECT reason FROM check_results ORDER BY "check"').fetchall()]
        traces = [r[0] for r in con.execute("SELECT trace::VARCHAR FROM case_results").fetchall()]
    return cases, reasons + traces


def test_the_store_hook_stores_every_row_of_an_eval_with_lone_surrogates(tmp_path, monkeypatch):
    from kit_promptfoo.store_hook import afterAll

    data = _with_surrogates()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KIT_STORE", str(tmp_path / "evals.duckdb"))
    monkeypatch.setenv("KIT_PROMPTFOO_RESULTS", str(tmp_path / "out.json"))
    context = {"evalId": data["evalId"], "results": data["results"]["results"], "prompts": [], "config": data["config"]}
    afterAll(context)
    cases, texts = _stored(tmp_path / "evals.duckdb")
    assert cases == [("loop", 0, "error"), ("refund", 0, "pass"), ("refund", 1, "fail")]
    joined = "\n".join(t for t in texts if t)
    assert "\\ud83d" in joined and "\\udc00" in joined  # escaped, visible
    assert GOOD_PAIR in joined or "\\ud83d\\ude00" in joined.lower()


def test_kit_ingest_promptfoo_escapes_lone_surrogates(tmp_path, capsys):
    # As Promptfoo's `-o out.json` holds them: JSON escapes (Node's JSON.stringify escapes a lone surrogate).
    path = tmp_path / "out.json"
    path.write_text(json.dumps(_with_surrogates()))
    store = tmp_path / "evals.duckdb"
    assert kit(["ingest", "promptfoo", str(path), "--store", str(store)]) == 0, capsys.readouterr().err
    cases, texts = _stored(store)
    assert len(cases) == 3
    assert any("\\udc00" in t for t in texts if t)
