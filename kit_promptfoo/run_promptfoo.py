"""Run the pinned Promptfoo CLI with every setting that keeps it offline and inside the project.

Usage: `python kit_promptfoo/run_promptfoo.py eval -c promptfooconfig.yaml` (any promptfoo arguments).

Without these settings Promptfoo phones home (telemetry, update check), offers to share results, asks
for an e-mail address before a red team, generates attacks on its own servers, and keeps its state in
~/.promptfoo. The launcher execs `node_modules/.bin/promptfoo` with `node_modules/.bin` first on PATH,
so the script's `#!/usr/bin/env node` finds the Node 22 that package.json pins (the system one is 20).
It skips `npx` itself, which would start a Node 20 process only to look the binary up.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from kit.duck import SQLITE_MAGIC
from kit.offline import promptfoo_env


def promptfoo_bin(root: Path) -> Path:
    return root / "node_modules" / ".bin" / "promptfoo"


def python_for(root: Path) -> str:
    """The project's venv Python if it exists (it has `kit` installed), else the running one."""
    venv = root / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def offline_env(root: Path, base: Mapping[str, str]) -> dict[str, str]:
    """The environment Promptfoo must run in (kit.offline): offline flags, state under the project, the
    project's Python, and node_modules/.bin first on PATH (the Node that package.json pins), over `base`."""
    env = promptfoo_env(root, python_for(root), base)
    env["PATH"] = os.pathsep.join([str(root / "node_modules" / ".bin"), env.get("PATH", "")])
    # The Python workers import the project's own modules (a user's agent) from its root.
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(root), env.get("PYTHONPATH", "")] if p)
    # Node compiles Promptfoo's bundle on every start; V8's code cache, kept beside the packages it is made
    # from, saves some 8% of a start's CPU (bench/promptfoo_start.py). Node checks each entry against its
    # source and skips a folder it cannot write; a cache folder of the user's own wins, and
    # NODE_DISABLE_COMPILE_CACHE=1 turns it off.
    env.setdefault("NODE_COMPILE_CACHE", str(root / "node_modules" / ".cache" / "node-compile-cache"))
    return env


# Taken by every launch while it checks for Promptfoo's database, and held while one creates it.
STATE_LOCK = ".kit-state.lock"


def pristine_database(exe: Path) -> Path | None:
    """Where a copy of the database Promptfoo `exe` creates, before it holds anything, is kept: beside the
    installed packages, under Promptfoo's version (another version may create other tables). None when the
    version cannot be read."""
    modules = exe.parent.parent
    try:
        version = json.loads((modules / "promptfoo" / "package.json").read_text(encoding="utf-8"))["version"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(version, str) or not version.replace(".", "").replace("-", "").isalnum():
        return None
    return modules / f".kit-promptfoo-{version}.db"


def _copied(source: Path, target: Path) -> bool:
    """`source` copied to `target` whole or not at all (a temporary file renamed into place)."""
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:
        shutil.copyfile(source, partial)
        os.replace(partial, target)
    except OSError:
        partial.unlink(missing_ok=True)
        return False
    return True


def _is_sqlite(path: Path) -> bool:
    """Whether `path` is a file that starts as every SQLite database does (a kept copy that does not is made
    again, never handed to Promptfoo)."""
    try:
        with path.open("rb") as f:
            return f.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return False


def created_state(exe: Path, env: Mapping[str, str]) -> str | None:
    """Promptfoo's database in the state folder `env` names, created by one Promptfoo command alone: Promptfoo
    creates its tables with no lock between processes, so two started at once on a fresh folder (a pipeline's
    eval and red team, two pipelines in one checkout, a CI machine's first run) can both create them and one
    fails ("table `datasets` already exists"). Launches take turns on a file lock until it exists; once it
    does, the lock is free at once. The first database this Promptfoo creates is kept (`pristine_database`), and
    a later fresh folder gets a copy of it: no Promptfoo start (about 2 CPU-s) just to create its tables. None,
    or what went wrong."""
    state = Path(env["PROMPTFOO_CONFIG_DIR"])
    database = state / "promptfoo.db"
    try:
        state.mkdir(parents=True, exist_ok=True)
        lock = (state / STATE_LOCK).open("a")
    except OSError as e:  # a folder Promptfoo cannot write its database in either, unless it holds one
        if database.exists():
            return None
        return f"Promptfoo's state folder {state}: {e.strerror or e}"
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if database.exists():
            return None
        pristine = pristine_database(exe)  # read only on a fresh folder: most launches find the database
        if pristine is not None and _is_sqlite(pristine) and _copied(pristine, database):
            return None
        argv = [str(exe), "list", "evals", "-n", "1"]
        try:
            proc = subprocess.run(argv, env=dict(env), capture_output=True, text=True, timeout=600)
        except subprocess.TimeoutExpired:
            return f"creating Promptfoo's database in {state} (promptfoo list evals) took over 600 s"
        # Kept only when whole in its one file: a write-ahead log beside it would hold part of it.
        beside = [database.with_name(database.name + end) for end in ("-wal", "-journal")]
        if proc.returncode == 0 and pristine is not None and database.is_file() and not any(map(Path.exists, beside)):
            _copied(database, pristine)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-6:])
        return f"creating Promptfoo's database in {state} (promptfoo list evals) exited {proc.returncode}:\n{tail}"
    return None


