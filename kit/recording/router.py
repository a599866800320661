"""The one object vcrpy's stubs (httpx, requests/urllib3, http.client, aiohttp) talk to in place of a cassette:
it sends each request to the tape of the attempt that made it (`kit.recording.tape.current`).

vcrpy's `CassettePatcherBuilder` builds the stubs over any object with the cassette's interface; the stubs ask
`can_play_response_for` (answer from the tape), then `play_response`, else send the request and `append` what
came back. vcrpy's own cassette storage and matching are not used: the kit's are (format, match).

A replayed request with no recording is answered 400 with `x-should-retry: false` (no SDK retries it into a
hang) and noted on the tape, so the attempt is an error whatever the agent does with the exception. A request
no attempt made is refused in replay (nothing can say whose recording it is) and passes, unrecorded, in record:
it belongs to no case (a process-wide client warming up, say), and a replay of it would be refused by name.
"""

from __future__ import annotations

import contextlib
from typing import Any

from kit.recording.match import request_of
from kit.recording.tape import current
from kit.recording.wire import kept, played, refusal

OUTSIDE = "a model call outside any case's attempt, while replaying recordings: nothing says whose it is"


def _request(vcr_request: Any) -> Any:
    body = vcr_request.body
    if body is not None and not isinstance(body, bytes | str):
        body = getattr(vcr_request, "body_bytes", None)
    return request_of(vcr_request.method, vcr_request.uri, body)


class Router:
    """The cassette interface vcrpy's stubs call, over the current attempt's tape. `replaying`: a request made
    outside any attempt is refused (replay), else it passes unrecorded."""

    _path = "kit-recordings"  # vcrpy names its stub classes after a cassette's path
    custom_patches: tuple[Any, ...] = ()
    allow_playback_repeats = False
    write_protected = False  # a request this router does not answer may always be sent (record mode)

    def __init__(self, replaying: bool) -> None:
        self.replaying = replaying

    def can_play_response_for(self, vcr_request: Any) -> bool:
        tape = current.get()
        return self.replaying if tape is None else tape.mode == "replay"

    def play_response(self, vcr_request: Any) -> dict[str, Any]:
        tape = current.get()
        if tape is None:
            return refusal(400, f"kit recordings: {OUTSIDE} ({vcr_request.method} {vcr_request.uri})")
        answer = tape.answer(_request(vcr_request))
        if answer is None:
            return refusal(400, "kit recordings: no recorded answer: " + tape.misses[-1])
        return played(answer)

    def filter_request(self, vcr_request: Any) -> Any:
        return vcr_request

    def append(self, vcr_request: Any, vcr_response: Any) -> None:
        tape = current.get()
        if tape is not None and tape.mode == "record":
            tape.keep(_request(vcr_request), kept(vcr_response))

    def find_requests_with_most_matches(self, vcr_request: Any) -> list[Any]:
        return []  # aiohttp's redirect replay asks; a model call is not redirected


class Patched:
    """vcrpy's stubs installed over a Router in this process (once; `remove` takes them out again)."""

    def __init__(self, router: Router) -> None:
        from vcr.patch import CassettePatcherBuilder  # vcrpy is imported only where a mode other than live runs

        self.router = router
        self._stack = contextlib.ExitStack()
        for patcher in CassettePatcherBuilder(router).build():
            self._stack.enter_context(patcher)

    def remove(self) -> None:
        self._stack.close()
