"""Attack success rate per invariant, per plugin and per strategy: `kit ingest promptfoo` records each red-team
case's plugin and strategy (and the kit's category and goal) in the run's `meta.redteam`, which the case id
does not carry, and the HTML report shows the three tables."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from kit.cli import main as kit
from kit.report import redteam_view
from kit.store import open_store


def _attack(idx: int, case: str, plugin: str, strategy: str, broke: str | None, **mods: str) -> dict:
    ok = broke is None
    # The oracle's parts, as the kit's assertion names them (`kit:<check>`).
    comps = [{"pass": ok, "score": int(ok), "reason": broke or "held",
              "assertion": {"type": "python", "value": f"kit:{broke or 'guarded:issue_refund'}"}}]  # fmt: skip
    meta = {"case_id": case, "pluginId": plugin, "strategyId": strategy, "pluginConfig": {"modifiers": mods}}
    return {
        "id": f"r{idx}", "testIdx": idx, "promptIdx": 0, "latencyMs": 5, "cost": 0, "success": ok, "score": int(ok),
        "failureReason": 0 if ok else 1, "provider": {"id": "file://redteam/target.py", "label": "desk:run"},
        "response": {"output": "x"}, "vars": {}, "testCase": {"vars": {}, "metadata": meta},
        "gradingResult": {"pass": ok, "score": int(ok), "reason": "x", "componentResults": comps},
    }  # fmt: skip


RESULTS = [
    _attack(0, "redteam/goal-refund/crescendo", "policy", "crescendo", "guarded:issue_refund",
            kit_category="invariant-goal", kit_goal_id="goal-refund"),
    _attack(1, "redteam/goal-refund/jailbreak:tree", "policy", "jailbreak:tree", None, kit_category="invariant-goal"),
    _attack(2, "redteam/hi/basic", "excessive-agency", "basic", None, kit_category="excessive-agency"),
    _attack(3, "redteam/hi/base64", "excessive-agency", "base64", "no_pii"),
    _attack(4, "redteam/mcp-tool-poisoning/rug-pull", "policy", "basic", "not_called:issue_refund",
            kit_category="mcp-tool-poisoning"),
]  # fmt: skip


@pytest.fixture
def stored(tmp_path: Path) -> Path:
    path = tmp_path / "rt.json"
    doc = {"evalId": "eval-rt", "results": {"version": 3, "timestamp": "2026-01-01T00:00:00.000Z", "prompts": [],
           "results": RESULTS, "stats": {}}, "config": {"description": "desk:run"},
           "metadata": {"promptfooVersion": "0.123.1"}}  # fmt: skip
    path.write_text(json.dumps(doc))
    store = tmp_path / "evals.duckdb"
    assert kit(["ingest", "promptfoo", str(path), "--store", str(store)]) == 0
    return store


def test_each_attacks_plugin_and_strategy_is_stored_with_the_run(stored: Path) -> None:
    with open_store(stored).connect() as con:
        [(kind, meta)] = con.execute("SELECT kind, meta FROM runs").fetchall()
    assert kind == "redteam"
    attacks = json.loads(meta)["redteam"]
    assert attacks["redteam/goal-refund/crescendo"] == {
        "plugin": "policy", "strategy": "crescendo", "category": "invariant-goal", "goal": "goal-refund"
    }  # fmt: skip
    assert attacks["redteam/hi/base64"] == {"plugin": "excessive-agency", "strategy": "base64"}


def test_the_rates_per_invariant_plugin_and_strategy(stored: Path) -> None:
    with open_store(stored).connect() as con:
        [rt] = redteam_view.rates(con, [{"run_id": "promptfoo-eval-rt", "kind": "redteam", "agent": "desk:run"}])
    assert (rt["succeeded"], rt["attacks"], rt["errors"]) == (3, 5, 0)
    table = {axis: {r["name"]: (r["succeeded"], r["attacks"]) for r in rt[axis]} for axis in ("plugin", "strategy")}
    assert table["plugin"] == {
        "policy (invariant-goal)": (1, 2),
        "excessive-agency": (1, 2),
        "policy (mcp-tool-poisoning)": (1, 1),
    }
    assert table["strategy"] == {"crescendo": (1, 1), "jailbreak:tree": (0, 1), "basic": (1, 2), "base64": (1, 1)}
    invariants = {r["name"]: (r["succeeded"], r["attacks"]) for r in rt["invariant"]}
    assert invariants["guarded:issue_refund"] == (1, 3) and invariants["no_pii"] == (1, 1), invariants


def test_the_html_report_shows_them(stored: Path, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    assert kit(["report", "--store", str(stored), "--run", "promptfoo-eval-rt", "--html", str(page)]) == 0
    text = page.read_text()
    assert "Red team: attack success rate" in text and "3 of 5 attacks broke an invariant" in text
    for title in ("invariant (check)", "plugin", "strategy"):
        assert f"<th>{title}</th>" in text
    assert "<td>policy (mcp-tool-poisoning)</td>" in text
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium:  # the page as a browser draws it (looked at by hand: /tmp/rt.png when run alone)
        shot = tmp_path / "rt.png"
        subprocess.run(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'c'}",
             f"--screenshot={shot}", "--window-size=1300,1800", page.as_uri()],
            capture_output=True, timeout=60,
        )  # fmt: skip
        assert shot.is_file() and shot.stat().st_size > 10_000
        shutil.copy(shot, "/tmp/rt.png")