def command(args: Sequence[str], root: Path) -> list[str]:
    return [str(promptfoo_bin(root)), *args]


def unnamed_agents(args: Sequence[str], root: Path, settings_agent: str | None) -> list[str]:
    """The kit's agent providers, in the config that `args` name (`-c FILE`, else promptfooconfig.yaml), that
    would run no agent: no `agent:` in their config, no `reference: true`, and none in the settings
    (`settings_agent`, the plan's)."""
    import yaml

    from kit.yamlio import safe_load

    if settings_agent:  # named: the settings say so, without importing it
        return []
    files = [args[i + 1] for i, a in enumerate(args[:-1]) if a in ("-c", "--config")]
    missing: list[str] = []
    for name in files or ["promptfooconfig.yaml"]:
        path = Path(name) if Path(name).is_absolute() else root / name
        try:
            config = safe_load(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue  # Promptfoo reports a config it cannot read
        if not isinstance(config, dict):
            continue
        for key in ("providers", "targets"):
            for p in config.get(key) or []:
                if not isinstance(p, dict) or "agent_provider" not in str(p.get("id", "")):
                    continue
                own = p.get("config") if isinstance(p.get("config"), dict) else {}
                if not own.get("agent") and not own.get("reference"):
                    missing.append(f"{name}: provider {p.get('label') or p.get('id')}")
    return missing


def main(argv: Sequence[str] | None = None) -> int:
    from kit.errors import KitInputError
    from kit.plan import PLAN_ENV, current_plan
    from kit.settings import project_root

    args = list(sys.argv[1:] if argv is None else argv)
    # The plan Promptfoo's processes run (its Python providers, the red team's hook and grader): the document
    # this launch was handed (`make evals`), else this launch's own. With settings that do not load, none: the
    # provider names what is wrong, per test. The agent is not imported for it.
    try:
        plan = current_plan()
    except KitInputError:
        plan = None
    root = plan.root if plan is not None else project_root()
    missing = unnamed_agents(args, root, plan.settings.agent) if plan is not None else []
    if missing:
        for m in missing:
            print(
                f"run_promptfoo: {m}: no agent named: give it in the provider's config (agent: module:callable), "
                "in KIT_AGENT or in [tool.kit] agent",
                file=sys.stderr,
            )
        return 2
    exe = promptfoo_bin(root)
    if not exe.exists():
        print(f"run_promptfoo: {exe} is missing; run `make promptfoo-install` first", file=sys.stderr)
        return 2
    env = offline_env(root, os.environ)
    if plan is not None and not os.environ.get(PLAN_ENV, "").strip():  # a handed plan travels on as it is
        env.update(plan.env())
    problem = created_state(exe, env)
    if problem:
        print(f"run_promptfoo: {problem}", file=sys.stderr)
        return 1
    os.chdir(root)
    os.execve(str(exe), command(args, root), env)
    return 0  # not reached


if __name__ == "__main__":
    raise SystemExit(main())
