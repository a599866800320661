"""One attempt's model calls while it runs: answered from its recording (replay) or kept as they happen
(record), and every miss noted, whatever the agent's code does with the error it was answered.

The current attempt is a context variable (`current`), set around the agent's call by `kit.runner.invoke`,
so the calls of attempts running at once in threads or tasks each reach their own tape.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Literal

from kit.recording.format import Exchange, Request, Response
from kit.recording.match import first_difference, key, nearest

Mode = Literal["record", "replay"]


@dataclass
class Tape:
    """Attempt `attempt` of case `case_id`, in `mode`. `recorded`: the attempt's recorded exchanges (replay);
    `refused`: why nothing of this case may be replayed (a recording of another model, an unreadable file)."""

    case_id: str
    attempt: int
    mode: Mode
    recorded: list[Exchange] | None = None
    refused: str | None = None
    source: str = ""  # the recording's file, for messages
    model: str | None = None  # the model id pinned for these calls, written with what is recorded
    kept: list[Exchange] = field(default_factory=list)  # what this attempt got (record)
    misses: list[str] = field(default_factory=list)
    replayed: int = 0  # answers played from the recording
    _answers: dict[str, list[Response]] = field(default_factory=dict)
    _served: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._answers = _answers(self.recorded) if self.recorded else {}

    @property
    def where(self) -> str:
        return f"case '{self.case_id}' attempt {self.attempt}"

    def answer(self, request: Request) -> Response | None:
        """The recorded answer to the request (the k-th for its k-th asking), else None with the miss noted."""
        k = key(request)
        with self._lock:
            if self.refused is not None:
                self.misses.append(self.refused)
                return None
            answers = self._answers.get(k)
            n = self._served[k]
            if answers is not None and n < len(answers):
                self._served[k] = n + 1
                self.replayed += 1
                return answers[n]
            self.misses.append(self._miss(request, answers))
            return None

    def _miss(self, request: Request, answers: list[Response] | None) -> str:
        what = f"{request.method} {request.path}"
        if answers is not None:
            return f"{self.where}: {what}: asked {len(answers) + 1} times, recorded {len(answers)} time(s)"
        if self.recorded is None:
            return f"{self.where}: {what}: no recording of this attempt ({self.source or 'no file'})"
        found = nearest(request, (ex.request for ex in self.recorded))
        if found is None:
            return f"{self.where}: {what}: the attempt's recording has no {what}"
        ordinal = next(i for i, ex in enumerate(self.recorded) if ex.request is found[0])
        why = found[1][0] if found[1] else first_difference(found[0].body, request.body)
        return f"{self.where}: {what}: {why} (nearest: recorded call {ordinal + 1} of {len(self.recorded)})"

    def keep(self, request: Request, response: Response) -> None:
        with self._lock:
            self.kept.append(Exchange(request=request, response=response))


_ANSWERS: dict[int, tuple[list[Exchange], dict[str, list[Response]]]] = {}
_ANSWERS_LOCK = threading.Lock()


def _answers(recorded: list[Exchange]) -> dict[str, list[Response]]:
    """An attempt's recorded answers by request key, made once per recording read (a replayed suite opens each
    attempt's tape anew per call; the parsed file is cached, so its lists are the same objects). Read only: a
    tape counts what it served on its own."""
    with _ANSWERS_LOCK:
        found = _ANSWERS.get(id(recorded))
        if found is not None and found[0] is recorded:
            return found[1]
    answers: dict[str, list[Response]] = defaultdict(list)
    for ex in recorded:
        answers[key(ex.request)].append(ex.response)
    made = dict(answers)
    with _ANSWERS_LOCK:
        if len(_ANSWERS) > 4096:
            _ANSWERS.clear()
        _ANSWERS[id(recorded)] = (recorded, made)  # the list kept alive with it: its id is not reused meanwhile
    return made


current: ContextVar[Tape | None] = ContextVar("kit_recording_tape", default=None)
