"""The one error type for bad input: it names the file, the case and the check. And the one place that
turns a pydantic ValidationError into words, so every front end phrases a bad field the same way."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class KitInputError(Exception):
    """Bad input (a trace, a case, a check's parameters). Rendered as one line, never a traceback."""

    def __init__(
        self, message: str, *, file: str | None = None, case: str | None = None, check: str | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.case = case
        self.check = check

    def __str__(self) -> str:
        where = []
        if self.file:
            where.append(str(self.file))
        if self.case:
            where.append(f"case {self.case!r}")
        if self.check:
            where.append(f"check {self.check}")
        return (": ".join(where) + ": " if where else "") + self.message


@dataclass(frozen=True, slots=True)
class FieldError:
    """One error of a pydantic ValidationError."""

    loc: tuple[Any, ...]
    msg: str  # pydantic's message, as pydantic wrote it
    type: str

    @property
    def where(self) -> str:
        return ".".join(str(p) for p in self.loc)

    @property
    def text(self) -> str:
        """The message without pydantic's "Value error, " prefix (a validator's own words)."""
        return self.msg.removeprefix("Value error, ")


def field_errors(e: Any) -> list[FieldError]:
    """Every error of a pydantic ValidationError, in pydantic's order."""
    return [FieldError(tuple(err["loc"]), str(err["msg"]), str(err["type"])) for err in e.errors()]


def first_error(e: Any) -> tuple[str, str, str]:
    """(dotted location, message, error type) of a pydantic ValidationError's first error, for one-line
    messages that name the field."""
    err = field_errors(e)[0]
    return err.where, err.msg, err.type


def error_line(e: Any, *, limit: int = 1, root: str = "") -> str:
    """`loc: message` of the first `limit` errors joined by "; ", then "(+N more)". `root` names the
    location of an error about the whole object."""
    errs = field_errors(e)
    parts = []
    for err in errs[:limit]:
        loc = err.where or root
        parts.append(f"{loc}: {err.msg}" if loc else err.msg)
    more = f" (+{len(errs) - limit} more)" if len(errs) > limit else ""
    return "; ".join(parts) + more


def describe_errors(e: Any, noun: str, *, limit: int | None = None) -> str:
    """Every error (or the first `limit`) as `missing NOUN 'x'`, `unknown NOUN 'x'` or `NOUN 'x': message`,
    each said once (a union type reports one error per branch), joined by "; "."""
    parts = []
    for err in field_errors(e)[:limit]:
        loc = err.where
        if err.type == "missing":
            parts.append(f"missing {noun} {loc!r}")
        elif err.type == "extra_forbidden":
            parts.append(f"unknown {noun} {loc!r}")
        else:
            parts.append(f"{noun} {loc!r}: {err.text}" if loc else err.text)
    return "; ".join(dict.fromkeys(parts))
