"""The case's own fields from a trace: the user's turns (`input` for one, `turns` for a conversation), its
context, and an id derived from the trace that no case of the suite has."""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

from kit.errors import KitInputError
from kit.names import name_problem
from kit.trace import Trace


def _text(content: Any) -> str | None:
    """A message's text: a string, or the text parts of a content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        return "\n".join(parts) if parts else None
    return None


def user_turns(trace: Trace) -> list[str]:
    """The user's messages, one text per turn (several messages of one turn joined by a line break). A
    trace without turn numbers whose user spoke several times is a conversation of that many turns."""
    by_turn: dict[int, list[str]] = {}
    for n, s in enumerate(s for s in trace.spans if s.kind == "message" and s.role == "user"):
        text = _text(s.content)
        if text is None:
            raise KitInputError(
                f"user message {n + 1} holds no text (content {type(s.content).__name__}): it cannot be a case's input",
                case=trace.case_id,
            )
        by_turn.setdefault(s.turn if s.turn is not None else n, []).append(text)
    if not by_turn:
        raise KitInputError("the trace holds no user message: there is no input to replay", case=trace.case_id)
    return ["\n".join(texts) for _, texts in sorted(by_turn.items())]


def slug(text: str) -> str:
    s = re.sub(r"[^A-Za-z0-9._/-]+", "-", text).strip("-./")
    s = re.sub(r"/+", "/", s)
    return "/".join(p.strip(".-") or "x" for p in s.split("/"))[:80] or "from-trace"


def case_id(trace: Trace, taken: Collection[str], *, wanted: str | None = None) -> str:
    """`wanted` (refused if taken or no file name), else the trace's case id made a file name, with `-2`,
    `-3`, ... until no case of the suite has it."""
    if wanted is not None:
        problem = name_problem(wanted)
        if problem is not None:
            raise KitInputError(f"--id {wanted!r}: a case id {problem}")
        if wanted in taken:
            raise KitInputError(f"--id {wanted!r}: the suite already has a case with this id (choose another)")
        return wanted
    base = slug(trace.case_id)
    found, n = base, 1
    while found in taken:
        n += 1
        found = f"{base}-{n}"
    return found


def context_of(trace: Trace, case_context: dict[str, Any] | None) -> dict[str, Any]:
    """The trace's own `context` (an extra field the agent returned), else the stored case's."""
    own = (trace.model_extra or {}).get("context")
    if isinstance(own, dict):
        return dict(own)
    return dict(case_context or {})
