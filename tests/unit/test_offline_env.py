"""The offline environment is defined once (kit.offline): the project's .env, read by the tools typed by
hand, sets exactly those values, and the Promptfoo launcher and DeepEval adapter apply them."""

from __future__ import annotations

from pathlib import Path

from deepeval_metrics.offline import quiet_offline
from kit.offline import DEEPEVAL, PROMPTFOO, dotenv_values
from kit_promptfoo.run_promptfoo import offline_env

ROOT = Path(__file__).resolve().parents[2]


def _dotenv(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            out[key.strip()] = value.strip()
    return out


def test_the_projects_dotenv_is_the_kits_offline_environment() -> None:
    assert _dotenv(ROOT / ".env") == dotenv_values()


def test_the_promptfoo_launcher_sets_every_flag_and_the_dead_proxy(tmp_path: Path) -> None:
    env = offline_env(tmp_path, {"PATH": "/usr/bin", "PROMPTFOO_DISABLE_TELEMETRY": "0"})
    assert {k: env[k] for k in PROMPTFOO} == PROMPTFOO  # a user's own "0" does not switch telemetry on
    assert env["PROMPTFOO_CONFIG_DIR"] == str(tmp_path / ".promptfoo")
    assert env["HTTPS_PROXY"] == "http://127.0.0.1:9" and "127.0.0.1" in env["NO_PROXY"]
    assert env["PATH"].startswith(str(tmp_path / "node_modules" / ".bin"))
    online = offline_env(tmp_path, {"KIT_PROMPTFOO_ONLINE": "1"})
    assert "HTTPS_PROXY" not in online


def test_promptfoo_keeps_its_compiled_code_beside_its_packages_unless_the_user_keeps_it_elsewhere(
    tmp_path: Path,
) -> None:
    kept = tmp_path / "node_modules" / ".cache" / "node-compile-cache"
    assert offline_env(tmp_path, {})["NODE_COMPILE_CACHE"] == str(kept)
    assert offline_env(tmp_path, {"NODE_COMPILE_CACHE": "/var/cache/node"})["NODE_COMPILE_CACHE"] == "/var/cache/node"


def test_deepeval_is_quieted_with_the_same_flags() -> None:
    env = {"DEEPEVAL_TELEMETRY_OPT_OUT": "0", "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://corp:3128"}
    quiet_offline(env)
    assert {k: env[k] for k in DEEPEVAL} == DEEPEVAL
    assert "HTTPS_PROXY" not in env and env["HTTP_PROXY"] == "http://corp:3128"
    assert env["CONFIDENT_API_KEY"] == ""
