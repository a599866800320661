"""The root promptfooconfig.yaml `kit init` writes adapts when [tool.kit.redteam] names an attacker, so `npx
promptfoo redteam run` as typed runs crescendo and jailbreak:tree aimed at every hard invariant (the red team's
case's and the suite's); without an attacker it stays static, and `kit init --check` names the difference."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kit import yamlio
from kit.cli import main
from kit.plan import current_plan
from kit_promptfoo.redteam import config

ATTACKER = '[tool.kit.redteam]\nattacker = "openai:chat:attacker"\nattacker_base_url = "http://127.0.0.1:9/v1"\n'
SUITE_INVARIANTS = {"accounts": [{"type": "not_called", "tool": "delete_account"}]}


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "desk.py").write_text("def run(text, history):\n    return []\n")
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals/invariants.yaml").write_text(yaml.safe_dump(SUITE_INVARIANTS))
    monkeypatch.chdir(tmp_path)
    for var in ("KIT_AGENT", "KIT_CASES", "KIT_STORE", "KIT_REDTEAM_CORPUS", "KIT_REDTEAM_ATTACKER", "KIT_PLAN"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


def _adaptive(cfg: dict) -> list[str]:
    return [
        s["id"]
        for s in cfg["redteam"]["strategies"]
        if isinstance(s, dict) and "redteamProvider" in (s.get("config") or {})
    ]


def test_without_an_attacker_the_root_red_team_is_static(repo: Path) -> None:
    assert main(["init", "--agent", "desk:run"]) == 0
    cfg = yamlio.safe_load((repo / "promptfooconfig.yaml").read_text())
    assert _adaptive(cfg) == [] and cfg["providers"][0]["id"] == "file://redteam/target.py"
    assert not any(".cjs" in e for e in cfg["extensions"])


def test_with_an_attacker_the_root_red_team_adapts_and_check_names_it(repo: Path, capsys) -> None:
    assert main(["init", "--agent", "desk:run"]) == 0
    pyproject = repo / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace("[tool.kit.redteam]\n", ATTACKER))
    capsys.readouterr()
    assert main(["init", "--check"]) == 1
    out = capsys.readouterr().out
    assert "redteam.plugins: changed; redteam.strategies: changed" in out, out
    (repo / "promptfooconfig.yaml").unlink()
    assert main(["init"]) == 0
    assert main(["init", "--check"]) == 0
    cfg = yamlio.safe_load((repo / "promptfooconfig.yaml").read_text())
    assert _adaptive(cfg) == ["crescendo", "jailbreak:tree"]
    [crescendo] = [s for s in cfg["redteam"]["strategies"] if isinstance(s, dict) and s["id"] == "crescendo"]
    attacker = {
        "id": "openai:chat:attacker",
        "config": {"apiBaseUrl": "http://127.0.0.1:9/v1", "apiKeyRequired": False, "maxRetries": 0},
    }
    assert crescendo["config"] == {"redteamProvider": attacker, "stateful": True, "maxTurns": 4, "maxBacktracks": 0}
    goals = [
        p["config"]["modifiers"]["kit_goal_id"]
        for p in cfg["redteam"]["plugins"]
        if p["config"]["modifiers"]["kit_category"] == "invariant-goal"
    ]
    # The red team's case's invariants and the suite's own (evals/invariants.yaml): one goal per check.
    assert "goal-accounts-not-called-delete-account" in goals and len(goals) == len(set(goals)) > 1
    assert cfg["providers"][0]["id"] == "file://redteam/target.py" and cfg["providers"][0]["config"]["workers"] == 1
    assert cfg["defaultTest"]["options"] == {"provider": attacker}  # no judge: the attacker scores crescendo
    assert cfg["extensions"][:3] == [
        "file://redteam/keep_providers.cjs:stash",
        "file://redteam/hooks.py:beforeAll",
        "file://redteam/keep_providers.cjs:restore",
    ]
    assert (repo / "redteam/keep_providers.cjs").is_file() and (repo / "redteam/conversation_assert.cjs").is_file()
    # make evals generates the same red team from it.
    out_cfg = repo / ".kit" / "promptfoo" / "redteam" / "promptfooconfig.yaml"
    built = config.build(out_cfg, current_plan(agent="desk:run"), root_config=repo / "promptfooconfig.yaml")
    assert built["redteam"]["plugins"] == cfg["redteam"]["plugins"]
    assert built["redteam"]["strategies"] == cfg["redteam"]["strategies"]


def test_an_attacker_budget_the_goals_exceed_is_refused_naming_it(repo: Path, capsys) -> None:
    (repo / "pyproject.toml").write_text(ATTACKER + "attacker_calls = 10\n")
    assert main(["init", "--agent", "desk:run"]) == 2
    err = capsys.readouterr().err
    assert "pyproject.toml: [tool.kit.redteam] attacker_calls = 10: this red team may make" in err, err


def test_the_red_team_guides_attacker_example_runs_as_written(repo: Path, capsys) -> None:
    import re

    guide = (Path(__file__).resolve().parents[2] / "docs" / "redteam.md").read_text()
    [block] = re.findall(r"```toml\n(\[tool\.kit\.redteam\]\nattacker = .*?)```", guide, re.S)
    assert main(["init", "--agent", "desk:run"]) == 0
    pyproject = repo / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace("[tool.kit.redteam]\n", block))
    (repo / "promptfooconfig.yaml").unlink()  # as the guide says: delete it and run `kit init` again
    assert main(["init"]) == 0, capsys.readouterr().err
    assert _adaptive(yamlio.safe_load((repo / "promptfooconfig.yaml").read_text())) == ["crescendo", "jailbreak:tree"]


def test_a_budget_problem_names_the_number_to_change() -> None:
    from kit.redteam import goals

    said = goals.budget_problem(3, ("crescendo", "jailbreak:tree"), 4, 200)
    assert said == (
        "[tool.kit.redteam] attacker_calls = 200: this red team may make 216 attacker calls (3 goals x crescendo, "
        "jailbreak:tree at max_turns 4): set attacker_calls = 216, or max_turns = 2"
    )
    assert goals.budget_problem(3, ("crescendo", "jailbreak:tree"), 4, 100).endswith("set attacker_calls = 216")
    assert goals.budget_problem(3, ("crescendo", "jailbreak:tree"), 4, 216) is None


def test_max_turns_true_is_refused_not_read_as_one(repo: Path, capsys) -> None:
    (repo / "pyproject.toml").write_text(ATTACKER + "max_turns = true\n")
    assert main(["init", "--agent", "desk:run"]) == 2
    err = capsys.readouterr().err
    assert "[tool.kit.redteam] max_turns: Value error, expected a whole number, got true" in err, err
