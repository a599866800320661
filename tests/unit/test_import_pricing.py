"""`kit import` prices model calls as live runs are priced (kit.pricing): a known model's tokens get its
price (genai-prices, or `[tool.kit.prices]`, which wins), an unknown model's calls keep no cost, and a cost
the recording gives is kept as given."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kit.cli import main


def _conversation(model: str) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": "hello",
            "model": model,
            "usage": {"prompt_tokens": 1000, "completion_tokens": 500},
        },
    ]


def _llm_spans(tmp_path: Path, model: str) -> list[dict[str, Any]]:
    src = tmp_path / f"{model}.json"
    src.write_text(json.dumps(_conversation(model)))
    out = tmp_path / f"{model}.trace.json"
    assert main(["import", str(src), "--case-id", "c", "-o", str(out)]) == 0
    return [s for s in json.loads(out.read_text())["spans"] if s["kind"] == "llm"]


def test_imported_model_calls_are_priced_by_their_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no pyproject here: genai-prices alone
    [known] = _llm_spans(tmp_path, "gpt-4o-2024-08-06")
    assert known["cost_usd"] == pytest.approx(0.0075) and known["cost_source"] == "genai-prices"
    [unknown] = _llm_spans(tmp_path, "desk-model-7")
    assert unknown["tokens_in"] == 1000 and unknown.get("cost_usd") is None  # not recorded, never 0


def test_the_projects_prices_win_on_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.kit.prices]\n"desk-model-7" = "1.0, 2.0"\n')
    monkeypatch.chdir(tmp_path)
    [span] = _llm_spans(tmp_path, "desk-model-7")
    assert span["cost_usd"] == pytest.approx(0.002) and span["cost_source"] == "settings"


def test_import_refuses_bad_settings_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A price the settings cannot read is the project's mistake: never priced at genai-prices' rate instead.
    (tmp_path / "pyproject.toml").write_text('[tool.kit.prices]\n"gpt-4o-2024-08-06" = "cheap"\n')
    monkeypatch.chdir(tmp_path)
    src = tmp_path / "run.json"
    src.write_text(json.dumps(_conversation("gpt-4o-2024-08-06")))
    assert main(["import", str(src), "--case-id", "c", "-o", str(tmp_path / "out.json")]) == 2
    assert "prices" in capsys.readouterr().err and not (tmp_path / "out.json").exists()
