"""The judge model, configured once for the whole kit from the settings (no DeepEval import here):
[tool.kit.judge] in pyproject.toml (model, base_url, api_key, provider, timeout, retries), overridden by

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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from kit.errors import KitInputError, first_error
from kit.settings import Settings, load_settings

NO_JUDGE_REASON = "no judge configured (set KIT_JUDGE_MODEL, and KIT_JUDGE_BASE_URL for a local endpoint)"
OPENAI_COMPATIBLE = "openai-compatible"
# Where a bare mapping of variables is read from: no folder holds a pyproject.toml there.
_NO_PROJECT = Path("/")
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


def judge_config(source: Mapping[str, str] | Settings) -> JudgeConfig | None:
    """The configured judge, or None when no judge model is set. `source`: the settings (a plan's:
    `Plan.judge`), or a mapping of KIT_JUDGE_* variables alone (a tool's or a test's own judge).
    A bad value raises KitInputError."""
    if isinstance(source, Settings):
        judge, where = source.judge, "environment" + (f" or {source.project_file}" if source.project_file else "")
    else:
        judge, where = load_settings(root=_NO_PROJECT, env=source).judge, "environment"
    if not judge.model:
        return None
    base_url = judge.base_url or None
    provider = (judge.provider or "").lower() or (OPENAI_COMPATIBLE if base_url else "openai")
    if provider == OPENAI_COMPATIBLE and not base_url:
        raise KitInputError("KIT_JUDGE_PROVIDER=openai-compatible needs KIT_JUDGE_BASE_URL", file=where)
    raw: dict[str, Any] = {"model": judge.model, "provider": provider, "base_url": base_url}
    for key, value in (
        ("api_key", judge.api_key),
        ("timeout_s", judge.timeout),
        ("retries", judge.retries),
        ("temperature", judge.temperature),
    ):
        if value is not None:
            raw[key] = value
    try:
        return JudgeConfig.model_validate(raw)
    except ValidationError as exc:
        field, msg, _ = first_error(exc)
        raise KitInputError(f"judge setting {field or 'judge'}: {msg}", file=where) from None


@dataclass(frozen=True)
class JudgeCall:
    """One call to the judge behind a rubric verdict, as the store's `judge_calls` keeps it: what was asked,
    the raw answer, which model answered, what it cost (tokens and cost as the endpoint reported them, None
    when it did not), and which of the verdict's K samples it was. A call that drafted evaluation steps has
    no outcome; a call that failed has `error`."""

    prompt: str | None
    raw_answer: str | None
    judge_model: str | None
    sample: int = 0
    outcome: str | None = None  # pass | fail | error, None for a call that gave no verdict (drafted steps)
    score: float | None = None
    reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    latency_ms: float | None = None
    error: str | None = None


def usage_of(usage: Mapping[str, Any] | None) -> tuple[int | None, int | None, float | None]:
    """(prompt tokens, completion tokens, cost in USD) from a chat completion's `usage`. The cost is there
    only where the endpoint reports it (OpenRouter and LiteLLM's proxy put it in `usage.cost`)."""
    if not usage:
        return None, None, None

    def number(key: str, kind: type) -> Any:
        value = usage.get(key)
        return kind(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

    return number("prompt_tokens", int), number("completion_tokens", int), number("cost", float)


def majority(outcomes: Sequence[str]) -> str:
    """The verdict of K judge samples: `pass` when more than half passed, else `fail`; any `error` among
    them makes the verdict an error (a majority of K needs K verdicts). K is odd, so there is no tie."""
    if not outcomes:
        raise ValueError("no judge samples to take a majority of")
    if "error" in outcomes:
        return "error"
    return "pass" if sum(o == "pass" for o in outcomes) * 2 > len(outcomes) else "fail"


def rubric_hash(text: str | Mapping[str, Any]) -> str:
    """A short stable hash of a rubric's text (criteria, steps, params, threshold): which rubric scored."""
    if not isinstance(text, str):
        text = json.dumps(text, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def judge_failure_lines(by_check: list[Mapping[str, Any]]) -> list[str]:
    """The summary's word on a judge that failed: per soft check with judge errors (rows of
    `kit.store.queries.check_tally`), how many cases errored, where, and the judge's own message."""
    failed = [c for c in by_check if c.get("gate") == "soft" and c.get("errored")]
    if not failed:
        return []
    lines = ["\n== judge FAILED (its errors are no verdict: the hard gates decide; gates.yaml soft.errors)"]
    for c in failed:
        what = "red-team attacks" if c.get("redteam") else "cases"
        reason = " ".join(str(c.get("reason") or "").split())
        lines.append(
            f"  {c['check']}: the judge failed on {c['errored']}/{c['cases']} {what} "
            f"[{', '.join(c.get('sources') or [])}]" + (f": {reason[:160]}" if reason else "")
        )
    return lines
