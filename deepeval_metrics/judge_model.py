"""The judge as a DeepEval model that keeps every raw answer, and fails loudly.

DeepEval's own model classes parse the judge's JSON inside `generate`, so the raw text is gone by the
time a metric sees it. This wrapper asks for plain text, keeps it (for the store), then parses it itself:
a malformed answer or an unreachable judge raises JudgeError naming the model and the endpoint.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any

from deepeval.models import DeepEvalBaseLLM
from pydantic import BaseModel, ValidationError

from kit.errors import error_line
from kit.judge import OPENAI_COMPATIBLE, JudgeConfig, usage_of


class JudgeError(RuntimeError):
    """The judge could not give a verdict: unreachable, refused, or answered something unparseable."""


@dataclass
class Exchange:
    """One judge call: what was asked, the raw answer, and which model answered."""

    prompt: str
    raw_answer: str | None
    model: str
    latency_ms: float
    error: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None  # where the endpoint reports it (kit.judge.usage_of)


@dataclass
class _Log:
    exchanges: list[Exchange] = field(default_factory=list)


def _hosted_model(config: JudgeConfig) -> DeepEvalBaseLLM:
    """DeepEval's own class for a hosted provider (imported only when asked for)."""
    import deepeval.models as m

    classes = {
        "openai": "GPTModel",
        "anthropic": "AnthropicModel",
        "gemini": "GeminiModel",
        "azure": "AzureOpenAIModel",
        "ollama": "OllamaModel",
        "litellm": "LiteLLMModel",
        "deepseek": "DeepSeekModel",
        "grok": "GrokModel",
        "kimi": "KimiModel",
        "openrouter": "OpenRouterModel",
        "bedrock": "AmazonBedrockModel",
    }
    cls = getattr(m, classes[config.provider])
    kwargs: dict[str, Any] = {"model": config.model, "temperature": config.temperature}
    if config.api_key:
        kwargs["api_key"] = config.api_key
    if config.base_url:
        kwargs["base_url"] = config.base_url
    return cls(**kwargs)


def _json_object(raw: str) -> dict[str, Any]:
    """The JSON object in a judge answer (models often wrap it in prose or a ``` fence)."""
    start, end = raw.find("{"), raw.rfind("}")
    if start == -1 or end <= start:
        raise ValueError("no JSON object in the answer")
    data = json.loads(raw[start : end + 1])
    if not isinstance(data, dict):
        raise ValueError("the answer is not a JSON object")
    return data


class KitJudgeModel(DeepEvalBaseLLM):
    """A DeepEval model over the kit's judge config; `log.exchanges` holds every call's raw answer."""

    def __init__(self, config: JudgeConfig) -> None:
        self.config = config
        self.log = _Log()
        self._hosted: DeepEvalBaseLLM | None = None
        super().__init__(config.model)

    def load_model(self, *args: Any, **kwargs: Any) -> Any:
        if self.config.provider == OPENAI_COMPATIBLE:
            from openai import OpenAI

            return OpenAI(
                base_url=self.config.base_url,
                api_key=self.config.api_key or "not-needed",
                timeout=self.config.timeout_s,
                max_retries=self.config.retries,
            )
        self._hosted = _hosted_model(self.config)
        return self._hosted

    def get_model_name(self, *args: Any, **kwargs: Any) -> str:
        return self.config.model

    def _complete(self, prompt: str) -> tuple[str, str, tuple[int | None, int | None, float | None]]:
        """(raw answer text, the model id the server says answered, (prompt tokens, completion tokens, cost))."""
        if self._hosted is not None:
            out = self._hosted.generate(prompt)
            text, cost = (out[0], out[1]) if isinstance(out, tuple) else (out, None)
            cost = float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None
            return str(text), self.config.model, (None, None, cost)  # DeepEval's classes report cost only
        import openai

        try:
            response = self.model.chat.completions.create(
                model=self.config.model,
                messages=[{"role": "user", "content": prompt}],
                temperature=self.config.temperature,
            )
        except openai.APIConnectionError as exc:
            raise JudgeError(f"{self.config.describe()} is unreachable: {exc}") from None
        except openai.APIStatusError as exc:
            raise JudgeError(
                f"{self.config.describe()} refused the call: HTTP {exc.status_code}: {exc.message}"
            ) from None
        content = response.choices[0].message.content if response.choices else None
        if content is None:
            raise JudgeError(f"{self.config.describe()} returned no message content")
        usage = response.usage.model_dump() if response.usage is not None else None
        return content, response.model or self.config.model, usage_of(usage)

    def generate(self, prompt: str, schema: type[BaseModel] | None = None, **_: Any) -> Any:
        started = time.perf_counter()
        try:
            raw, served_by, (prompt_tokens, completion_tokens, cost) = self._complete(prompt)
        except JudgeError as exc:
            self.log.exchanges.append(Exchange(prompt, None, self.config.model, _ms(started), str(exc)))
            raise
        self.log.exchanges.append(
            Exchange(prompt, raw, served_by, _ms(started), None, prompt_tokens, completion_tokens, cost)
        )
        if schema is None:
            return raw
        try:
            return schema.model_validate(_json_object(raw))
        except (ValueError, ValidationError) as exc:
            detail = error_line(exc, root="answer") if isinstance(exc, ValidationError) else str(exc)
            message = f"{self.config.describe()} gave a malformed answer ({detail}): {raw[:200]!r}"
            self.log.exchanges[-1].error = message
            raise JudgeError(message) from None

    async def a_generate(self, prompt: str, schema: type[BaseModel] | None = None, **kw: Any) -> Any:
        # Rubrics run one at a time per case; a thread keeps the event loop free without a second client.
        return await asyncio.to_thread(self.generate, prompt, schema, **kw)


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
