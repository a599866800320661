"""Run the pinned Promptfoo CLI with every setting that keeps it offline and inside the project.

Usage: `python providers/run_promptfoo.py eval -c promptfooconfig.yaml` (any promptfoo arguments).

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

from kit.settings import project_root

ROOT = project_root()

# Every flag Promptfoo 0.123.1 reads to decide whether to reach the network (checked in its dist source).
OFFLINE_FLAGS: dict[str, str] = {
    "PROMPTFOO_DISABLE_TELEMETRY": "1",
    "PROMPTFOO_DISABLE_UPDATE": "1",
    "PROMPTFOO_DISABLE_SHARING": "1",
    "PROMPTFOO_DISABLE_SHARE_EMAIL_REQUEST": "1",
    "PROMPTFOO_DISABLE_REDTEAM_REMOTE_GENERATION": "1",
    "PROMPTFOO_DISABLE_REMOTE_GENERATION": "1",
    # Red-team moderation would call a remote moderation model; keep it off explicitly.
    "PROMPTFOO_DISABLE_REDTEAM_MODERATION": "1",
}


# Promptfoo 0.123.1 still POSTs one "telemetry disabled" beacon to a hard-coded host when telemetry is
# off (promptfoo/promptfoo#9968, open). Its fetch honours the proxy variables, so sending every
# non-local request to a closed port on 127.0.0.1 stops it before any DNS lookup; local model doubles
# and judges on 127.0.0.1 stay reachable through NO_PROXY. KIT_PROMPTFOO_ONLINE=1 lifts this for a
# remote judge model.
_DEAD = "http://127.0.0.1:9"
DEAD_PROXY: dict[str, str] = {
    "HTTPS_PROXY": _DEAD,
    "HTTP_PROXY": _DEAD,
    "https_proxy": _DEAD,
    "http_proxy": _DEAD,
    "NO_PROXY": "127.0.0.1,localhost,::1",
    "no_proxy": "127.0.0.1,localhost,::1",
}


def promptfoo_bin(root: Path = ROOT) -> Path:
    return root / "node_modules" / ".bin" / "promptfoo"


def python_for(root: Path = ROOT) -> str:
    """The project's venv Python if it exists (it has `kit` installed), else the running one."""
    venv = root / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def offline_env(root: Path = ROOT, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment Promptfoo must run in: offline flags, state under the project, the project's Python."""
    env = dict(os.environ if base is None else base)
    env.update(OFFLINE_FLAGS)
    state = root / ".promptfoo"
    env["PROMPTFOO_CONFIG_DIR"] = str(state)
    env["PROMPTFOO_CACHE_PATH"] = str(state / "cache")
    # Promptfoo keys its Python-provider cache on the provider file's hash, not on `kit/agent`: a cached
    # answer would hide a change to the agent. Every eval runs the agent afresh.
    env.setdefault("PROMPTFOO_CACHE_ENABLED", "false")
    env["PROMPTFOO_PYTHON"] = python_for(root)
    env["PATH"] = os.pathsep.join([str(root / "node_modules" / ".bin"), env.get("PATH", "")])
    # The Python workers import the project's own modules (a user's agent) from its root.
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(root), env.get("PYTHONPATH", "")] if p)
    env.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
    if env.get("KIT_PROMPTFOO_ONLINE") != "1":
        env.update(DEAD_PROXY)
    return env


def command(args: Sequence[str], root: Path = ROOT) -> list[str]:
    return [str(promptfoo_bin(root)), *args]


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    exe = promptfoo_bin()
    if not exe.exists():
        print(f"run_promptfoo: {exe} is missing; run `make promptfoo-install` first", file=sys.stderr)
        return 2
    env = offline_env()
    Path(env["PROMPTFOO_CONFIG_DIR"]).mkdir(parents=True, exist_ok=True)
    os.chdir(ROOT)
    os.execve(str(exe), command(args), env)
    return 0  # not reached


if __name__ == "__main__":
    raise SystemExit(main())
