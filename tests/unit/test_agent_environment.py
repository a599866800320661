"""kit.offline.agent_environment: the agent's code gets the user's own proxies back, whoever set the dead proxy
that keeps Promptfoo's beacon offline (the kit's launcher, which saved the user's values, or the project's
`.env`); keys, CA bundles and every other variable stay as they are. The tools' runs are in
tests/e2e/test_agent_reaches_its_model.py."""

from __future__ import annotations

import json

from kit.offline import DEAD_PROXY, USER_ENV, agent_environment, dotenv_values, promptfoo_env


def test_the_launcher_saves_the_users_own_values_once(tmp_path) -> None:
    env = promptfoo_env(tmp_path, "python", {"HTTPS_PROXY": "http://corp:3128"})
    assert env["HTTPS_PROXY"] == DEAD_PROXY["HTTPS_PROXY"]
    saved = json.loads(env[USER_ENV])
    assert saved["HTTPS_PROXY"] == "http://corp:3128" and saved["NO_PROXY"] is None
    again = promptfoo_env(tmp_path, "python", env)  # a launch inside a launch keeps the first saving
    assert json.loads(again[USER_ENV]) == saved


def test_agent_environment_restores_the_users_values_or_drops_the_kits_dead_proxy() -> None:
    # The kit's launcher saved the user's own values: they come back, an unset one unset.
    env = {**DEAD_PROXY, USER_ENV: json.dumps({"HTTPS_PROXY": "http://corp:3128", "NO_PROXY": ".corp"})}
    changed = agent_environment(env)
    blank = {"HTTP_PROXY": "", "http_proxy": "", "https_proxy": ""}  # unset by the user: blank (see below)
    assert env == {"HTTPS_PROXY": "http://corp:3128", "NO_PROXY": ".corp", **blank, USER_ENV: env[USER_ENV]}
    assert changed["HTTP_PROXY"] == "" and changed["HTTPS_PROXY"] == "http://corp:3128"
    assert agent_environment(env) == {}  # nothing left to change: nothing written
    # The project's .env set it (no saved values): the dead proxy and the kit's NO_PROXY go; the rest stays.
    env = {k: v for k, v in dotenv_values().items()} | {"OPENAI_API_KEY": "sk-x", "SSL_CERT_FILE": "/ca.pem"}
    agent_environment(env)
    assert env["HTTPS_PROXY"] == env["HTTP_PROXY"] == "" and "NO_PROXY" not in env
    assert env["OPENAI_API_KEY"] == "sk-x" and env["SSL_CERT_FILE"] == "/ca.pem"
    # A user's own proxy beside the .env's dead one is kept, and so is NO_PROXY with it.
    env = {
        "HTTPS_PROXY": "http://corp:3128",
        "HTTP_PROXY": DEAD_PROXY["HTTP_PROXY"],
        "NO_PROXY": "127.0.0.1,localhost,::1",
    }
    agent_environment(env)
    assert env == {"HTTPS_PROXY": "http://corp:3128", "HTTP_PROXY": "", "https_proxy": "", "http_proxy": ""}


def test_a_framework_loading_the_projects_env_at_import_gets_no_proxy_back(tmp_path, monkeypatch) -> None:
    """smolagents and CrewAI call python-dotenv's load_dotenv() when imported: inside the agent's call, after the
    kit gave the agent its environment. The dead proxy the project's `.env` holds must not come back."""
    import os
    from urllib.request import getproxies

    from dotenv import load_dotenv

    monkeypatch.setattr(os, "environ", dict(os.environ))  # load_dotenv sets the .env's other variables too
    dotenv = tmp_path / ".env"
    dotenv.write_text("".join(f"{k}={v}\n" for k, v in dotenv_values().items()))
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "NO_PROXY", "no_proxy"):
        os.environ.pop(name, None)
    load_dotenv(dotenv)  # the tool (DeepEval, Promptfoo's provider) read the project's .env
    assert getproxies()["https"] == DEAD_PROXY["HTTPS_PROXY"]
    agent_environment()
    load_dotenv(dotenv)  # the framework, imported inside the call, reads it again
    assert "http" not in getproxies() and "https" not in getproxies()
    # A run that never read the .env (`kit run`, DeepEval's session): the framework's read is the first.
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "NO_PROXY", "no_proxy"):
        os.environ.pop(name, None)
    agent_environment()
    load_dotenv(dotenv)
    assert "http" not in getproxies() and "https" not in getproxies()
