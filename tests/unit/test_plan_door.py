"""The plan is the only door: below it nothing loads the settings, finds the project's folder or reads the
environment on its own. The source of the kit and its adapters is read with `ast`; a call of `load_settings`,
`project_root`, `current_settings` or `process_settings`, or a use of `os.environ` / `os.getenv`, is allowed only
in kit/settings.py, kit/plan.py and kit/offline.py, in a command line's `main`, and at the few places listed
below, each with why. A new one anywhere else fails this test, naming the file, the line and the function."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("kit", "kit_promptfoo", "deepeval_metrics")
CALLS = {"load_settings", "project_root", "current_settings", "process_settings"}
OS_NAMES = {"environ", "getenv"}

# Whole files: the settings and the plan (the door itself), the offline switches, and the stand-ins for models.
FILES = {
    "kit/settings.py": "the settings",
    "kit/plan.py": "the plan",
    "kit/offline.py": "the offline switches every tool's environment gets",
    "deepeval_metrics/offline.py": "the DeepEval adapter's offline switches (as kit/offline.py)",
    "kit/doubles/slow_agent.py": "a stand-in agent for tests, tuned by its own variables",
    "kit/doubles/judge.py": "the judge double's launcher for tests",
}

# Entry points by (file, function): a command line's own or a tool's hook, where a front end starts. `<module>`:
# a statement run at import.
ENTRIES = {
    ("kit/commands/run.py", "_plan"): "kit run's plan from its command line",
    ("kit_promptfoo/store_hook.py", "afterAll"): "Promptfoo's afterAll hook: where the launcher put the results",
    ("kit_promptfoo/oracle_assert.py", "get_assert"): "Promptfoo's assertion: the recheck switch of the launcher",
    ("deepeval_metrics/pytest_plugin.py", "<module>"): "DeepEval's telemetry switch as the process started",
}

# Below the plan, the settings the process runs under (KIT_PLAN's document, else the project's): what is read
# inside an agent's call or per check, where nothing hands a plan down.
PROCESS = {
    ("kit/agent/fixtures.py", "fixtures_path"): "the reference agent's shop data, inside its call",
    ("kit/checks/params.py", "regex_timeout"): "a regex's time limit, per check",
    ("kit/checks/limits.py", "check_timeout"): "a check's time limit, per check",
    ("kit/store/lock.py", "_default_timeout"): "the store lock's wait, per write",
    ("kit/runner/slots.py", "from_env"): "the shared slots of one make evals, around each agent call",
    ("kit/runner/usersim.py", "user_config"): "the simulated user, reached from inside an agent's call",
    ("kit/agent/model_policy.py", "ModelConfig.from_settings"): "the reference agent's model, inside its call",
    ("kit/pricing.py", "_overrides"): "a model call's price, as the agent's trace is read",
    ("kit/recording/session.py", "active"): "the model-call recordings, installed on a first call",
}

# Settings read from what the caller hands over, never from this process's environment or project.
GIVEN = {
    ("kit/judge/__init__.py", "judge_config"): "a judge from a mapping of KIT_JUDGE_* alone (a tool's, a test's)",
}

# Not yet moved behind the plan: files other helpers own, in the works at the same time.
TODO = {
    ("kit/commands/mcp.py", "*"): "not yet moved: kit mcp reads its settings from its ancestors' environment",
    ("kit/mcp/proxy.py", "*"): "not yet moved: kit mcp's proxy hands the server this environment",
}


def _uses(tree: ast.AST) -> list[tuple[int, str, str]]:
    """(line, the function it is in, what) for every call and use the test watches."""
    found: list[tuple[int, str, str]] = []

    def visit(node: ast.AST, where: list[str]) -> None:
        for child in ast.iter_child_nodes(node):
            inner = where
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                inner = [*where, child.name]
            if isinstance(child, ast.Call):
                f = child.func
                name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
                if name in CALLS:
                    found.append((child.lineno, ".".join(where) or "<module>", f"{name}()"))
            if (
                isinstance(child, ast.Attribute)
                and child.attr in OS_NAMES
                and isinstance(child.value, ast.Name)
                and child.value.id == "os"
            ):
                found.append((child.lineno, ".".join(where) or "<module>", f"os.{child.attr}"))
            if isinstance(child, ast.ImportFrom) and child.module == "os":
                for alias in child.names:
                    if alias.name in OS_NAMES:
                        found.append((child.lineno, ".".join(where) or "<module>", f"from os import {alias.name}"))
            visit(child, inner)

    visit(tree, [])
    return found


def _allowed(rel: str, function: str) -> bool:
    if rel in FILES:
        return True
    top = function.split(".")[0]
    if top == "main":  # a command line's entry point (and what it nests)
        return True
    keys = {(rel, function), (rel, top), (rel, "*")}
    return any(k in ENTRIES or k in PROCESS or k in GIVEN or k in TODO for k in keys)


def test_only_the_plan_the_settings_and_the_entry_points_read_the_settings_or_the_environment() -> None:
    bad = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            for line, function, what in _uses(ast.parse(path.read_text(encoding="utf-8"), rel)):
                if not _allowed(rel, function):
                    bad.append(f"{rel}:{line}: {what} in {function}")
    assert not bad, "below the plan (take the plan, or an argument):\n" + "\n".join(bad)


def test_every_allowed_place_is_still_needed() -> None:
    """An entry of the allow-lists (the TODO one apart) that no longer reads anything is removed, so the lists
    stay short and say where the doors are."""
    used = set()
    for rel, function in {**ENTRIES, **PROCESS, **GIVEN}:
        path = ROOT / rel
        if path.is_file():
            found = _uses(ast.parse(path.read_text(encoding="utf-8"), rel))
            used |= {(rel, function) for _, f, _ in found if f in (function, function.split(".")[0])}
    assert set({**ENTRIES, **PROCESS, **GIVEN}) <= used, sorted(set({**ENTRIES, **PROCESS, **GIVEN}) - used)


def test_the_scan_sees_what_it_forbids(tmp_path: Path) -> None:
    code = "import os\ndef helper():\n    return load_settings(), os.environ.get('X'), kit.settings.project_root()\n"
    assert [(w, f) for _, f, w in _uses(ast.parse(code))] == [
        ("load_settings()", "helper"),
        ("os.environ", "helper"),
        ("project_root()", "helper"),
    ]
    assert not _allowed("kit/runner/invoke.py", "helper") and _allowed("kit/commands/gate.py", "main")
