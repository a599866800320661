"""One OpenAI-compatible chat-completions call over the standard library: used by the reference agent's
model policy and the simulated user alike (no SDK, so `import kit` stays light and nothing phones home)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any


class ChatEndpointError(Exception):
    """The endpoint answered an HTTP error (`status` set) or could not be reached or read (`status` None)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def post_chat_completion(base_url: str, api_key: str | None, body: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    req = urllib.request.Request(
        base_url + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {api_key}"},
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            return json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode(errors="replace")[:300]
        raise ChatEndpointError(f"HTTP {exc.code}: {detail}", exc.code) from None
    except (urllib.error.URLError, TimeoutError, OSError, json.JSONDecodeError) as exc:
        raise ChatEndpointError(str(exc)) from None
