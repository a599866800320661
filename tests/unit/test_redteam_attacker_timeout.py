"""An attacker that never answers cannot hold the red team: the generated config bounds each attacker call by
the agent's timeout (Promptfoo 0.123.1's openai provider reads REQUEST_TIMEOUT_MS, from the config's `env`
first) and never retries it (the provider's `maxRetries`; by default 4 retries, 5 to 40 s apart)."""

from __future__ import annotations

import pytest
import yaml
from _redteam_repo import write_repo

from kit.doubles.attacker import ScriptedAttacker

DESK = 'def run(text, history):\n    return {"final_output": "no", "spans": []}\n'


def test_each_attacker_call_is_bounded_by_the_agent_timeout_and_not_retried(tmp_path, monkeypatch, capsys):
    from kit_promptfoo.redteam import config

    repo = write_repo(tmp_path, monkeypatch, "tdesk", DESK)
    out = repo / "gen" / "redteam.yaml"
    monkeypatch.setenv("KIT_REDTEAM_INVARIANTS", str(repo / "invariants.yaml"))
    monkeypatch.setenv("KIT_REDTEAM_CORPUS", "generic")
    monkeypatch.setenv("KIT_REDTEAM_ATTACKER", "openai:chat:a")
    monkeypatch.setenv("KIT_AGENT_TIMEOUT", "15")
    with ScriptedAttacker(["hi"]) as attacker:
        monkeypatch.setenv("KIT_REDTEAM_ATTACKER_BASE_URL", attacker.base_url)
        assert config.main(["--agent", "tdesk:run", "--out", str(out)]) == 0, capsys.readouterr().err
    built = yaml.safe_load(out.read_text().split("\n", 1)[1])
    assert built["env"]["REQUEST_TIMEOUT_MS"] == "15000"
    strategies = built["redteam"]["strategies"]
    adaptive = [s for s in strategies if isinstance(s, dict) and "redteamProvider" in (s.get("config") or {})]
    assert {s["id"] for s in adaptive} == {"crescendo", "jailbreak:tree"}, strategies
    for strategy in adaptive:  # every strategy's attacker, and crescendo's scorer when there is no judge
        assert strategy["config"]["redteamProvider"]["config"]["maxRetries"] == 0, strategy
    assert built["defaultTest"]["options"]["provider"]["config"]["maxRetries"] == 0


@pytest.fixture(autouse=True)
def _no_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("KIT_JUDGE_MODEL", "KIT_JUDGE_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
