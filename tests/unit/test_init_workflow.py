"""The workflow `kit init` writes can run: it installs the kit from where this installation came from (a
local folder CI cannot reach is the one line to change, and `kit init` says so), installs the project as
it declares itself, names the secrets and variables the agent reads, replays the recorded model calls on
pull requests and records them weekly, and actionlint passes on it."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kit.cli import main
from kit.commands.init_ci import kit_source

ACTIONLINT = Path(sys.executable).parent / "actionlint"
AGENT = 'def run(text):\n    return {"final_output": "hi", "finish_reason": "finish", "spans": []}\n'


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "desk.py").write_text(AGENT)
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "desk"\ndependencies = ["anthropic>=0.40", "mcp"]\n')
    monkeypatch.chdir(tmp_path)
    for var in ("KIT_AGENT", "KIT_CASES", "KIT_STORE", "KIT_RUBRICS", "KIT_GATES"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


def _actionlint(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ACTIONLINT), "-no-color", str(path)], capture_output=True, text=True, timeout=60)


def test_the_workflow_installs_the_kit_the_project_and_names_the_agents_model_variables(repo, capsys):
    assert main(["init", "--agent", "desk:run", "--cases", "evals/cases.yaml"]) == 0
    out = capsys.readouterr().out
    path = repo / ".github/workflows/evals.yml"
    text = path.read_text()
    flow = yaml.safe_load(text)
    # This kit is an editable install of a local folder: CI cannot reach it. The one line to change is named
    # in the workflow, and kit init says so.
    assert 'KIT_SOURCE: "agent-eval-kit==0.1.0"' not in text  # a version no index has
    assert flow["env"]["KIT_SOURCE"] == ""
    assert "the local folder /" in text and "The one line to change" in text
    assert "kit init: note: .github/workflows/evals.yml: the kit was installed from the local folder" in out
    assert "set KIT_SOURCE there (the one line to change)" in out
    steps = flow["jobs"]["evals"]["steps"]
    kit_step = next(s for s in steps if s.get("name") == "Install the kit")
    assert 'if [ -z "$KIT_SOURCE" ]' in kit_step["run"] and 'pip install --quiet "$KIT_SOURCE"' in kit_step["run"]
    # The project as it declares itself: [project] dependencies, no build system.
    project_step = next(s for s in steps if s.get("name") == "Install the project")
    [line] = project_step["run"].strip().splitlines()
    argv = shlex.split(line)
    assert argv[:2] == [".venv/bin/python", "-c"]
    compile(argv[2], "install", "exec")
    assert 'tomllib.load(open("pyproject.toml", "rb"))["project"].get("dependencies", [])' in argv[2]
    # What the agent reads to reach its model: its SDK's key (a secret) and address (a variable, with the
    # SDK's default when unset); the judge's.
    env = flow["env"]
    assert env["ANTHROPIC_API_KEY"] == "${{ secrets.ANTHROPIC_API_KEY }}"
    assert env["ANTHROPIC_BASE_URL"] == "${{ vars.ANTHROPIC_BASE_URL || 'https://api.anthropic.com' }}"
    assert env["KIT_JUDGE_API_KEY"] == "${{ secrets.KIT_JUDGE_API_KEY }}"
    assert "OPENAI_API_KEY" not in env
    assert env["NO_PROXY"] == "127.0.0.1,localhost,::1,api.anthropic.com"  # .env closes every other host
    # Pull requests replay the recordings; the weekly run records, after a replayed run to compare with.
    assert env["KIT_RECORDINGS_MODE"] == "${{ github.event_name == 'schedule' && 'record' || 'replay' }}"
    assert any(s.get("env", {}).get("KIT_RECORDINGS_MODE") == "replay" for s in steps)
    assert any(s.get("run") == ".venv/bin/kit compare" for s in steps)
    lint = _actionlint(path)
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_a_requirements_file_and_an_openai_agent_and_actionlint_catches_a_broken_workflow(repo, tmp_path):
    (repo / "pyproject.toml").unlink()
    (repo / "requirements.txt").write_text("openai==1.50.0  # the desk's model\nrequests\n")
    assert main(["init", "--agent", "desk:run", "--cases", "evals/cases.yaml"]) == 0
    path = repo / ".github/workflows/evals.yml"
    flow = yaml.safe_load(path.read_text())
    project_step = next(s for s in flow["jobs"]["evals"]["steps"] if s.get("name") == "Install the project")
    assert project_step["run"].strip() == ".venv/bin/pip install --quiet -r requirements.txt"
    assert flow["env"]["OPENAI_BASE_URL"] == "${{ vars.OPENAI_BASE_URL || 'https://api.openai.com/v1' }}"
    assert _actionlint(path).returncode == 0
    broken = tmp_path / "broken.yml"  # the check can fail: an expression actionlint refuses
    broken.write_text(path.read_text().replace("${{ secrets.OPENAI_API_KEY }}", "${{ secrets.OPENAI_API_KEY "))
    assert _actionlint(broken).returncode != 0


@pytest.mark.parametrize(
    ("direct_url", "spec"),
    [
        (None, "agent-eval-kit==0.1.0"),
        (
            {"url": "https://github.com/acme/agent-eval-kit", "vcs_info": {"vcs": "git", "commit_id": "0123abc"}},
            "agent-eval-kit @ git+https://github.com/acme/agent-eval-kit@0123abc",
        ),
        (
            {"url": "https://files.example/agent_eval_kit-0.1.0.tar.gz", "archive_info": {}},
            "agent-eval-kit @ https://files.example/agent_eval_kit-0.1.0.tar.gz",
        ),
        ({"url": "file:///home/me/kit", "dir_info": {"editable": True}}, ""),
        ({"url": "file:///home/me/kit", "vcs_info": {"vcs": "git", "commit_id": "0123abc"}}, ""),
    ],
)
def test_where_ci_installs_the_kit_from(direct_url, spec):
    source = kit_source(direct_url, "0.1.0")
    assert source.spec == spec
    assert source.local == (spec == "")
