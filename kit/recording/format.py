"""A model-call recording on disk: one JSON file per case, the contract other tools write too (docs/CONTRACT.md).

    <folder>/<case id>.json          (a `/` in the id makes a subfolder)
    {"format": 1,
     "case": "refund/late",
     "model": "gpt-4o-2024-08-06",                     # the pinned model id it was recorded under, or null
     "attempts": {"0": [{"request":  {"method": "POST", "path": "/v1/chat/completions", "body": {...}},
                         "response": {"status": 200, "headers": {"content-type": "application/json"},
                                      "body": {...}}},                  # parsed JSON, or
                        {"request": {...},
                         "response": {"status": 200, "headers": {"content-type": "text/event-stream"},
                                      "text": ["data: {...}\\n\\n", "data: [DONE]\\n\\n"]}}],  # text, or its events
                  "1": [...]}}

Attempt i of the case replays attempt i's list; within it the k-th identical request (method, path, canonical
body) gets the k-th recorded answer. `text` is the body as text: one string, or a list of pieces (a stream's
events) joined on replay. The file is written pretty-printed with sorted keys, so a pull request's diff reads.
No header but a few the SDKs need (`RESPONSE_HEADERS`) is kept, and no request header at all: keys never reach
a file. A file of another shape is refused by name (`KitInputError`), never read as "no calls".
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, model_validator

from kit.errors import KitInputError, first_error
from kit.names import file_in

FORMAT = 1
SUFFIX = ".json"
# Response headers worth keeping: what the body is, and whether the SDK may retry it. A `retry-after` is
# dropped on purpose: a replay has nobody to wait for.
RESPONSE_HEADERS = ("content-type", "x-should-retry")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Request(_Strict):
    """What the SDK sent: the method, the path (with any query, secrets taken out), the body (parsed JSON, else
    the text, else null)."""

    method: Annotated[str, StringConstraints(min_length=1)]
    path: Annotated[str, StringConstraints(pattern=r"^/")]
    body: Any = None


class Response(_Strict):
    """What the server answered: the status, the kept headers, and the body as parsed JSON (`body`) or as text
    (`text`: a string, or a list of pieces joined on replay, a stream's events); never both."""

    status: int = Field(ge=100, le=599)
    headers: dict[str, str] = Field(default_factory=dict)
    body: Any = None
    text: str | list[str] | None = None

    @model_validator(mode="after")
    def _one_body(self) -> Response:
        if self.body is not None and self.text is not None:
            raise ValueError("a response has `body` (JSON) or `text`, not both")
        return self

    def content(self) -> bytes:
        """The body's bytes as the SDK reads them."""
        if self.text is not None:
            return ("".join(self.text) if isinstance(self.text, list) else self.text).encode()
        if self.body is None:
            return b""
        return json.dumps(self.body, ensure_ascii=False, separators=(",", ":")).encode()


class Exchange(_Strict):
    request: Request
    response: Response


class Recording(_Strict):
    """One case's recorded model calls, by attempt ("0", "1", ...)."""

    format: Literal[1] = FORMAT
    case: Annotated[str, StringConstraints(min_length=1)]
    model: str | None = None
    attempts: dict[Annotated[str, StringConstraints(pattern=r"^(0|[1-9][0-9]{0,5})$")], list[Exchange]] = Field(
        default_factory=dict
    )

    def attempt(self, attempt: int) -> list[Exchange] | None:
        """Attempt `attempt`'s exchanges, None when that attempt was never recorded."""
        return self.attempts.get(str(attempt))

    def with_attempt(self, attempt: int, exchanges: list[Exchange], model: str | None) -> Recording:
        """This recording with `attempt` (re)recorded under `model`."""
        attempts = dict(self.attempts)
        attempts[str(attempt)] = list(exchanges)
        return Recording(case=self.case, model=model, attempts=attempts)


def path_for(folder: Path, case_id: str) -> Path:
    """`<folder>/<case id>.json`; a KitInputError for an id that cannot name a file inside the folder."""
    try:
        return _path_for(str(folder), case_id)
    except ValueError as e:
        raise KitInputError(f"case '{case_id}': no recording file: {e}", file=str(folder)) from None


@functools.lru_cache(maxsize=4096)
def _path_for(folder: str, case_id: str) -> Path:
    # Every attempt of a replay looks its file up: the path is checked (resolved) once per process.
    return file_in(Path(folder), case_id, SUFFIX)


def to_text(recording: Recording) -> str:
    """The file's text: pretty-printed, keys sorted, one trailing newline (readable in a diff)."""
    doc = recording.model_dump(mode="json", exclude_none=False)
    for exchanges in doc["attempts"].values():
        for ex in exchanges:
            response = ex["response"]
            for field in ("body", "text"):
                if response[field] is None:
                    del response[field]
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def parse(text: str | bytes, *, file: str, case_id: str | None = None) -> Recording:
    """A recording from a file's text; a KitInputError naming the file (and the field) for anything else."""
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise KitInputError(f"not a model-call recording (not JSON: {e})", file=file) from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise KitInputError(f"not a model-call recording of format {FORMAT} (format: {got!r})", file=file)
    try:
        recording = Recording.model_validate(doc)
    except ValidationError as exc:
        field, msg, _ = first_error(exc)
        raise KitInputError(f"recording: {field}: {msg}", file=file) from None
    if case_id is not None and recording.case != case_id:
        raise KitInputError(f"the recording is case '{recording.case}', but its file names case '{case_id}'", file=file)
    return recording


def read(folder: Path, case_id: str) -> Recording | None:
    """The case's recording in `folder`, None when it has none."""
    path = path_for(folder, case_id)
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise KitInputError(f"cannot read: {e.strerror or e}", file=str(path)) from None
    return parse(text, file=str(path), case_id=case_id)


def write(folder: Path, recording: Recording) -> Path:
    """Write the case's recording atomically (a temporary file, then a rename) and return its path. Callers
    that may write the same case at once merge under `kit.recording.files.locked`."""
    path = path_for(folder, recording.case)
    text = to_text(recording)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{id(recording)}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as e:
        raise KitInputError(f"cannot write the recording: {e.strerror or e}", file=str(path)) from None
    return path


def case_ids(folder: Path) -> Iterator[tuple[str, Path]]:
    """Every recording file under `folder` as (case id by its path, path)."""
    root = Path(folder)
    if not root.is_dir():
        return
    for path in sorted(root.rglob(f"*{SUFFIX}")):
        if any(part.startswith(".") for part in path.relative_to(root).parts):
            continue  # the folder's own state (.kit/), a temporary file
        yield path.relative_to(root).as_posix().removesuffix(SUFFIX), path
