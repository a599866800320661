"""The environment that keeps DeepEval and Promptfoo on this machine and inside the project, defined once.

The pipeline's stages, the Promptfoo launcher (kit_promptfoo/run_promptfoo.py) and the DeepEval adapter
(deepeval_metrics/offline.py) take their variables from here; the project's `.env` (read by both tools
when typed by hand) holds the same values, which a test pins. Names only: nothing here imports either tool.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

DEEPEVAL: dict[str, str] = {
    # No telemetry, no update check (read at import, before a test file runs).
    "DEEPEVAL_TELEMETRY_OPT_OUT": "1",
    "DEEPEVAL_UPDATE_WARNING_OPT_IN": "0",
}

# Every flag Promptfoo 0.123.1 reads to decide whether to reach the network (checked in its dist source).
PROMPTFOO: dict[str, str] = {
    "PROMPTFOO_DISABLE_TELEMETRY": "1",
    "PROMPTFOO_DISABLE_UPDATE": "1",
    "PROMPTFOO_DISABLE_SHARING": "1",
    "PROMPTFOO_DISABLE_SHARE_EMAIL_REQUEST": "1",
    "PROMPTFOO_DISABLE_REDTEAM_REMOTE_GENERATION": "1",
    "PROMPTFOO_DISABLE_REMOTE_GENERATION": "1",
    # Red-team moderation would call a remote moderation model; keep it off explicitly.
    "PROMPTFOO_DISABLE_REDTEAM_MODERATION": "1",
    # Its cache is keyed on the provider file, not on the agent: a cached answer would hide a changed agent.
    "PROMPTFOO_CACHE_ENABLED": "false",
}

# Promptfoo 0.123.1 still POSTs one "telemetry disabled" beacon to a hard-coded host when telemetry is off
# (promptfoo/promptfoo#9968). Its fetch honours the proxy variables, so sending every non-local request to a
# closed port on 127.0.0.1 stops it before any DNS lookup; local model doubles and judges stay reachable
# through NO_PROXY. KIT_PROMPTFOO_ONLINE=1 lifts this for a remote judge model.
DEAD_PROXY_URL = "http://127.0.0.1:9"
DEAD_PROXY: dict[str, str] = {
    "HTTPS_PROXY": DEAD_PROXY_URL,
    "HTTP_PROXY": DEAD_PROXY_URL,
    "https_proxy": DEAD_PROXY_URL,
    "http_proxy": DEAD_PROXY_URL,
    "NO_PROXY": "127.0.0.1,localhost,::1",
    "no_proxy": "127.0.0.1,localhost,::1",
}
PROXY_VARS = ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy")

STATE = ".promptfoo"  # Promptfoo's state folder, under the project root


def promptfoo_env(root: Path, python: str, base: Mapping[str, str]) -> dict[str, str]:
    """The environment a Promptfoo process runs in: `base` with the offline flags, its state under the
    project, the project's Python for its Python providers, and the dead proxy unless lifted."""
    env = dict(base)
    env.update(PROMPTFOO)
    env.update(DEEPEVAL)
    state = root / STATE
    env["PROMPTFOO_CONFIG_DIR"] = str(state)
    env["PROMPTFOO_CACHE_PATH"] = str(state / "cache")
    env["PROMPTFOO_PYTHON"] = python
    if env.get("KIT_PROMPTFOO_ONLINE") != "1":
        env.update(DEAD_PROXY)
    return env


def dotenv_values() -> dict[str, str]:
    """What the project's `.env` must set, so the tools typed by hand stay offline too (paths relative to
    the project root, where both tools read `.env`)."""
    return {
        **PROMPTFOO,
        "PROMPTFOO_CONFIG_DIR": STATE,
        "PROMPTFOO_CACHE_PATH": f"{STATE}/cache",
        "PROMPTFOO_PYTHON": ".venv/bin/python",
        "HTTPS_PROXY": DEAD_PROXY_URL,
        "HTTP_PROXY": DEAD_PROXY_URL,
        "NO_PROXY": DEAD_PROXY["NO_PROXY"],
        **DEEPEVAL,
    }
