"""Masking a production trace's personal data before it becomes a case: e-mail addresses, phone numbers and
card numbers (found as the `no_pii` check finds them, `kit.checks.text.find_pii`) and the user's own patterns.

One `Masker` masks everything written for one case (the case, its checks, the trace kept beside it, the tools'
and the model's recordings), so the same value gets the same token everywhere: a check proposed on a masked
argument still matches the masked recording, and the masked case reproduces as the original did. Values are
told apart as a person would: an address case-insensitively, a phone or card number by its digits.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from kit.checks.text import find_pii

KINDS = ("email", "phone", "card")


def _key(kind: str, value: str) -> str:
    if kind == "email":
        return value.casefold()
    if kind in ("phone", "card"):
        return re.sub(r"\D", "", value)
    return value


class Masker:
    """Value -> token, the same token for the same value wherever it occurs. `kinds`: the built-in kinds to
    mask (empty: none); `patterns`: the user's own regular expressions, each match masked as a whole."""

    def __init__(self, kinds: Iterable[str] = KINDS, patterns: Iterable[re.Pattern[str]] = ()) -> None:
        self.kinds = tuple(kinds)
        self.patterns = tuple(patterns)
        self._tokens: dict[tuple[str, str], str] = {}
        self._counts: dict[str, int] = {}

    @property
    def active(self) -> bool:
        return bool(self.kinds or self.patterns)

    @property
    def masked(self) -> dict[str, int]:
        """How many distinct values of each kind were masked."""
        return dict(self._counts)

    def _token(self, kind: str, value: str) -> str:
        k = (kind, _key(kind, value))
        token = self._tokens.get(k)
        if token is None:
            n = self._counts[kind] = self._counts.get(kind, 0) + 1
            token = self._tokens[k] = _TOKENS[kind](n) if kind in _TOKENS else f"masked-{n}"
        return token

    def text(self, s: str) -> str:
        """`s` with every value found replaced by its token."""
        if not self.active or not s:
            return s
        found: list[tuple[str, str]] = []
        if self.kinds:
            found += find_pii(s, self.kinds)
        for p in self.patterns:
            found += [("pattern", m.group(0)) for m in p.finditer(s) if m.group(0)]
        # The longest first: a phone number inside a longer user pattern's match is masked with that match.
        for kind, value in sorted(found, key=lambda kv: -len(kv[1])):
            token = self._token(kind, value)
            flags = re.IGNORECASE if kind == "email" else 0
            s = re.sub(re.escape(value), lambda _m, t=token: t, s, flags=flags)
        return s

    def value(self, v: Any) -> Any:
        """A JSON value with every string in it (keys too) masked."""
        if not self.active:
            return v
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, int) and not isinstance(v, bool) and abs(v) >= 10**6:
            # A card or phone number held as a JSON number: masked as its text would be (the token is text).
            text = str(v)
            masked = self.text(text)
            return v if masked == text else masked
        if isinstance(v, dict):
            return {self.text(k) if isinstance(k, str) else k: self.value(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [self.value(x) for x in v]
        return v


# Tokens that keep the value's shape (a tool whose schema wants an address still gets one) and name nobody:
# `.invalid` is reserved (RFC 2606), 555-01xx numbers are fictional, and the card number fails the Luhn check.
_TOKENS = {
    "email": lambda n: f"user-{n}@example.invalid",
    "phone": lambda n: f"+1-555-01{n:02d}" if n < 100 else f"+1-555-{n:04d}",
    "card": lambda n: f"0000-0000-0000-{n:04d}",
}
