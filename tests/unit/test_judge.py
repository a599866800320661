"""Judge configuration from the environment (kit/judge/__init__.py: no DeepEval import)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kit.errors import KitInputError
from kit.judge import judge_config, rubric_hash


def test_no_model_means_no_judge() -> None:
    assert judge_config({}) is None
    assert judge_config({"KIT_JUDGE_BASE_URL": "http://127.0.0.1:8000/v1"}) is None


def test_openai_compatible_endpoint() -> None:
    cfg = judge_config(
        {"KIT_JUDGE_MODEL": "qwen2.5-7b", "KIT_JUDGE_BASE_URL": "http://127.0.0.1:8000/v1/", "KIT_JUDGE_TIMEOUT": "5"}
    )
    assert cfg is not None
    assert cfg.provider == "openai-compatible"
    assert cfg.base_url == "http://127.0.0.1:8000/v1"
    assert cfg.timeout_s == 5.0
    assert cfg.is_loopback
    assert cfg.describe() == "judge qwen2.5-7b at http://127.0.0.1:8000/v1"


def test_hosted_provider_without_base_url() -> None:
    cfg = judge_config({"KIT_JUDGE_MODEL": "claude-x", "KIT_JUDGE_PROVIDER": "Anthropic"})
    assert cfg is not None and cfg.provider == "anthropic" and cfg.base_url is None
    assert "anthropic" in cfg.endpoint


def test_api_key_is_not_in_repr() -> None:
    cfg = judge_config({"KIT_JUDGE_MODEL": "m", "KIT_JUDGE_BASE_URL": "http://h/v1", "KIT_JUDGE_API_KEY": "sk-secret"})
    assert cfg is not None and cfg.api_key == "sk-secret"
    assert "sk-secret" not in repr(cfg)


@pytest.mark.parametrize(
    ("env", "fragment"),
    [
        ({"KIT_JUDGE_PROVIDER": "nope"}, "unknown KIT_JUDGE_PROVIDER 'nope'"),
        ({"KIT_JUDGE_PROVIDER": "openai-compatible"}, "needs KIT_JUDGE_BASE_URL"),
        ({"KIT_JUDGE_BASE_URL": "ftp://x"}, "must be an http(s) URL"),
        ({"KIT_JUDGE_BASE_URL": "http://x", "KIT_JUDGE_TIMEOUT": "0"}, "timeout_s"),
        ({"KIT_JUDGE_BASE_URL": "http://x", "KIT_JUDGE_RETRIES": "many"}, "retries"),
    ],
)
def test_bad_settings_name_the_setting(env: dict[str, str], fragment: str) -> None:
    with pytest.raises(KitInputError) as err:
        judge_config({"KIT_JUDGE_MODEL": "m", **env})
    assert fragment in str(err.value)
    assert str(err.value).startswith("environment: ")


def test_rubric_hash_is_stable_and_order_free() -> None:
    a = rubric_hash({"criteria": "x", "params": ["input"]})
    assert a == rubric_hash({"params": ["input"], "criteria": "x"})
    assert a != rubric_hash({"criteria": "y", "params": ["input"]})
    assert len(a) == 16


def test_kit_judge_does_not_import_deepeval() -> None:
    code = "import sys, kit.judge; assert 'deepeval' not in sys.modules, 'deepeval imported'"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=30)
