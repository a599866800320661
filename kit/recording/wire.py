"""A response between vcrpy's stubs and the recording's format: what a server sent, as the file keeps it
(`kept`), and a recorded response as the stubs play it (`played`).

A compressed body is stored decompressed (the `content-encoding` is not kept); a JSON body as parsed JSON; a
server-sent event stream as its list of events, each with its blank line, so a diff shows one event a line
and the joined events are the bytes the server sent.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

from kit.recording.format import RESPONSE_HEADERS, Response


def _headers(raw: Mapping[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in raw.items():
        lower = str(name).lower()
        if lower in RESPONSE_HEADERS and lower not in out:
            out[lower] = str(value[0] if isinstance(value, list | tuple) and value else value)
    return out


def _encoding(raw: Mapping[str, Any]) -> str:
    for name, value in raw.items():
        if str(name).lower() == "content-encoding":
            return str(value[0] if isinstance(value, list | tuple) and value else value).strip().lower()
    return ""


def _decoded(data: bytes, encoding: str) -> bytes:
    """The body without its content coding. A body already decoded by the client (urllib3 decodes `data`
    while the header still names the coding) is taken as it is."""
    try:
        if encoding == "gzip" or data[:2] == b"\x1f\x8b":
            return gzip.decompress(data)
        if encoding == "deflate":
            return zlib.decompress(data)
        if encoding == "br":
            import brotli  # type: ignore[import-not-found]  # only a server that sent brotli needs it

            return bytes(brotli.decompress(data))
    except (OSError, zlib.error, EOFError, ValueError):
        return data
    return data


def events(text: str) -> list[str]:
    """A server-sent event stream's events, each with the blank line that ends it (the last as sent)."""
    normal = text.replace("\r\n", "\n")
    pieces = normal.split("\n\n")
    out = [p + "\n\n" for p in pieces[:-1]]
    if pieces[-1]:
        out.append(pieces[-1])
    return out


def kept(vcr_response: Mapping[str, Any]) -> Response:
    """What a server sent (vcrpy's response dict: status, headers, body string) as the recording keeps it."""
    raw_headers = vcr_response.get("headers") or {}
    body = (vcr_response.get("body") or {}).get("string") or b""
    if isinstance(body, str):
        body = body.encode()
    data = _decoded(bytes(body), _encoding(raw_headers))
    headers = _headers(raw_headers)
    status = int(vcr_response["status"]["code"])
    kind = headers.get("content-type", "").split(";")[0].strip().lower()
    if not data:
        return Response(status=status, headers=headers)
    text = data.decode("utf-8", errors="replace")
    if kind == "text/event-stream":
        return Response(status=status, headers=headers, text=events(text))
    if kind.endswith("json"):
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        if parsed is not None:
            return Response(status=status, headers=headers, body=parsed)
    return Response(status=status, headers=headers, text=text)


def played(response: Response) -> dict[str, Any]:
    """A recorded response as vcrpy's stubs play it (a fresh dict: a stub edits the headers it is given)."""
    content = response.content()
    headers = {name: [value] for name, value in response.headers.items()}
    headers["content-length"] = [str(len(content))]
    try:
        message = HTTPStatus(response.status).phrase
    except ValueError:
        message = ""
    return {"status": {"code": response.status, "message": message}, "headers": headers, "body": {"string": content}}


def refusal(status: int, message: str) -> dict[str, Any]:
    """A response the SDK raises on at once and does not retry (`x-should-retry: false`, which the openai and
    anthropic SDKs honour; a 400 is retried by none): what a replayed request without a recording gets."""
    body = {"type": "error", "error": {"type": "kit_recording_miss", "message": message, "code": "recording_miss"}}
    return played(
        Response(status=status, headers={"content-type": "application/json", "x-should-retry": "false"}, body=body)
    )
