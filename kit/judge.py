"""The judge model, configured once for the whole kit from the environment (no DeepEval import here).

    KIT_JUDGE_MODEL      model id, e.g. `qwen2.5-7b-instruct` or `gpt-4o-2024-08-06` (unset: no judge)
    KIT_JUDGE_BASE_URL   an OpenAI-compatible endpoint (local vLLM, Ollama `.../v1`, LM Studio, a gateway)
    KIT_JUDGE_API_KEY    its key (local servers usually accept anything)
    KIT_JUDGE_PROVIDER   `openai-compatible` (default with a base URL), or for a hosted provider one of
                         DeepEval's model classes: `openai`, `anthropic`, `gemini`, `azure`, `ollama`, ...
    KIT_JUDGE_TIMEOUT    seconds per judge call (default 60)
    KIT_JUDGE_RETRIES    retries on connection errors and 5xx (default 1)

With no KIT_JUDGE_MODEL there is no judge: rubrics are recorded as `skipped`, never as a pass.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from kit.errors import KitInputError, first_error

NO_JUDGE_REASON = "no judge configured (set KIT_JUDGE_MODEL, and KIT_JUDGE_BASE_URL for a local endpoint)"
OPENAI_COMPATIBLE = "openai-compatible"
HOSTED_PROVIDERS = (
    "openai",
    "anthropic",
    "gemini",
    "azure",
    "ollama",
    "litellm",
    "deepseek",
    "grok",
    "kimi",
    "openrouter",
    "bedrock",
)


class JudgeConfig(BaseModel):
    """Where the judge lives. `endpoint` is what an error names when the judge cannot be reached."""

    model_config = ConfigDict(frozen=True)

    model: str = Field(min_length=1)
    provider: str = OPENAI_COMPATIBLE
    base_url: str | None = None
    api_key: str | None = Field(default=None, repr=False)
    timeout_s: float = Field(default=60.0, gt=0)
    retries: int = Field(default=1, ge=0, le=10)
    temperature: float = Field(default=0.0, ge=0)

    @field_validator("provider")
    @classmethod
    def _provider(cls, value: str) -> str:
        known = (OPENAI_COMPATIBLE, *HOSTED_PROVIDERS)
        if value not in known:
            raise ValueError(f"unknown KIT_JUDGE_PROVIDER {value!r}; one of {', '.join(known)}")
        return value

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parsed = urlparse(value)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"KIT_JUDGE_BASE_URL must be an http(s) URL, got {value!r}")
        return value.rstrip("/")

    @property
    def endpoint(self) -> str:
        return self.base_url or f"{self.provider} (provider default endpoint)"

    @property
    def is_loopback(self) -> bool:
        host = urlparse(self.base_url).hostname if self.base_url else None
        return host in ("127.0.0.1", "localhost", "::1")

    def describe(self) -> str:
        return f"judge {self.model} at {self.endpoint}"


def judge_config(env: Mapping[str, str] | None = None) -> JudgeConfig | None:
    """The configured judge, or None when KIT_JUDGE_MODEL is unset. A bad value raises KitInputError."""
    env = os.environ if env is None else env
    model = (env.get("KIT_JUDGE_MODEL") or "").strip()
    if not model:
        return None
    base_url = (env.get("KIT_JUDGE_BASE_URL") or "").strip() or None
    provider = (env.get("KIT_JUDGE_PROVIDER") or "").strip().lower() or (OPENAI_COMPATIBLE if base_url else "openai")
    if provider == OPENAI_COMPATIBLE and not base_url:
        raise KitInputError("KIT_JUDGE_PROVIDER=openai-compatible needs KIT_JUDGE_BASE_URL", file="environment")
    raw: dict[str, Any] = {"model": model, "provider": provider, "base_url": base_url}
    if env.get("KIT_JUDGE_API_KEY"):
        raw["api_key"] = env["KIT_JUDGE_API_KEY"]
    for var, key in (
        ("KIT_JUDGE_TIMEOUT", "timeout_s"),
        ("KIT_JUDGE_RETRIES", "retries"),
        ("KIT_JUDGE_TEMPERATURE", "temperature"),
    ):
        if (env.get(var) or "").strip():
            raw[key] = env[var].strip()
    try:
        return JudgeConfig.model_validate(raw)
    except ValidationError as exc:
        field, msg, _ = first_error(exc)
        raise KitInputError(f"judge setting {field or 'judge'}: {msg}", file="environment") from None


def rubric_hash(text: str | Mapping[str, Any]) -> str:
    """A short stable hash of a rubric's text (criteria, steps, params, threshold): which rubric scored."""
    if not isinstance(text, str):
        text = json.dumps(text, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
