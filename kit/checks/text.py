"""Text helpers for output checks: normalising, reading numbers, finding PII."""

from __future__ import annotations

import re
from bisect import bisect_right
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
# Where an email can start: a run of local-part characters that ends in "@", taken from the run's first
# character (the lookbehind), so each run is read once. Searching `_EMAIL` from every position instead reads
# a long run without "@" once per position: quadratic (a 200 KB answer took minutes).
_LOCAL_RUN = re.compile(r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@")
_CARD = re.compile(r"(?<!\d)(?:\d[ -]?){12,18}\d(?!\d)")
_PHONE = re.compile(r"(?<![\w])(?:\+\d{1,3}[ .-]?)?(?:\(\d{3}\)|\d{3})[ .-]?\d{3}[ .-]?\d{4}(?!\d)")
_SSN = re.compile(r"(?<!\d)\d{3}-\d{2}-\d{4}(?!\d)")
_NON_DIGIT = re.compile(r"\D")


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


def emails(text: str) -> list[str]:
    """The same matches, in the same order, as `_EMAIL.finditer(text)`, in linear time.

    A match's local part cannot hold "@", so it starts in the run of local-part characters just before an
    "@", at the run's first character or, right after the previous match, where that match ended. Whether
    the match succeeds depends only on what follows the "@", so trying that one start per "@" finds what
    trying every position finds."""
    out: list[str] = []
    resume = 0
    for run in _LOCAL_RUN.finditer(text):
        at = run.end() - 1
        start = max(run.start(), resume)
        if start >= at:
            continue
        m = _EMAIL.match(text, start)
        if m is not None:
            out.append(m.group(0))
            resume = m.end()
    return out


def find_pii(text: str, kinds: Iterable[str], allow: Iterable[str] = ()) -> list[tuple[str, str]]:
    """(kind, value) for every PII value in `text`, except the allowed literals (case-insensitive).
    Linear in the length of the text: every pattern is of bounded length or read once per run."""
    allowed = {a.casefold() for a in allow}
    kinds = set(kinds)
    found: list[tuple[str, str]] = []
    card_starts: list[int] = []
    card_ends: list[int] = []
    if "card" in kinds:
        for m in _CARD.finditer(text):
            digits = _NON_DIGIT.sub("", m.group(0))
            if 13 <= len(digits) <= 19 and luhn_ok(digits):
                card_starts.append(m.start())
                card_ends.append(m.end())
                found.append(("card", m.group(0)))
    if "email" in kinds:
        found += [("email", e) for e in emails(text)]
    if "ssn" in kinds:
        found += [("ssn", m.group(0)) for m in _SSN.finditer(text)]
    if "phone" in kinds:
        for m in _PHONE.finditer(text):
            # A card number's digits are not also a phone number. Card matches do not overlap and come in
            # order, so the only card that can hold this start is the last one starting at or before it.
            i = bisect_right(card_starts, m.start()) - 1
            if (i < 0 or m.start() >= card_ends[i]) and not _SSN.fullmatch(m.group(0)):
                found.append(("phone", m.group(0)))
    return [(k, v) for k, v in found if v.casefold() not in allowed]
