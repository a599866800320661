"""Cost from tokens: a model call with tokens and no cost of its own is priced from genai-prices (or the
settings' `[tool.kit.prices]`, which win); an unknown model's cost is not recorded (None) in the trace, the
store and the summary, never a 0.0 that reads like a measurement."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kit.case import load_suite
from kit.pricing import call_cost, model_price, priced
from kit.runner import invoke
from kit.runner.agents import load_agent
from kit.store import open_store
from kit.store import queries as q

MODULE = "tests.unit.test_pricing"


def _reply(model: str) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": "hello",
            "model": model,
            "usage": {"prompt_tokens": 1000, "completion_tokens": 500},
        },
    ]


def known_model(text: str) -> list[dict[str, Any]]:
    return _reply("gpt-4o-2024-08-06")


def unknown_model(text: str) -> list[dict[str, Any]]:
    return _reply("desk-model-7")


def partly_priced(text: str) -> list[dict[str, Any]]:
    """A priced call, then 2.5 M tokens of a model nobody has a price for."""
    unknown = {**_reply("desk-model-7")[1], "usage": {"prompt_tokens": 2_500_000, "completion_tokens": 0}}
    return [*_reply("gpt-4o-mini-2024-07-18"), {**unknown, "content": "hello again"}]


def own_cost(text: str) -> dict[str, Any]:
    span = {"kind": "llm", "name": "gpt-4o-2024-08-06", "tokens_in": 1000, "tokens_out": 500, "cost_usd": 0.5}
    return {"final_output": "hello", "spans": [span]}


def test_a_known_models_price_comes_from_genai_prices() -> None:
    per_in, per_out, source = model_price("gpt-4o-2024-08-06", {})
    assert (per_in, per_out, source) == (2.5, 10.0, "genai-prices")
    assert call_cost("gpt-4o-2024-08-06", 1000, 500, {}) == (pytest.approx(0.0075), "genai-prices")
    assert model_price("desk-model-7", {}) is None


def test_the_settings_price_wins_and_prices_an_unknown_model() -> None:
    table = {"desk-model-7": (1.0, 2.0), "gpt-4o-2024-08-06": (0.0, 0.0)}
    assert call_cost("desk-model-7", 1000, 500, table) == (pytest.approx(0.002), "settings")
    assert call_cost("gpt-4o-2024-08-06", 1000, 500, table) == (0.0, "settings")


def test_priced_keeps_a_given_cost_and_drops_a_placeholder() -> None:
    data = {
        "model": "gpt-4o-2024-08-06",
        "spans": [
            {"kind": "llm", "tokens_in": 1000, "tokens_out": 0},  # the trace's model
            {"kind": "llm", "name": "x", "tokens_in": 10, "tokens_out": 0, "cost_usd": 0.25},  # its own: kept
            {
                "kind": "llm",
                "name": "desk-model-7",
                "tokens_in": 10,
                "tokens_out": 5,
                "cost_usd": 0,
                "cost_known": False,
            },
            {"kind": "llm", "name": "gpt-4o-2024-08-06"},  # no tokens: nothing to price
        ],
    }
    spans = priced(data, {})["spans"]
    assert spans[0]["cost_usd"] == pytest.approx(0.0025) and spans[0]["cost_source"] == "genai-prices"
    assert spans[1]["cost_usd"] == 0.25 and "cost_source" not in spans[1]
    assert "cost_usd" not in spans[2]
    assert "cost_usd" not in spans[3]


def test_pyproject_prices_reach_the_runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.kit.prices]\n"desk-model-7" = "1.0, 2.0"\n')
    monkeypatch.chdir(tmp_path)
    from kit.pricing import _overrides

    assert dict(_overrides()) == {"desk-model-7": (1.0, 2.0)}


def _case(tmp_path: Path) -> Any:
    f = tmp_path / "cases.yaml"
    f.write_text("id: c\ninput: hi\nchecks:\n  - {type: contains, text: hello}\n")
    return load_suite(f).cases[0]


def test_a_run_of_a_known_model_has_a_cost_and_an_unknown_one_says_not_recorded(tmp_path: Path) -> None:
    case = _case(tmp_path)
    store = open_store(tmp_path / "store.duckdb")
    costs = {}
    for name in ("known_model", "unknown_model", "own_cost"):
        inv = invoke(load_agent(f"{MODULE}:{name}"), case, 0, timeout=10)
        assert inv.case_run.passed, inv.case_run.error
        run_id = store.start_run("kit", agent=name)
        store.record(run_id, inv.case_run, inv.trace)
        store.finish_run(run_id)
        with store.connect() as con:
            [row] = q.run_costs(con, [run_id])
            stored = con.execute("SELECT cost_usd FROM case_results WHERE run_id = ?", [run_id]).fetchone()[0]
        costs[name] = (row["cost_usd"], stored)
    assert costs["known_model"] == (pytest.approx(0.0075), pytest.approx(0.0075))
    assert costs["unknown_model"] == (None, None)
    assert costs["own_cost"] == (pytest.approx(0.5), pytest.approx(0.5))


def test_one_unpriced_call_leaves_the_run_without_a_cost_and_a_cost_budget_an_error(tmp_path: Path) -> None:
    f = tmp_path / "cases.yaml"
    f.write_text("id: c\ninput: hi\nchecks:\n  - {type: budget, cost_usd: 0.01}\n")
    [case] = load_suite(f).cases
    inv = invoke(load_agent(f"{MODULE}:partly_priced"), case, 0, timeout=10)
    priced_spans = [s for s in inv.trace["spans"] if s.get("cost_usd")]
    assert len(priced_spans) == 1  # the priced call kept its price: the sum alone would pass the budget
    assert not inv.case_run.passed and inv.case_run.outcome == "error", inv.case_run
    assert "cost_usd not recorded" in str(inv.case_run.error or inv.case_run.results) and "desk-model-7" in str(
        inv.case_run.error or inv.case_run.results
    )
    from kit.store.rows import metrics

    assert metrics(inv.case_run, inv.trace)["cost_usd"] is None  # the store's row: not recorded, never the sum
