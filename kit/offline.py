"""The environment that keeps DeepEval and Promptfoo on this machine and inside the project, defined once,
and the one function that gives the agent's code the user's own environment back (`agent_environment`).

The pipeline's stages, the Promptfoo launcher (kit_promptfoo/run_promptfoo.py) and the DeepEval adapter
(deepeval_metrics/offline.py) take their variables from here; the project's `.env` (read by both tools
when typed by hand) holds the same values, which a test pins. Names only: nothing here imports either tool.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, MutableMapping
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
# The user's own values of the variables the dead proxy replaced (JSON: name -> value, null where unset),
# saved when the kit sets it, so the agent's code gets them back (`agent_environment`).
USER_ENV = "KIT_USER_ENV"

STATE = ".promptfoo"  # Promptfoo's state folder, under the project root


def _switch(name: str, env: Mapping[str, str] | None) -> bool:
    return ((os.environ if env is None else env).get(name) or "").strip().lower() in ("1", "true", "yes")


def deepeval_upload_requested(env: Mapping[str, str] | None = None) -> bool:
    """KIT_DEEPEVAL_UPLOAD=1: DeepEval may upload to Confident AI (off by default: nothing leaves the machine)."""
    return _switch("KIT_DEEPEVAL_UPLOAD", env)


def deepeval_stock_io(env: Mapping[str, str] | None = None) -> bool:
    """KIT_DEEPEVAL_CACHE=1: DeepEval's own per-test cache writes are left alone (the bench measures both)."""
    return _switch("KIT_DEEPEVAL_CACHE", env)


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
        # An outer launch saved them already (its base held the dead proxy, not the user's values).
        env.setdefault(USER_ENV, json.dumps({k: base.get(k) for k in DEAD_PROXY}))
        env.update(DEAD_PROXY)
    return env


def agent_environment(env: MutableMapping[str, str] | None = None) -> dict[str, str | None]:
    """Give the agent's code the user's own environment back (`os.environ` unless `env` is given), in place:
    the offline guard is for the tools (Promptfoo's beacon), never for the agent, whose model may be any host.

    Where the kit set the dead proxy it saved the user's values (USER_ENV): those come back exactly, an unset
    one unset (a proxy variable blank). Where the project's `.env` set it (Promptfoo and DeepEval read it; neither
    overrides a variable already set), a proxy variable holding the dead proxy is blanked, and the kit's NO_PROXY
    list removed. A proxy variable unset is set blank.
    Keys, CA bundles and every other variable are the user's already: the kit never changes them. Returns
    what it changed (name -> the value now, None: removed, "": blanked); writes nothing when nothing is to change, so
    calling it before every agent call costs a few lookups. Every place an agent runs calls it
    (`kit.runner.invoke.call` and `call_async`, which the runner's hosts, DeepEval and Promptfoo's provider
    all go through)."""
    env = os.environ if env is None else env
    wanted: dict[str, str | None] = {}
    saved = env.get(USER_ENV)
    own: dict[str, str | None] | None = None
    if saved:
        try:
            loaded = json.loads(saved)
        except ValueError:
            loaded = None
        if isinstance(loaded, dict):
            own = {k: v if isinstance(v, str) else None for k, v in loaded.items() if k in DEAD_PROXY}
    if own is not None:
        for name in DEAD_PROXY:
            if env.get(name) == DEAD_PROXY[name]:  # still the kit's: the user's value comes back
                value = own.get(name)
                wanted[name] = None if value == DEAD_PROXY_URL else value
    else:
        dead = [name for name in PROXY_VARS if env.get(name) == DEAD_PROXY_URL]
        wanted.update(dict.fromkeys(dead))
        if dead:
            wanted.update({n: None for n in ("NO_PROXY", "no_proxy") if env.get(n) == DEAD_PROXY[n]})
    # A proxy variable left unset, or to be removed, is set blank instead: a framework that loads the project's
    # `.env` when imported (smolagents, CrewAI: python-dotenv, which never overrides a variable already set) would
    # bring the dead proxy back mid-call, in a run that read `.env` or in one that never did (`kit run`, DeepEval's
    # session). An empty proxy variable is no proxy to urllib, httpx, requests and aiohttp.
    for name in PROXY_VARS:
        if wanted.get(name, env.get(name)) is None:
            wanted[name] = ""
    changed: dict[str, str | None] = {}
    for name, value in wanted.items():
        if env.get(name) == value:
            continue
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
        changed[name] = value
    return changed


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
