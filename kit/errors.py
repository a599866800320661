"""The one error type for bad input: it names the file, the case and the check."""

from __future__ import annotations

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


def first_error(e: Any) -> tuple[str, str, str]:
    """(dotted location, message, error type) of a pydantic ValidationError's first error, for one-line
    messages that name the field."""
    err = e.errors()[0]
    return ".".join(str(p) for p in err["loc"]), err["msg"], err["type"]
