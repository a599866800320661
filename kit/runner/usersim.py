"""The simulated user of `user:` cases, as in tau-bench: a user model plays the customer, turn by turn.

Configured once, like the judge: [tool.kit.user] in pyproject.toml or

    KIT_USER_MODEL      a pinned model id (a date or version in it; floating aliases are refused)
    KIT_USER_BASE_URL   an OpenAI-compatible endpoint (local vLLM, Ollama `.../v1`, a gateway)
    KIT_USER_API_KEY    its key (local servers usually accept anything)
    KIT_USER_TIMEOUT    seconds per call (default 60)

Temperature 0. With no KIT_USER_MODEL there is no user model: a `user:` case is `skipped` with that
reason, never a pass. The user model's id and the hash of its prompt travel with the run's trace
(`trace.user_simulator`, stored in `case_results.trace`), so a result names the user that produced it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from kit.agent.chat_http import ChatEndpointError, post_chat_completion
from kit.errors import KitInputError
from kit.settings import Settings, current_settings

NO_USER_REASON = "no user model configured (set KIT_USER_MODEL and KIT_USER_BASE_URL): a simulated-user case needs one"
STOP = "###STOP###"
PROMPT = f"""You are a customer writing to the support desk of an online shop. Stay in character; never say
you are an AI. Your situation and what you want:

{{instruction}}

Write only your next message to the agent: short, natural, one message. Reveal details (order numbers,
contact details) only when the agent needs them. When what you wanted is done, or clearly cannot be done,
reply with exactly {STOP}"""


class UserModelError(RuntimeError):
    """The user model could not be asked or gave no usable message; the message names its endpoint."""


@dataclass(frozen=True)
class UserModelConfig:
    model: str
    base_url: str
    api_key: str = field(default="", repr=False)
    timeout_s: float = 60.0
    temperature: float = 0.0

    def describe(self) -> str:
        return f"user model {self.model} at {self.base_url}"


def user_config(source: Settings | None = None) -> UserModelConfig | None:
    """The configured user model, or None when none is set. A bad value is a KitInputError naming it.
    `source`: the settings (default: those this process runs under, kit.settings.current_settings: the
    runner's simulated user is reached from inside an agent's call, which is handed no plan)."""
    settings = source or current_settings()
    user = settings.user
    if not user.model:
        return None
    where = "environment" + (f" or {settings.project_file}" if settings.project_file else "")
    from kit.agent.model_policy import is_floating

    if is_floating(user.model):
        raise KitInputError(
            f"user model {user.model!r} is a floating alias: pin a dated or versioned id (as for the judge)",
            file=where,
        )
    url = (user.base_url or "").rstrip("/")
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise KitInputError(f"KIT_USER_BASE_URL must be an http(s) URL, got {user.base_url!r}", file=where)
    timeout = user.timeout if user.timeout is not None else 60.0
    if timeout <= 0:
        raise KitInputError(f"KIT_USER_TIMEOUT must be > 0, got {timeout}", file=where)
    return UserModelConfig(user.model, url, user.api_key or "", timeout)


def prompt_hash(instruction: str) -> str:
    """Which prompt played the user: a short hash of the prompt with the case's instruction in it."""
    return hashlib.sha256(PROMPT.format(instruction=instruction).encode()).hexdigest()[:16]


def _post(config: UserModelConfig, body: dict[str, Any]) -> dict[str, Any]:
    try:
        return post_chat_completion(config.base_url, config.api_key, body, config.timeout_s)
    except ChatEndpointError as exc:
        if exc.status is not None:
            raise UserModelError(f"{config.describe()} returned {exc}") from None
        raise UserModelError(f"{config.describe()} failed: {exc}") from None


class SimulatedUser:
    """`user(i, history) -> str | None`: the customer's message for turn i (None: the customer is done).

    The user model sees the conversation from the customer's side: the agent's answers are its `user`
    messages and its own earlier messages are `assistant` ones; tool calls stay hidden from it."""

    def __init__(self, config: UserModelConfig, instruction: str) -> None:
        self.config = config
        self.instruction = instruction
        self.model_seen: str | None = None
        self.calls = 0

    def __call__(self, turn: int, history: list[dict[str, Any]]) -> str | None:
        messages: list[dict[str, str]] = [{"role": "system", "content": PROMPT.format(instruction=self.instruction)}]
        messages.append({"role": "user", "content": "(The support chat opens. Write your first message.)"})
        for m in history:
            content = m.get("content")
            if m.get("role") == "user" and isinstance(content, str):
                messages.append({"role": "assistant", "content": content})
            elif m.get("role") == "assistant" and isinstance(content, str) and content:
                messages.append({"role": "user", "content": content})
        body = {"model": self.config.model, "messages": messages, "temperature": self.config.temperature}
        response = _post(self.config, body)
        self.calls += 1
        try:
            content = response["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise UserModelError(f"{self.config.describe()}: malformed answer {json.dumps(response)[:200]}") from None
        self.model_seen = response.get("model") or self.config.model
        text = (content or "").strip()
        if not text:
            raise UserModelError(f"{self.config.describe()} answered an empty message in turn {turn}")
        if STOP in text:
            return None
        return text

    def record(self) -> dict[str, Any]:
        """What the trace keeps about the user: model id (as the endpoint named it), prompt hash, calls."""
        return {
            "model": self.model_seen or self.config.model,
            "configured_model": self.config.model,
            "prompt_hash": prompt_hash(self.instruction),
            "calls": self.calls,
        }
