"""Every command README.md shows, then every command its guides show (docs/, in PAGES' order: each builds on the
runs the ones before it made), runs in a copy of the repository and exits as the page says (`# exits N` after
a command; 0 otherwise). `make test` is the command that runs this very test, so it is
checked against .ci/run instead of being run again. The tools' own commands (`deepeval test run`,
`npx promptfoo eval|redteam run|view`) are run as typed, offline and under strace, by test_tools_as_typed:
run there, not twice, unless that test cannot isolate them here."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from shared_runs import basic_red_team, copy_repo, environ, shared_run
from test_tools_as_typed import AS_TYPED, can_isolate

ROOT = Path(__file__).resolve().parents[2]
# The pages whose ```console blocks are run, in this order: the README's two commands and its verdict first,
# then the guides the README's commands moved to, as they build on each other's runs.
PAGES = (
    "README.md",
    "docs/setup.md",
    "docs/cases.md",
    "docs/agent.md",
    "docs/production.md",
    "docs/conversations.md",
    "docs/store-and-report.md",
)


def page_commands(page: str) -> list[tuple[str, int]]:
    """A page's console commands, each with the exit code the page says it has."""
    commands = []
    for block in re.findall(r"```console\n(.*?)```", (ROOT / page).read_text(), re.S):
        for line in block.splitlines():
            if not line.startswith("$ "):
                continue
            cmd, _, comment = line[2:].partition("  #")
            m = re.search(r"exits (\d+)", comment)
            commands.append((cmd.strip(), int(m.group(1)) if m else 0))
    return commands


def readme_commands() -> list[tuple[str, int]]:
    return page_commands("README.md")


def documented_commands() -> list[tuple[str, str, int]]:
    """Every page's console commands in PAGES' order: (page, command, exit code)."""
    return [(page, cmd, code) for page in PAGES for cmd, code in page_commands(page)]


def test_every_page_with_console_commands_is_run():
    """A guide that shows a console command the run leaves out would go untested: every such page is in PAGES."""
    shown = {
        str(p.relative_to(ROOT))
        for p in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
        if "```console\n" in p.read_text()
    }
    assert shown <= set(PAGES), f"pages with console commands not run by this test: {sorted(shown - set(PAGES))}"
    assert all(page_commands(page) for page in PAGES), "a page in PAGES shows no console command"


def typed_elsewhere() -> dict[str, list[str]]:
    """The pages' commands that test_tools_as_typed runs (when it can isolate them): each with its argv there."""
    if can_isolate() is not None:
        return {}
    typed = {command: argv for command, (argv, *_) in AS_TYPED.items()}
    typed["npx promptfoo view"] = ["npx", "promptfoo", "view"]
    return {cmd: typed[key] for _, cmd, _ in documented_commands() for key in typed if cmd.endswith(key)}


def test_the_tools_commands_the_readme_names_are_run_as_typed():
    elsewhere = typed_elsewhere()
    if can_isolate() is not None:
        pytest.skip(f"test_tools_as_typed cannot isolate the tools here ({can_isolate()}): run in the README's run")
    assert len(elsewhere) == 4, elsewhere
    for cmd, argv in elsewhere.items():
        program, *args = cmd.split()
        assert Path(argv[0]).resolve() == (ROOT / program).resolve() if "/" in program else argv[0] == program
        assert argv[1 : len(args) + 1] == args, (cmd, argv)  # the page's arguments; only output flags added


def test_readme_names_the_two_commands_and_ci_runs_the_test_command():
    cmds = [c for c, _ in readme_commands()]
    assert "make evals" in cmds and "make test" in cmds
    assert re.search(r"^make test$", (ROOT / ".ci/run").read_text(), re.M)


def serves_until_interrupted(cmd: str, repo: Path, env: dict[str, str], port: int = 15500) -> str | None:
    """Start a server command, wait until it answers on loopback, stop it with SIGINT (Ctrl-C): None, or
    what went wrong."""
    proc = subprocess.Popen(
        ["bash", "-c", cmd], cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL, start_new_session=True, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                return f"exited {proc.returncode} before serving: {(proc.stdout.read() if proc.stdout else '')[-500:]}"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as r:
                    if r.status == 200:
                        return None
            except OSError:
                time.sleep(1)
        return f"never answered on 127.0.0.1:{port}"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@shared_run("readme")
def readme_commands_run(tmp_path: Path) -> tuple[Path, list[str], int]:
    """Every page's command, in order, in a copy of the repository: the copy, what went wrong, how many ran."""
    repo = tmp_path / "repo"
    repo.mkdir()
    copy_repo(repo)
    env = {k: v for k, v in environ().items() if not k.startswith(("KIT_", "PYTEST", "VARIANT"))}
    env.pop("DEEPEVAL_DISABLE_DOTENV", None)  # set for the test workers only: a user's shell reads .env
    # The pages run `make evals` twice (and a third time on the examples): the red team's basic strategy and first
    # two plugins only (enough for its control target to fail, as it must); test_judge_evals runs every plugin.
    basic_red_team(repo, env, plugins=2)
    failures = []
    ran = 0
    elsewhere = typed_elsewhere()
    for page, cmd, want in documented_commands():
        if cmd.startswith("make test"):
            continue  # this test is part of `make test`; CI runs it (checked above)
        if cmd in elsewhere:
            continue  # run as typed by test_tools_as_typed (checked above)
        ran += 1
        if "promptfoo view" in cmd:  # a server: it must come up and answer, then stop on Ctrl-C
            problem = serves_until_interrupted(cmd, repo, env)
            if problem:
                failures.append(f"{page}: {cmd!r}: {problem}")
            continue
        proc = subprocess.run(["bash", "-c", cmd], cwd=repo, env=env, capture_output=True, text=True, timeout=900)
        if proc.returncode != want:
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-8:]
            # A broken stage's log: the page's next `make evals` writes over it.
            for log in sorted(set(re.findall(r"see (\S+\.log)", proc.stdout + proc.stderr))):
                if (repo / log).is_file():
                    tail += [f"{log}:", *(repo / log).read_text(errors="replace").splitlines()[-30:]]
            failures.append(
                f"{page}: {cmd!r} exited {proc.returncode}, the page says {want}:\n    " + "\n    ".join(tail)
            )
    return repo, failures, ran


@pytest.mark.skipif(not (ROOT / ".venv").exists(), reason="needs the project's .venv (make install)")
def test_every_readme_command_runs_as_documented(readme_commands_run):
    repo, failures, ran = readme_commands_run
    assert ran >= 10
    assert not failures, "\n".join(failures)
    assert (repo / ".kit" / "report.html").is_file() and (repo / ".kit" / "junit.xml").is_file()
