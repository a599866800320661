"""Run the pinned Promptfoo CLI with every setting that keeps it offline and inside the project.

Usage: `python kit_promptfoo/run_promptfoo.py eval -c promptfooconfig.yaml` (any promptfoo arguments).

Without these settings Promptfoo phones home (telemetry, update check), offers to share results, asks
for an e-mail address before a red team, generates attacks on its own servers, and keeps its state in
~/.promptfoo. The launcher execs `node_modules/.bin/promptfoo` with `node_modules/.bin` first on PATH,
so the script's `#!/usr/bin/env node` finds the Node 22 that package.json pins (the system one is 20).
It skips `npx` itself, which would start a Node 20 process only to look the binary up.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

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
    return env


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
    Path(env["PROMPTFOO_CONFIG_DIR"]).mkdir(parents=True, exist_ok=True)
    os.chdir(root)
    os.execve(str(exe), command(args, root), env)
    return 0  # not reached


if __name__ == "__main__":
    raise SystemExit(main())
