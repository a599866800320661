"""The kit's matcher: a request as a recording keys it (method, path, canonical JSON body; never a header, never
the host), secrets taken out, and a miss described by its first difference from the nearest recorded request.

    request_of("POST", "https://api.openai.com/v1/chat/completions?api-key=sk", b'{"model": "m"}')
      -> Request(method="POST", path="/v1/chat/completions", body={"model": "m"})
    first_difference({"messages": [{"content": "a"}]}, {"messages": [{"content": "b"}]})
      -> "messages[0].content changed"
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from kit.canonical import canonical
from kit.recording.format import Request

# A query parameter or a top-level body field by these names holds a credential: never written, never keyed.
_SECRET = re.compile(
    r"^(x-)?(api[-_]?key|key|access[-_]?token|token|secret|password|sig|signature|authorization)$", re.IGNORECASE
)
# How many differences a candidate's count stops at when finding the nearest recording (a miss only).
_DIFF_CAP = 64


def is_secret(name: str) -> bool:
    return bool(_SECRET.match(name))


def request_of(method: str, uri: str, body: bytes | str | None) -> Request:
    """The request as recorded and matched: the path and the query without its secrets, the body parsed (JSON
    with its top-level secret fields dropped, else the text, else None)."""
    parts = urlsplit(uri)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if not is_secret(k)]
    path = (parts.path or "/") + ("?" + urlencode(query) if query else "")
    return Request(method=method.upper(), path=path, body=_body(body))


def _body(body: bytes | str | None) -> Any:
    if body is None or body in (b"", ""):
        return None
    text = body.decode("utf-8", errors="replace") if isinstance(body, bytes | bytearray) else str(body)
    try:
        value = json.loads(text)
    except ValueError:
        return text
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if not is_secret(str(k))}
    return value


def key(request: Request) -> str:
    """One string per request up to the body's key order and int/float spelling."""
    return f"{request.method} {request.path} {canonical(request.body)}"


def first_difference(recorded: Any, sent: Any) -> str:
    """Where `sent` first differs from `recorded`, as a reader names it: `messages[0].content changed`,
    `tools[2] is new`, `temperature is gone`, `model changed`; "the body changed" at the top."""
    found = differences(recorded, sent, limit=1)
    return found[0] if found else "no difference"


def differences(recorded: Any, sent: Any, *, limit: int = _DIFF_CAP) -> list[str]:
    out: list[str] = []
    _walk(recorded, sent, "", out, limit)
    return out


def _walk(a: Any, b: Any, at: str, out: list[str], limit: int) -> None:
    if len(out) >= limit:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            where = f"{at}.{k}" if at else str(k)
            if k not in b:
                out.append(f"{where} is gone")
            elif k not in a:
                out.append(f"{where} is new")
            else:
                _walk(a[k], b[k], where, out, limit)
            if len(out) >= limit:
                return
        return
    if isinstance(a, list) and isinstance(b, list):
        for i in range(max(len(a), len(b))):
            where = f"{at}[{i}]"
            if i >= len(b):
                out.append(f"{where} is gone")
            elif i >= len(a):
                out.append(f"{where} is new")
            else:
                _walk(a[i], b[i], where, out, limit)
            if len(out) >= limit:
                return
        return
    if canonical(a) != canonical(b):
        out.append(f"{at or 'the body'} changed")


def nearest(sent: Request, recorded: Iterable[Request]) -> tuple[Request, list[str]] | None:
    """The recorded request most like `sent` (same method and path, fewest differences; the first of equals),
    with its differences; None when none has the method and path."""
    best: tuple[Request, list[str]] | None = None
    for r in recorded:
        if r.method != sent.method or r.path != sent.path:
            continue
        diff = differences(r.body, sent.body)
        if best is None or len(diff) < len(best[1]):
            best = (r, diff)
    return best
