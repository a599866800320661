"""Text helpers for output checks: normalising, reading numbers, finding PII."""

from __future__ import annotations

import re
from collections.abc import Iterable

_WS = re.compile(r"\s+")


def normalise_text(s: str) -> str:
    """Trim, casefold, and collapse runs of white space to one space (the contract's normalising)."""
    return _WS.sub(" ", s).strip().casefold()


def short(s: str, n: int = 80) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


# A number as people write it: optional sign and currency, thousands separators, decimals, exponent.
_NUMBER = re.compile(r"(?<![\w.])[-+]?[$€£]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w])")
# Tokens that look numeric but are identifiers (ORD-123456, C001): a letter-digit run is not a number.
_ID = re.compile(r"\b[A-Za-z]+[-_]?\d[\w-]*")


def numbers_in(s: str) -> list[float]:
    """Every number in a text, `$1,234.50` read as 1234.5; digits inside identifiers are not numbers."""
    s = _ID.sub(" ", s)
    out = []
    for m in _NUMBER.finditer(s):
        tok = m.group(0).replace(",", "")
        tok = re.sub(r"[$€£]", "", tok)
        try:
            out.append(float(tok))
        except ValueError:
            continue
    return out


_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
_CARD = re.compile(r"(?<!\d)(?:\d[ -]?){12,18}\d(?!\d)")
_PHONE = re.compile(r"(?<![\w])(?:\+\d{1,3}[ .-]?)?(?:\(\d{3}\)|\d{3})[ .-]?\d{3}[ .-]?\d{4}(?!\d)")
_SSN = re.compile(r"(?<!\d)\d{3}-\d{2}-\d{4}(?!\d)")


def luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def find_pii(text: str, kinds: Iterable[str], allow: Iterable[str] = ()) -> list[tuple[str, str]]:
    """(kind, value) for every PII value in `text`, except the allowed literals (case-insensitive)."""
    allowed = {a.casefold() for a in allow}
    kinds = set(kinds)
    found: list[tuple[str, str]] = []
    card_spans: list[tuple[int, int]] = []
    if "card" in kinds:
        for m in _CARD.finditer(text):
            digits = re.sub(r"\D", "", m.group(0))
            if 13 <= len(digits) <= 19 and luhn_ok(digits):
                card_spans.append(m.span())
                found.append(("card", m.group(0)))
    if "email" in kinds:
        found += [("email", m.group(0)) for m in _EMAIL.finditer(text)]
    if "ssn" in kinds:
        found += [("ssn", m.group(0)) for m in _SSN.finditer(text)]
    if "phone" in kinds:
        for m in _PHONE.finditer(text):
            # A card number's digits are not also a phone number.
            if not any(a <= m.start() < b for a, b in card_spans) and not _SSN.fullmatch(m.group(0)):
                found.append(("phone", m.group(0)))
    return [(k, v) for k, v in found if v.casefold() not in allowed]
