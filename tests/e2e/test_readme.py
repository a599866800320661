"""Every command in README.md runs, in order, in a copy of the repository, and exits as the README says
(`# exits N` after a command; 0 otherwise). `make test` is the command that runs this very test, so it is
checked against .ci/run instead of being run again."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def readme_commands() -> list[tuple[str, int]]:
    commands = []
    for block in re.findall(r"```console\n(.*?)```", README, re.S):
        for line in block.splitlines():
            if not line.startswith("$ "):
                continue
            cmd, _, comment = line[2:].partition("  #")
            m = re.search(r"exits (\d+)", comment)
            commands.append((cmd.strip(), int(m.group(1)) if m else 0))
    return commands


def test_readme_names_the_two_commands_and_ci_runs_the_test_command():
    cmds = [c for c, _ in readme_commands()]
    assert "make evals" in cmds and "make test" in cmds
    assert re.search(r"^make test$", (ROOT / ".ci/run").read_text(), re.M)


def copy_repo(dest: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in files.decode().split("\0"):
        if name and (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)  # keeps mtimes, so make sees its stamps up to date
    for installed in (".venv", "node_modules"):
        if (ROOT / installed).exists():
            (dest / installed).symlink_to(ROOT / installed)


@pytest.mark.skipif(not (ROOT / ".venv").exists(), reason="needs the project's .venv (make install)")
def test_every_readme_command_runs_as_documented(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    copy_repo(repo)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KIT_", "PYTEST", "VARIANT"))}
    failures = []
    ran = 0
    for cmd, want in readme_commands():
        if cmd.startswith("make test"):
            continue  # this test is part of `make test`; CI runs it (checked above)
        proc = subprocess.run(["bash", "-c", cmd], cwd=repo, env=env, capture_output=True, text=True, timeout=900)
        ran += 1
        if proc.returncode != want:
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-8:]
            failures.append(f"{cmd!r} exited {proc.returncode}, README says {want}:\n    " + "\n    ".join(tail))
    assert ran >= 10
    assert not failures, "\n".join(failures)
    assert (repo / ".kit" / "report.html").is_file() and (repo / ".kit" / "junit.xml").is_file()
